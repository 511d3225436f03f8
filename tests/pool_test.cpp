#include "fjord/pool.hpp"

#include <gtest/gtest.h>

#include <array>
#include <atomic>
#include <chrono>
#include <functional>
#include <latch>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "fjord/channel.hpp"
#include "fjord/join.hpp"
#include "fjord/spawn.hpp"
#include "fjord/task.hpp"
#include "fjord/task_group.hpp"
#include "support/pool_fixture.hpp"
#include "support/throwing_copy.hpp"

namespace {

// Runs on pools of 1, 2 and 4 workers and checks that nothing is left behind.
class pool_on_pools : public fjord_test::pool_fixture {};

using namespace std::chrono_literals;

TEST(pool, available_cpus_is_positive) {
  EXPECT_GE(fjord::available_cpus(), 1u);
}

TEST(pool, default_size_is_available_cpus) {
  fjord::pool p;
  EXPECT_EQ(p.size(), fjord::available_cpus());
}

TEST(pool, bad_options_name_the_value) {
  auto message_of = [](const fjord::pool_options& o) {
    try {
      fjord::pool p(o);
    } catch (const std::invalid_argument& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(message_of({.workers = 0}).find("workers"), std::string::npos);
  EXPECT_NE(message_of({.workers = 0}).find("got 0"), std::string::npos);
  EXPECT_NE(message_of({.workers = 100000}).find("got 100000"), std::string::npos);
  EXPECT_NE(message_of({.spin_budget = std::chrono::microseconds(-5)}).find("got -5us"),
            std::string::npos);
  EXPECT_NE(message_of({.deque_capacity = 100}).find("got 100"), std::string::npos);
  // Used to overflow in the conversion to nanoseconds and be accepted.
  const std::string longest = message_of({.spin_budget = std::chrono::microseconds::max()});
  EXPECT_NE(longest.find("spin_budget"), std::string::npos) << longest;
  EXPECT_NE(longest.find("got " + std::to_string(std::chrono::microseconds::max().count())),
            std::string::npos)
      << longest;
  EXPECT_NE(message_of({.spin_budget = std::chrono::seconds(2)}).find("got 2000000us"),
            std::string::npos);
  EXPECT_EQ(message_of({.workers = 1, .spin_budget = std::chrono::seconds(1)}), "no error");
  EXPECT_NE(message_of({.stack_size = 1000}).find("stack_size"), std::string::npos);
  EXPECT_NE(message_of({.stack_size = 1000}).find("got 1000"), std::string::npos);
  EXPECT_NE(message_of({.max_spare_threads = 5000}).find("max_spare_threads"), std::string::npos);
  EXPECT_NE(message_of({.max_spare_threads = 5000}).find("got 5000"), std::string::npos);
}

TEST(pool, spawn_while_the_pool_is_being_destroyed_throws_shutdown_error) {
  std::latch job_started(1);
  std::atomic<bool> release{false};
  auto p = std::make_unique<fjord::pool>(fjord::pool_options{.workers = 1});
  p->post([&] {
    job_started.count_down();
    while (!release.load()) {
      std::this_thread::sleep_for(1ms);
    }
  });
  job_started.wait();
  fjord::pool* raw = p.get();
  std::thread destroyer([&] { p.reset(); });  // waits for the job
  while (!fjord::detail::pool_access::core(*raw).is_shut_down()) {
    std::this_thread::yield();
  }
  EXPECT_THROW(fjord::spawn(*raw, []() -> fjord::task<void> { co_return; }()),
               fjord::shutdown_error);
  release = true;
  destroyer.join();
}

TEST(pool, post_runs_every_job_before_destruction) {
  std::atomic<int> count{0};
  {
    fjord::pool p(fjord::pool_options{.workers = 2});
    for (int i = 0; i < 10000; ++i) {
      p.post([&] { count.fetch_add(1, std::memory_order_relaxed); });
    }
  }
  EXPECT_EQ(count.load(), 10000);
}

TEST_P(pool_on_pools, post_bulk_runs_every_job) {
  std::atomic<int> count{0};
  std::vector<std::function<void()>> jobs(5000, [&] { count.fetch_add(1); });
  pool().post_bulk(jobs);
  pool().wait_idle();
  EXPECT_EQ(count.load(), 5000);
}

TEST(pool, jobs_posted_by_jobs_during_shutdown_still_run) {
  std::atomic<int> count{0};
  {
    fjord::pool p(fjord::pool_options{.workers = 2});
    for (int i = 0; i < 100; ++i) {
      p.post([&] {
        std::this_thread::sleep_for(100us);
        fjord::pool* self = fjord::current_pool();
        for (int k = 0; k < 10; ++k) {
          self->post([&] { count.fetch_add(1); });
        }
      });
    }
  }
  EXPECT_EQ(count.load(), 1000);
}

TEST(pool, submit_after_shutdown_began_throws) {
  auto p = std::make_unique<fjord::pool>(fjord::pool_options{.workers = 1});
  std::atomic<bool> release{false};
  std::atomic<bool> started{false};
  p->post([&] {
    started = true;
    while (!release.load()) {
      std::this_thread::sleep_for(100us);
    }
  });
  while (!started.load()) {
    std::this_thread::yield();
  }
  fjord::pool* raw = p.get();
  std::thread destroyer([&] { p.reset(); });
  // Submit until the destructor has begun; then it must throw.
  bool threw = false;
  for (int i = 0; i < 100000 && !threw; ++i) {
    try {
      raw->post([] {});
    } catch (const fjord::shutdown_error& e) {
      threw = true;
      EXPECT_NE(std::string(e.what()).find("shutting down"), std::string::npos);
    }
    std::this_thread::sleep_for(10us);
  }
  release = true;
  destroyer.join();
  EXPECT_TRUE(threw);
}

TEST(pool, bulk_posts_refused_at_shutdown_are_freed) {
  // A refused post_bulk frees exactly the jobs it built (ASan checks that
  // nothing beyond the chain's end is read and nothing leaks).
  auto p = std::make_unique<fjord::pool>(fjord::pool_options{.workers = 1});
  std::atomic<bool> refused{false};
  p->post([&] {
    while (!refused.load()) {
      std::this_thread::sleep_for(100us);
    }
  });
  fjord::pool* raw = p.get();
  std::thread destroyer([&] { p.reset(); });
  std::size_t size = 1;
  while (!refused.load()) {
    std::vector<std::function<void()>> batch(size, [] {});
    try {
      raw->post_bulk(batch);
    } catch (const fjord::shutdown_error&) {
      refused = true;
    }
    size = size % 5 + 1;
  }
  destroyer.join();
  SUCCEED();
}

TEST(pool, unhandled_exception_goes_to_the_handler) {
  std::atomic<int> handled{0};
  {
    fjord::pool_options o;
    o.workers = 2;
    o.unhandled_exception_handler = [&](std::exception_ptr e) {
      try {
        std::rethrow_exception(e);
      } catch (const std::runtime_error&) {
        handled.fetch_add(1);
      }
    };
    fjord::pool p(o);
    for (int i = 0; i < 10; ++i) {
      p.post([] { throw std::runtime_error("boom"); });
    }
  }
  EXPECT_EQ(handled.load(), 10);
}

TEST(pool, unhandled_exception_terminates_by_default) {
  EXPECT_DEATH(
      {
        fjord::pool p(fjord::pool_options{.workers = 1});
        p.post([] { throw std::runtime_error("boom in post"); });
      },
      "boom in post");
}

namespace {
long fib_join(int n) {
  if (n < 2) {
    return n;
  }
  auto [a, b] = fjord::join([n] { return fib_join(n - 1); }, [n] { return fib_join(n - 2); });
  return a + b;
}
}  // namespace

// Workers steal shared jobs without registering, and register only for one
// steal from a stalled owner (docs/scheduler.md, "Stalled owners"): a pool
// that stole leaves no owner fencing for a thief that is gone.
TEST(pool, an_idle_pool_holds_no_thief_registration) {
  fjord::pool p(fjord::pool_options{.workers = 2});
  // At least 300 trees, and more until one was stolen from: on a loaded
  // machine the second worker may not get a CPU during the first 300 (CI
  // saw that once).
  for (int i = 0; i < 300 || (p.stats().total().steals == 0 && i < 100'000); ++i) {
    ASSERT_EQ(p.call([] { return fib_join(16); }), 987);
  }
  p.wait_idle();
  // wait_idle returns once every worker is idle in its main loop; each
  // dropped its registration on the way into sleep().
  EXPECT_EQ(fjord::detail::pool_access::core(p).registered_thieves(), 0u);
  EXPECT_GT(p.stats().total().steals, 0u) << "no steal happened: the test proved nothing";
}

// A job that forks children and then runs long without pushing, popping or
// saying that it blocks (here: it waits for its own children) keeps them
// private; another worker must still take them (docs/scheduler.md,
// "Stalled owners"). Before that, the wait would never end.
TEST(pool, a_stalled_owners_private_jobs_are_taken_by_another_worker) {
  fjord::pool p(fjord::pool_options{.workers = 2});
  for (int round = 0; round < 20; ++round) {
    const bool all_ran = p.call([] {
      constexpr int children = 16;
      std::atomic<int> ran{0};
      fjord::task_group g;
      for (int i = 0; i < children; ++i) {
        g.run([&ran] { ran.fetch_add(1, std::memory_order_relaxed); });
      }
      const auto until = std::chrono::steady_clock::now() + 20s;
      while (ran.load(std::memory_order_relaxed) != children &&
             std::chrono::steady_clock::now() < until) {
      }
      const bool ok = ran.load() == children;
      g.wait();
      return ok;
    });
    ASSERT_TRUE(all_ran) << "round " << round;
  }
  p.wait_idle();
  EXPECT_EQ(fjord::detail::pool_access::core(p).registered_thieves(), 0u);
}

TEST_P(pool_on_pools, lvalue_callables_are_copied) {
  std::atomic<int> n{0};
  fjord::pool& p = pool();
  auto bump = [&n] { n.fetch_add(1); };
  p.post(bump);
  auto f = p.submit(bump);
  f.get();
  fjord::task_group g(p);
  g.run(bump);
  g.wait();
  const std::function<void()> fn = bump;
  p.post(fn);
  p.wait_idle();
  EXPECT_EQ(n.load(), 4);
}

TEST_P(pool_on_pools, call_returns_value_and_runs_on_worker) {
  fjord::pool& p = pool();
  EXPECT_EQ(p.call([&] { return p.owns_current_thread() ? 1 : 0; }), 1);
  EXPECT_FALSE(p.owns_current_thread());
  EXPECT_THROW(p.call([]() -> int { throw std::out_of_range("x"); }), std::out_of_range);
}

// As the README says: what call() starts (here a join) runs on that pool.
TEST_P(pool_on_pools, call_runs_the_joins_it_starts_on_that_pool) {
  fjord::pool& p = pool();
  const auto [a, b] = p.call([&] {
    return fjord::join([&] { return p.owns_current_thread(); },
                       [&] { return p.owns_current_thread(); });
  });
  EXPECT_TRUE(a);
  EXPECT_TRUE(b);
}

TEST(pool, call_across_pools) {
  fjord::pool a(fjord::pool_options{.workers = 1});
  fjord::pool b(fjord::pool_options{.workers = 1});
  const int r = a.call([&] { return b.call([&] { return b.owns_current_thread() ? 5 : 0; }); });
  EXPECT_EQ(r, 5);
}

TEST(pool, idle_pool_parks_its_workers) {
  fjord::pool p(fjord::pool_options{.workers = 2, .spin_budget = 10us});
  p.call([] {});
  std::this_thread::sleep_for(50ms);
  const auto before = p.stats().total();
  std::this_thread::sleep_for(50ms);
  const auto after = p.stats().total();
  EXPECT_GE(before.parks, 2u);
  // Nobody woke up while there was no work.
  EXPECT_EQ(after.wakeups, before.wakeups);
}

TEST(pool, counters_count) {
  fjord::pool p(fjord::pool_options{.workers = 2});
  std::atomic<int> ran{0};
  for (int i = 0; i < 100; ++i) {
    p.post([&] { ran.fetch_add(1); });
  }
  p.submit([] {}).get();
  // Posts have no order: wait for them (bounded), not for a fixed time. A
  // job's counter is bumped before it runs, so it shows by then.
  const auto give_up = std::chrono::steady_clock::now() + 60s;
  while (ran.load() < 100 && std::chrono::steady_clock::now() < give_up) {
    std::this_thread::sleep_for(1ms);
  }
  ASSERT_EQ(ran.load(), 100);
  const auto s = p.stats();
  ASSERT_EQ(s.workers.size(), 2u);
  EXPECT_GE(s.total().jobs_run, 101u);
  EXPECT_GE(s.total().injected_taken, 101u);
}

TEST(pool, pools_created_and_destroyed_in_a_loop) {
  for (int i = 0; i < 50; ++i) {
    fjord::pool p(fjord::pool_options{.workers = 1 + static_cast<std::size_t>(i % 3)});
    std::atomic<int> n{0};
    p.post([&] { n.fetch_add(1); });
    if (i % 2 == 0) {
      EXPECT_EQ(p.call([&] { return 1; }), 1);
    }
  }
  SUCCEED();
}

// More outside threads than a pool has submission lanes, all posting at
// once, small callables and large ones: every job runs exactly once, whether
// it went through a lane or the linked queue.
TEST(pool, posts_from_more_threads_than_lanes_run_once) {
  constexpr int threads = 80;
  constexpr int per_thread = 2000;
  std::vector<std::atomic<int>> runs(std::size_t{threads} * per_thread);
  {
    fjord::pool p(fjord::pool_options{.workers = 2});
    std::vector<std::thread> posters;
    for (int t = 0; t < threads; ++t) {
      posters.emplace_back([&, t] {
        for (int i = 0; i < per_thread; ++i) {
          const int k = t * per_thread + i;
          if (i % 4 == 0) {
            // Too big for a lane slot: a heap job, by pointer.
            std::array<char, 64> pad{};
            p.post([&runs, k, pad] { runs[k].fetch_add(1 + pad[0]); });
          } else if (i % 4 == 1) {
            p.submit([&runs, k] { runs[k].fetch_add(1); }).get();
          } else {
            p.post([&runs, k] { runs[k].fetch_add(1); });
          }
        }
      });
    }
    for (auto& t : posters) {
      t.join();
    }
    EXPECT_LE(fjord::detail::pool_access::core(p).lane_count(), std::size_t{64});
  }
  for (auto& r : runs) {
    ASSERT_EQ(r.load(), 1);
  }
}

// Threads that finish leave their lanes to later threads.
TEST(pool, lanes_of_finished_threads_are_reused) {
  std::atomic<int> ran{0};
  {
    fjord::pool p(fjord::pool_options{.workers = 2});
    for (int round = 0; round < 100; ++round) {
      std::thread t([&] {
        for (int i = 0; i < 50; ++i) {
          p.post([&] { ran.fetch_add(1); });
        }
      });
      t.join();
    }
    EXPECT_EQ(fjord::detail::pool_access::core(p).lane_count(), 1u);
  }
  EXPECT_EQ(ran.load(), 100 * 50);
}

// One thread feeding more pools than its lane cache holds, round robin.
TEST(pool, one_thread_posting_to_many_pools) {
  constexpr int pools = 6;
  constexpr int posts = 30000;
  std::vector<std::atomic<int>> ran(pools);
  {
    std::vector<std::unique_ptr<fjord::pool>> ps;
    for (int i = 0; i < pools; ++i) {
      ps.push_back(std::make_unique<fjord::pool>(fjord::pool_options{.workers = 1}));
    }
    for (int i = 0; i < posts; ++i) {
      const int k = i % pools;
      ps[static_cast<std::size_t>(k)]->post(
          [&ran, k] { ran[static_cast<std::size_t>(k)].fetch_add(1); });
    }
  }
  for (auto& r : ran) {
    EXPECT_EQ(r.load(), posts / pools);
  }
}

// A thread keeps its lane to a pool in a thread-local cache: the pool going
// away first (and a new pool, maybe at the same address) must not confuse it,
// nor must the thread's exit, which disowns a lane whose pool is gone.
TEST(pool, lanes_outlive_their_pool_safely) {
  std::atomic<int> ran{0};
  std::thread poster([&] {
    for (int round = 0; round < 20; ++round) {
      auto p = std::make_unique<fjord::pool>(fjord::pool_options{.workers = 1});
      for (int i = 0; i < 100; ++i) {
        p->post([&ran] { ran.fetch_add(1); });
      }
      p->submit([&ran] { ran.fetch_add(1); }).get();
    }  // each pool is destroyed while this thread still caches its lane
  });
  poster.join();
  EXPECT_EQ(ran.load(), 20 * 101);
}

// A callable whose copy throws: the poster gets the exception, the slot it
// had taken is skipped, and later posts run.
TEST_P(pool_on_pools, a_callable_whose_copy_throws_leaves_the_pool_usable) {
  using fjord_test::throwing_copy;
  std::atomic<int> ran{0};
  fjord::pool& p = pool();
  const throwing_copy bad(&ran, true);
  const throwing_copy good(&ran, false);
  for (int i = 0; i < 1000; ++i) {
    EXPECT_THROW(p.post(bad), std::runtime_error);
    p.post(good);
  }
  p.wait_idle();
  EXPECT_EQ(ran.load(), 1000);
}

// A callable whose copy posts to the same pool: the nested post must not
// take the slot the outer one is filling.
TEST_P(pool_on_pools, posting_from_a_callables_copy_constructor) {
  struct posts_when_copied {
    fjord::pool* p;
    std::atomic<int>* ran;
    posts_when_copied(fjord::pool* pool, std::atomic<int>* r) : p(pool), ran(r) {}
    posts_when_copied(const posts_when_copied& o) : p(o.p), ran(o.ran) {
      std::atomic<int>* r = ran;
      p->post([r] { r->fetch_add(100); });
      p->submit([r] { r->fetch_add(10000); }).wait();
    }
    posts_when_copied& operator=(const posts_when_copied&) = delete;
    ~posts_when_copied() = default;
    void operator()() const { ran->fetch_add(1); }
  };
  std::atomic<int> ran{0};
  fjord::pool& p = pool();
  const posts_when_copied c(&p, &ran);
  for (int i = 0; i < 500; ++i) {
    p.post(c);
  }
  p.wait_idle();
  EXPECT_EQ(ran.load(), 500 * 10101);
}

// docs/scheduler.md, "The runnext slot": a coroutine woken by a job that
// then runs on and on is not stuck behind it: another worker takes it from
// the runnext slot once it has waited there a few microseconds.
void expect_a_coroutine_woken_by_a_long_job_to_run_elsewhere(std::size_t workers) {
  fjord::pool p(fjord::pool_options{.workers = workers});
  fjord::channel<int> ch(0);
  std::atomic<bool> resumed{false};
  std::atomic<bool> waiting{false};
  std::latch done(1);
  fjord::spawn(p,
               [](fjord::channel<int> c, std::atomic<bool>& w, std::atomic<bool>& r,
                  std::latch& d) -> fjord::task<void> {
                 w = true;
                 (void)co_await c.receive();
                 r = true;
                 d.count_down();
               }(ch, waiting, resumed, done));
  while (!waiting.load()) {
    std::this_thread::yield();
  }
  std::this_thread::sleep_for(10ms);  // let it queue its receive
  std::atomic<bool> gave_up{false};
  p.post([&] {
    // On a worker: the hand-off puts the receiver in this worker's runnext
    // slot. Then run long (up to 20 s) unless it ran elsewhere meanwhile.
    ASSERT_EQ(ch.try_send(1), fjord::channel_status::ok);
    const auto until = std::chrono::steady_clock::now() + 20s;
    while (!resumed.load()) {
      if (std::chrono::steady_clock::now() > until) {
        gave_up = true;
        return;
      }
    }
  });
  done.wait();
  p.wait_idle();
  EXPECT_FALSE(gave_up.load());
}

TEST(pool, a_coroutine_woken_by_a_long_job_runs_on_another_worker) {
  expect_a_coroutine_woken_by_a_long_job_to_run_elsewhere(2);
}

// In a large pool a thief's 8 search rounds between two looks at the runnext
// slots outlast the grace: its watch must still take the job.
TEST(pool, a_coroutine_woken_by_a_long_job_runs_on_another_worker_of_a_large_pool) {
  expect_a_coroutine_woken_by_a_long_job_to_run_elsewhere(256);
}

TEST(pool, thread_names) {
  fjord::pool p(fjord::pool_options{.workers = 1, .name = "myname"});
  const std::string name = p.submit([] {
                              char buf[32] = {};
                              pthread_getname_np(pthread_self(), buf, sizeof(buf));
                              return std::string(buf);
                            }).get();
  EXPECT_EQ(name, "myname-0");
}

INSTANTIATE_TEST_SUITE_P(workers, pool_on_pools, fjord_test::worker_counts,
                         fjord_test::worker_count_name);

}  // namespace
