// Compensation: a worker that blocks on something other than its own
// pool's fork-join work gives its place to a spare thread, so nothing is
// buried under the wait and nothing deadlocks (docs/scheduler.md,
// "Blocking").

#include "fjord/block_in_place.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <future>
#include <latch>
#include <memory>
#include <thread>
#include <vector>

#include "fjord/async_latch.hpp"
#include "fjord/detail/pool_core.hpp"
#include "fjord/detail/worker_thread.hpp"
#include "fjord/future.hpp"
#include "fjord/join.hpp"
#include "fjord/pool.hpp"
#include "fjord/sleep.hpp"
#include "fjord/spawn.hpp"
#include "fjord/sync_wait.hpp"
#include "fjord/task.hpp"
#include "fjord/task_group.hpp"
#include "support/nested_joins.hpp"

using namespace std::chrono_literals;

namespace {

// Waits (bounded) until pred holds; fails the test with `what` otherwise.
template <class Pred>
void expect_within(std::chrono::seconds limit, Pred pred, const char* what) {
  const auto end = std::chrono::steady_clock::now() + limit;
  while (!pred()) {
    if (std::chrono::steady_clock::now() > end) {
      FAIL() << "timed out: " << what;
    }
    std::this_thread::sleep_for(1ms);
  }
}

}  // namespace

TEST(block_in_place, a_blocked_worker_is_replaced_so_later_jobs_run) {
  // One worker. Job A blocks on a std::latch that only job B (posted after
  // A started) releases: without a stand-in thread, B would never run.
  fjord::pool p(fjord::pool_options{.workers = 1});
  std::latch a_started(1);
  std::latch released(1);
  std::atomic<bool> a_done{false};
  p.post([&] {
    a_started.count_down();
    fjord::block_in_place([&] { released.wait(); });
    a_done = true;
  });
  a_started.wait();
  p.post([&] { released.count_down(); });
  expect_within(
      10s, [&] { return a_done.load(); }, "the blocked job finished");
}

TEST(block_in_place, a_worker_back_from_blocking_leaves_the_phantom_of_one_still_blocked) {
  // One spare: worker 0 blocks first and gets the phantom that promises it;
  // worker 1 blocks next and gets none (the spare is promised). When worker
  // 1 comes back, worker 0 is still blocked: its phantom must stay, so that
  // the job worker 1 then pushes and waits for, computing, gets the spare.
  fjord::pool p(fjord::pool_options{.workers = 2, .callers_join = false, .max_spare_threads = 1});
  std::atomic<bool> first_blocked{false};
  std::atomic<bool> release_first{false};
  std::atomic<bool> job_ran{false};
  std::atomic<bool> taken{false};
  p.post_to(0, [&] {
    fjord::block_in_place([&] {
      first_blocked = true;
      const auto end = std::chrono::steady_clock::now() + 30s;
      while (!release_first.load() && std::chrono::steady_clock::now() < end) {
        std::this_thread::sleep_for(1ms);
      }
    });
  });
  expect_within(
      10s, [&] { return first_blocked.load(); }, "worker 0 blocked");
  p.post_to(1, [&] {
    fjord::block_in_place([] { std::this_thread::sleep_for(20ms); });
    p.post([&] { job_ran = true; });  // onto worker 1's deque
    // Computing, without telling fjord, until the job ran elsewhere.
    const auto end = std::chrono::steady_clock::now() + 10s;
    while (!job_ran.load() && std::chrono::steady_clock::now() < end) {
    }
    taken = job_ran.load();
  });
  expect_within(
      20s, [&] { return job_ran.load(); }, "the pushed job ran");
  release_first = true;
  p.wait_idle();
  EXPECT_TRUE(taken.load()) << "the job waited for its owner's return";
}

namespace {

// Blocks worker `index` of p until `release` (bounded); returns once it blocks.
void block_worker(fjord::pool& p, std::size_t index, const std::atomic<bool>& release,
                  std::atomic<int>& blocked) {
  const int before = blocked.load();
  p.post_to(index, [&] {
    fjord::block_in_place([&] {
      ++blocked;
      const auto end = std::chrono::steady_clock::now() + 30s;
      while (!release.load() && std::chrono::steady_clock::now() < end) {
        std::this_thread::sleep_for(1ms);
      }
    });
  });
  expect_within(
      10s, [&] { return blocked.load() > before; }, "the worker blocked");
}

}  // namespace

TEST(block_in_place, growth_leaves_no_phantom_without_a_stand_in) {
  // Worker 0's phantom counts on the one spare; growing the pool takes it.
  fjord::pool p(fjord::pool_options{.workers = 2, .callers_join = false, .max_spare_threads = 1});
  const auto& core = fjord::detail::pool_access::core(p);
  std::atomic<bool> release{false};
  std::atomic<int> blocked{0};
  block_worker(p, 0, release, blocked);
  EXPECT_EQ(core.phantom_sleepers(), 1u);
  p.resize(3);
  EXPECT_LE(core.phantom_sleepers(), core.stand_ins());
  release = true;
  p.wait_idle();
  EXPECT_EQ(core.phantom_sleepers(), 0u);
}

TEST(block_in_place, a_retired_thread_back_for_pinned_work_leaves_no_phantom_without_a_stand_in) {
  // One spare. A stand-in runs for worker 0; once it is back, a thread
  // retires. Two workers then block, the first with the phantom (counting
  // on the retired thread), the second with none; a job pinned to the
  // retired thread brings it back, so that phantom has nothing to answer it.
  fjord::pool p(fjord::pool_options{.workers = 3, .callers_join = false, .max_spare_threads = 1});
  const auto& core = fjord::detail::pool_access::core(p);
  std::atomic<bool> busy{true};
  for (std::size_t i : {1u, 2u}) {
    p.post_to(i, [&] {
      const auto end = std::chrono::steady_clock::now() + 30s;
      while (busy.load() && std::chrono::steady_clock::now() < end) {
      }
    });
  }
  std::atomic<bool> release_first{false};
  std::atomic<int> blocked{0};
  block_worker(p, 0, release_first, blocked);
  std::atomic<bool> ran{false};
  p.post([&] { ran = true; });  // the phantom's stand-in starts for it
  expect_within(
      10s, [&] { return ran.load(); }, "a stand-in ran the job");
  release_first = true;
  busy = false;
  expect_within(
      10s, [&] { return core.retired_thread_indices().size() == 1; }, "a thread retired");
  const std::size_t retired = core.retired_thread_indices().front();
  std::atomic<bool> release{false};
  for (std::size_t i = 0, n = 0; n < 2; ++i) {
    if (i != retired) {
      block_worker(p, i, release, blocked);
      ++n;
    }
  }
  EXPECT_EQ(core.phantom_sleepers(), 1u);
  std::atomic<bool> pinned_ran{false};
  p.post_to(retired, [&] { pinned_ran = true; });
  expect_within(
      10s, [&] { return pinned_ran.load(); }, "the pinned job ran");
  EXPECT_LE(core.phantom_sleepers(), core.stand_ins());
  release = true;
  p.wait_idle();
}

TEST(block_in_place, returns_the_result_and_does_nothing_special_off_a_pool) {
  EXPECT_EQ(fjord::block_in_place([] { return 7; }), 7);
  fjord::pool p(fjord::pool_options{.workers = 1});
  EXPECT_EQ(p.call([] { return fjord::block_in_place([] { return 8; }); }), 8);
}

TEST(block_in_place, many_jobs_that_sync_wait_a_sleep_do_not_nest_on_one_stack) {
  // Each job blocks in sync_wait on a timer. If the worker helped while
  // waiting, every job would run inside the previous one's wait (20,000
  // frames deep, and never finishing before all were started).
  constexpr int jobs = 20000;
  std::atomic<int> done{0};
  {
    fjord::pool p(fjord::pool_options{.workers = 1});
    for (int i = 0; i < jobs; ++i) {
      p.post([&] {
        fjord::sync_wait([]() -> fjord::task<void> { co_await fjord::sleep_for(1ms); }());
        done.fetch_add(1, std::memory_order_relaxed);
      });
    }
  }
  EXPECT_EQ(done.load(), jobs);
}

TEST(block_in_place, sync_wait_on_a_worker_does_not_run_the_job_it_waits_for_underneath) {
  // One worker. J1 sync_waits work on another pool, then counts a latch
  // down; J2 sync_waits that latch. Were J2 run inside J1's wait, J1 could
  // never resume: a deadlock.
  fjord::pool p(fjord::pool_options{.workers = 1});
  fjord::pool other(fjord::pool_options{.workers = 1});
  fjord::async_latch latch(1);
  std::latch j1_waiting(1);
  std::atomic<bool> j2_done{false};
  p.post([&] {
    fjord::sync_wait([&]() -> fjord::task<void> {
      co_await other.schedule();
      j1_waiting.count_down();
      std::this_thread::sleep_for(20ms);
    }());
    latch.count_down();
  });
  j1_waiting.wait();
  p.post([&] {
    fjord::sync_wait([&]() -> fjord::task<void> { co_await latch.wait(); }());
    j2_done = true;
  });
  expect_within(
      10s, [&] { return j2_done.load(); }, "J2 finished");
}

TEST(block_in_place, joins_nested_across_two_one_worker_pools_finish) {
  fjord::pool a(fjord::pool_options{.workers = 1});
  fjord::pool b(fjord::pool_options{.workers = 1});
  auto f = [] { return 1; };
  auto g = [] { return 2; };
  auto h = [] { return 3; };
  // From a's worker (a caller of a would join a instead).
  const int r = a.submit([&] {
                   return fjord::join(
                              b, [&] { return fjord::join(a, f, g).first; }, h)
                       .first;
                 }).get();
  EXPECT_EQ(r, 1);
}

TEST(block_in_place, submit_and_get_nested_across_pools_finish) {
  fjord::pool a(fjord::pool_options{.workers = 1});
  fjord::pool b(fjord::pool_options{.workers = 1});
  const int r = a.submit([&] {
                   return b.submit([&] { return a.submit([] { return 5; }).get() + 1; }).get();
                 }).get();
  EXPECT_EQ(r, 6);
}

TEST(block_in_place, task_groups_nested_across_pools_finish) {
  fjord::pool a(fjord::pool_options{.workers = 1});
  fjord::pool b(fjord::pool_options{.workers = 1});
  std::atomic<int> ran{0};
  a.submit([&] {
     fjord::task_group on_b(b);
     for (int i = 0; i < 4; ++i) {
       on_b.run([&] {
         fjord::task_group on_a(a);
         for (int k = 0; k < 4; ++k) {
           on_a.run([&] { ran.fetch_add(1); });
         }
         on_a.wait();
       });
     }
     on_b.wait();
   }).get();
  EXPECT_EQ(ran.load(), 16);
}

TEST(block_in_place, every_job_runs_once_while_spares_come_and_go) {
  constexpr int rounds = 200;
  constexpr int per_round = 50;
  std::vector<std::atomic<int>> runs(std::size_t{rounds} * per_round);
  {
    fjord::pool p(fjord::pool_options{.workers = 2});
    std::vector<fjord::future<void>> blockers;
    for (int r = 0; r < rounds; ++r) {
      // A blocking job now and then makes a spare start or return.
      blockers.push_back(
          p.submit([] { fjord::block_in_place([] { std::this_thread::sleep_for(100us); }); }));
      for (int i = 0; i < per_round; ++i) {
        p.post([&runs, k = r * per_round + i] { runs[static_cast<std::size_t>(k)].fetch_add(1); });
      }
    }
    for (auto& f : blockers) {
      f.get();
    }
  }
  for (const auto& n : runs) {
    ASSERT_EQ(n.load(), 1);
  }
}

TEST(block_in_place, nested_joins_use_only_the_stack_they_need) {
  // 100,000 nested joins fit the default worker stack in an optimised
  // build (about 200 bytes a level; the sanitizers' frames are far larger).
#if defined(NDEBUG) && !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)
  constexpr int depth = 100000;
#else
  constexpr int depth = 5000;
#endif
  fjord::pool p(fjord::pool_options{.workers = 1});
  EXPECT_EQ(p.submit([] { return fjord_test::nested_joins(depth); }).get(), depth);
}

TEST(block_in_place, a_worker_stack_overflow_is_reported_as_such) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_DEATH(
      {
        fjord::pool p(fjord::pool_options{.workers = 1, .stack_size = std::size_t{256} * 1024});
        struct deep {
          static int down(int n) {
            volatile char frame[512];
            frame[0] = static_cast<char>(n);
            return n == 0 ? frame[0] : down(n - 1) + frame[0];
          }
        };
        p.submit([] { return deep::down(1 << 30); }).get();
      },
      "stack.overflow");
}

TEST(block_in_place, spares_are_reused_across_blocking_episodes) {
  fjord::pool p(fjord::pool_options{.workers = 1});
  for (int i = 0; i < 50; ++i) {
    p.submit([] { fjord::block_in_place([] { std::this_thread::sleep_for(200us); }); }).get();
  }
  // The worker and one spare, retired and woken again each time.
  EXPECT_LE(p.stats().workers.size(), 2u);
}

TEST(block_in_place, no_spare_threads_when_compensation_is_off) {
  fjord::pool p(fjord::pool_options{.workers = 1, .max_spare_threads = 0});
  std::atomic<int> ran{0};
  p.submit([&] { fjord::block_in_place([&] { ran = 1; }); }).get();
  EXPECT_EQ(ran.load(), 1);
  EXPECT_EQ(p.stats().workers.size(), 1u);
}

TEST(block_in_place, a_worker_deep_in_its_stack_blocks_instead_of_helping) {
  // Two workers with small stacks. Worker X, with more than half its stack
  // in use, joins; the other worker steals the second half and holds it for
  // a while. Posted jobs must then run on a spare, never on X inside its
  // wait (helping would stack them on X's nearly full stack).
  fjord::pool p(fjord::pool_options{.workers = 2, .stack_size = std::size_t{1024} * 1024});
  std::atomic<std::thread::id> waiter{};
  std::atomic<bool> in_wait{false};
  std::atomic<int> ran_inside_wait{0};
  std::atomic<int> posts_ran{0};
  std::atomic<bool> b_started{false};
  struct deep {
    // Recurses until 60% of the worker's stack is in use (frame sizes vary
    // by compiler and sanitizer), then calls at_bottom.
    static int down(const std::function<void()>& at_bottom) {
      volatile char frame[1024];
      frame[0] = 1;
      if (fjord::detail::stack_in_use() * 10 > fjord::detail::stack_size_of_this_thread() * 6) {
        at_bottom();
        return frame[0];
      }
      return down(at_bottom) + frame[0];
    }
  };
  auto f = p.submit([&] {
    static_cast<void>(deep::down([&] {
      waiter = std::this_thread::get_id();
      fjord::join(
          [&] {
            while (!b_started.load()) {
              std::this_thread::yield();
            }
            in_wait = true;
          },
          [&] {
            b_started = true;
            std::this_thread::sleep_for(50ms);
          });
      in_wait = false;
    }));
  });
  while (!in_wait.load() && f.wait_for(0s) != std::future_status::ready) {
    std::this_thread::yield();
  }
  for (int i = 0; i < 100; ++i) {
    p.post([&] {
      if (in_wait.load() && std::this_thread::get_id() == waiter.load()) {
        ran_inside_wait.fetch_add(1);
      }
      posts_ran.fetch_add(1);
    });
  }
  f.get();
  expect_within(
      10s, [&] { return posts_ran.load() == 100; }, "every post ran");
  EXPECT_EQ(ran_inside_wait.load(), 0);
}

TEST(block_in_place, destroying_a_pool_waits_for_a_waiting_coroutine) {
  fjord::async_latch gate(1);
  std::atomic<bool> resumed{false};
  std::atomic<bool> destroyed{false};
  // Named and made before the pool: the coroutine uses its captures.
  auto body = [&]() -> fjord::task<void> {
    co_await gate.wait();
    resumed = true;
  };
  auto p = std::make_unique<fjord::pool>(fjord::pool_options{.workers = 1});
  fjord::spawn(*p, body());
  expect_within(
      10s, [&] { return fjord::detail::pool_access::core(*p).waiting_coroutines() == 1; },
      "the coroutine waiting");
  std::thread destroyer([&] {
    p.reset();
    destroyed = true;
  });
  std::this_thread::sleep_for(30ms);
  EXPECT_FALSE(destroyed.load());  // still waiting for the waiting coroutine
  gate.count_down();               // wakes it from outside, during the drain
  destroyer.join();
  EXPECT_TRUE(resumed.load());
}

TEST(block_in_place, destroying_a_pool_from_a_job_of_another_hands_over_the_worker) {
  // One worker on a. A job on a destroys b, whose last job needs a job of a
  // to run first: a's worker, waiting in ~pool, must let a spare run it.
  fjord::pool a(fjord::pool_options{.workers = 1});
  std::atomic<bool> done{false};
  a.submit([&] {
     auto b = std::make_unique<fjord::pool>(fjord::pool_options{.workers = 1});
     b->post([&] {
       std::atomic<bool> ran_on_a{false};
       a.post([&] { ran_on_a = true; });
       while (!ran_on_a.load()) {
         std::this_thread::yield();
       }
     });
     b.reset();
     done = true;
   }).get();
  EXPECT_TRUE(done.load());
}
