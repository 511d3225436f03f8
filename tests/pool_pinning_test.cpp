// Jobs run on one given thread: pool::post_to, submit_to, schedule_on,
// this_thread_index and thread_count.
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <functional>
#include <random>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "fjord/block_in_place.hpp"
#include "fjord/join.hpp"
#include "fjord/pool.hpp"
#include "fjord/priority.hpp"
#include "fjord/readiness.hpp"
#include "fjord/shutdown_error.hpp"
#include "fjord/spawn.hpp"
#include "fjord/sync_wait.hpp"
#include "fjord/task.hpp"
#include "support/eventually.hpp"

namespace {

using namespace std::chrono_literals;
using clock_type = std::chrono::steady_clock;

using fjord_test::eventually;

TEST(pinning, threads_are_numbered_from_zero_and_outsiders_have_no_number) {
  fjord::pool p(fjord::pool_options{.workers = 3});
  EXPECT_EQ(p.thread_count(), 3u);
  EXPECT_FALSE(p.this_thread_index().has_value());
  for (std::size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(p.submit_to(i, [&p] { return p.this_thread_index(); }).get(), i);
  }
  // Another pool's worker is no thread of this one.
  fjord::pool other(fjord::pool_options{.workers = 1});
  EXPECT_FALSE(other.call([&p] { return p.this_thread_index(); }).has_value());
}

TEST(pinning, every_job_runs_once_on_its_thread_under_posts_from_many_threads) {
  fjord::pool p(fjord::pool_options{.workers = 2});
  constexpr std::size_t posters = 4;
  constexpr std::size_t per_poster = 5000;
  std::vector<std::atomic<int>> runs(posters * per_poster);
  std::atomic<int> misplaced{0};
  std::vector<std::thread> threads;
  for (std::size_t t = 0; t < posters; ++t) {
    threads.emplace_back([&, t] {
      std::mt19937 rng(static_cast<unsigned>(t) + 1);
      for (std::size_t i = 0; i < per_poster; ++i) {
        const std::size_t target = rng() % 2;
        const std::size_t k = t * per_poster + i;
        auto job = [&, target, k] {
          if (p.this_thread_index() != target) {
            misplaced.fetch_add(1);
          }
          runs[k].fetch_add(1);
        };
        // Mixed with ordinary posts, and from inside the pool too.
        if (i % 3 == 0) {
          p.post([&p, target, job] { p.post_to(target, job); });
        } else {
          p.post_to(target, job);
        }
        if (i % 7 == 0) {
          p.post([] {});
        }
      }
    });
  }
  for (auto& t : threads) {
    t.join();
  }
  p.wait_idle();
  EXPECT_EQ(misplaced.load(), 0);
  for (std::size_t k = 0; k < runs.size(); ++k) {
    ASSERT_EQ(runs[k].load(), 1) << "job " << k;
  }
  // Every inbox drained (total() would not tell: a sum has no depth).
  for (const auto& w : p.stats().workers) {
    EXPECT_EQ(w.queue_depth, 0u);
  }
}

TEST(pinning, a_job_waits_for_its_busy_thread_while_others_idle) {
  fjord::pool p(fjord::pool_options{.workers = 2});
  std::atomic<bool> release{false};
  std::atomic<bool> busy{false};
  p.post_to(0, [&] {
    busy = true;
    while (!release.load()) {
      std::this_thread::sleep_for(100us);
    }
  });
  ASSERT_TRUE(eventually([&] { return busy.load(); }));
  std::atomic<bool> ran{false};
  auto f = p.submit_to(0, [&] {
    ran = true;
    return p.this_thread_index();
  });
  // Thread 1 is idle, yet must not take it.
  std::this_thread::sleep_for(30ms);
  EXPECT_FALSE(ran.load());
  EXPECT_EQ(p.stats().workers[0].queue_depth, 1u);
  release = true;
  EXPECT_EQ(f.get(), 0u);
}

TEST(pinning, a_blocked_thread_runs_its_job_when_it_returns) {
  fjord::pool p(fjord::pool_options{.workers = 1, .max_spare_threads = 2});
  std::atomic<bool> release{false};
  std::atomic<bool> blocked{false};
  p.post_to(0, [&] {
    fjord::block_in_place([&] {
      blocked = true;
      while (!release.load()) {
        std::this_thread::sleep_for(100us);
      }
    });
  });
  ASSERT_TRUE(eventually([&] { return blocked.load(); }));
  // A spare stands in for thread 0 and runs ordinary work; the pinned job
  // waits for thread 0.
  EXPECT_EQ(p.submit([] { return 7; }).get(), 7);
  auto f = p.submit_to(0, [&p] { return p.this_thread_index(); });
  EXPECT_EQ(f.wait_for(20ms), std::future_status::timeout);
  release = true;
  EXPECT_EQ(f.get(), 0u);
}

TEST(pinning, a_retired_thread_comes_back_to_run_its_job) {
  fjord::pool p(fjord::pool_options{.workers = 3});
  p.resize(1);
  ASSERT_TRUE(eventually([&] {
    const auto s = p.stats();
    return s.running_threads == 1 && s.retired_threads == 2;
  }));
  // Which threads retired is the pool's choice: pin to each one in turn.
  for (std::size_t i = 0; i < p.thread_count(); ++i) {
    EXPECT_EQ(p.submit_to(i, [&p] { return p.this_thread_index(); }).get(), i);
  }
  // And the surplus retires again.
  EXPECT_TRUE(eventually([&] {
    const auto s = p.stats();
    return s.running_threads == 1 && s.retired_threads == 2;
  }));
  EXPECT_EQ(p.size(), 1u);
}

TEST(pinning, a_job_pinned_while_paused_waits_for_resume_and_stays_on_its_thread) {
  fjord::pool p(fjord::pool_options{.workers = 2});
  std::atomic<int> misplaced{0};
  std::atomic<int> ran{0};
  for (int round = 0; round < 50; ++round) {
    p.pause();
    for (std::size_t i = 0; i < 40; ++i) {
      const std::size_t target = i % 2;
      p.post_to(target, [&, target] {
        misplaced.fetch_add(p.this_thread_index() == target ? 0 : 1);
        ran.fetch_add(1);
      });
    }
    // Helpers waiting in joins keep stealing while paused.
    p.post([] {
      for (int k = 0; k < 20; ++k) {
        fjord::join([] {}, [] {});
      }
    });
    std::this_thread::sleep_for(round == 0 ? 20ms : 200us);
    if (round == 0) {
      EXPECT_EQ(ran.load(), 0);  // posted after pause() returned
    }
    p.resume();
  }
  p.wait_idle();
  EXPECT_EQ(ran.load(), 50 * 40);
  EXPECT_EQ(misplaced.load(), 0);
}

TEST(pinning, exceptions_reach_the_future_or_the_handler) {
  std::atomic<int> handled{0};
  fjord::pool_options options{.workers = 2};
  options.unhandled_exception_handler = [&handled](std::exception_ptr) { handled.fetch_add(1); };
  fjord::pool p(options);
  auto f = p.submit_to(1, []() -> int { throw std::runtime_error("pinned"); });
  EXPECT_THROW(f.get(), std::runtime_error);
  p.post_to(0, [] { throw std::runtime_error("posted"); });
  p.wait_idle();
  EXPECT_EQ(handled.load(), 1);
}

TEST(pinning, a_thread_the_pool_does_not_have_is_named_in_the_error) {
  fjord::pool p(fjord::pool_options{.workers = 2});
  try {
    p.post_to(2, [] {});
    FAIL() << "no exception";
  } catch (const std::out_of_range& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("no thread 2"), std::string::npos) << what;
    EXPECT_NE(what.find("made 2"), std::string::npos) << what;
  }
  EXPECT_THROW(static_cast<void>(p.submit_to(static_cast<std::size_t>(-1), [] { return 1; })),
               std::out_of_range);
  p.wait_idle();
}

TEST(pinning, a_closed_pool_refuses_and_a_destroyed_one_ran_everything) {
  std::atomic<int> ran{0};
  {
    fjord::pool p(fjord::pool_options{.workers = 2});
    for (int i = 0; i < 1000; ++i) {
      p.post_to(static_cast<std::size_t>(i % 2), [&ran] {
        std::this_thread::sleep_for(std::chrono::microseconds(ran.load() % 3));
        ran.fetch_add(1);
      });
    }
  }
  EXPECT_EQ(ran.load(), 1000);
  fjord::pool p(fjord::pool_options{.workers = 1});
  p.close();
  EXPECT_THROW(p.post_to(0, [] {}), fjord::shutdown_error);
}

TEST(pinning, posts_racing_destruction_run_once_or_throw) {
  for (int round = 0; round < 20; ++round) {
    std::atomic<int> ran{0};
    std::atomic<int> refused{0};
    std::atomic<int> accepted{0};
    auto* p = new fjord::pool(fjord::pool_options{.workers = 2});
    std::thread poster([&] {
      for (int i = 0; i < 2000; ++i) {
        try {
          p->post_to(static_cast<std::size_t>(i % 2), [&ran] { ran.fetch_add(1); });
          accepted.fetch_add(1);
        } catch (const fjord::shutdown_error&) {
          refused.fetch_add(1);
        }
      }
    });
    std::this_thread::sleep_for(std::chrono::microseconds(50 * round));
    p->close();
    poster.join();
    delete p;
    EXPECT_EQ(ran.load(), accepted.load());
    EXPECT_EQ(accepted.load() + refused.load(), 2000);
  }
}

TEST(pinning, a_coroutine_continues_on_the_thread_it_names) {
  fjord::pool p(fjord::pool_options{.workers = 2});
  auto hop = [&p]() -> fjord::task<std::vector<std::size_t>> {
    std::vector<std::size_t> seen;
    for (std::size_t i = 0; i < 10; ++i) {
      co_await p.schedule_on(i % 2);
      seen.push_back(p.this_thread_index().value());
      co_await p.schedule_on(i % 2);  // already there: no suspension
      seen.push_back(p.this_thread_index().value());
    }
    co_return seen;
  };
  const auto seen = fjord::sync_wait(hop());
  ASSERT_EQ(seen.size(), 20u);
  for (std::size_t i = 0; i < seen.size(); ++i) {
    EXPECT_EQ(seen[i], (i / 2) % 2) << i;
  }
  auto bad = [&p]() -> fjord::task<void> { co_await p.schedule_on(5); };
  EXPECT_THROW(fjord::sync_wait(bad()), std::out_of_range);
}

TEST(pinning, a_job_may_pin_work_to_its_own_thread_and_wait_for_it) {
  fjord::pool p(fjord::pool_options{.workers = 2});
  // The waiting worker helps: the job posted to itself runs on top of it.
  const auto index =
      p.submit([&p] {
         const std::size_t self = p.this_thread_index().value();
         return p.submit_to(self, [&p] { return p.this_thread_index().value(); }).get();
       }).get();
  EXPECT_LT(index, 2u);
}

// One lap of a job that posts itself to thread 0 again until told to stop.
struct lap {
  fjord::pool* pool;
  std::atomic<bool>* stop;
  std::atomic<long>* laps;
  void operator()() const {
    laps->fetch_add(1);
    if (!stop->load()) {
      pool->post_to(0, *this);
    }
  }
};

TEST(pinning, a_thread_that_keeps_pinning_work_still_takes_submitted_work) {
  fjord::pool p(fjord::pool_options{.workers = 1});
  std::atomic<bool> stop{false};
  std::atomic<long> laps{0};
  p.post_to(0, lap{&p, &stop, &laps});
  ASSERT_TRUE(eventually([&] { return laps.load() > 1000; }));
  // Its inbox never empties; submitted work of every level still runs.
  auto normal = p.submit([] { return 1; });
  auto low = p.submit(fjord::priority::low, [] { return 2; });
  auto high = p.submit(fjord::priority::high, [] { return 3; });
  EXPECT_EQ(normal.wait_for(10s), std::future_status::ready);
  EXPECT_EQ(low.wait_for(10s), std::future_status::ready);
  EXPECT_EQ(high.wait_for(10s), std::future_status::ready);
  stop = true;
  p.wait_idle();
  EXPECT_EQ(normal.get() + low.get() + high.get(), 6);
}

TEST(pinning, a_thread_waiting_in_a_join_runs_its_pinned_job_there) {
  fjord::pool p(fjord::pool_options{.workers = 2});
  std::atomic<bool> b_started{false};
  std::atomic<bool> released{false};
  std::atomic<std::size_t> ran_on{99};
  auto f = p.submit_to(0, [&] {
    fjord::join(
        [&] {
          // Busy until thread 1 has stolen the other half.
          while (!b_started.load()) {
            std::this_thread::yield();
          }
        },
        [&] {
          b_started = true;
          while (!released.load()) {
            std::this_thread::sleep_for(100us);
          }
        });
  });
  ASSERT_TRUE(eventually([&] { return b_started.load(); }));
  // Thread 0 now waits in the join for thread 1, which waits for this job.
  p.post_to(0, [&] {
    ran_on = p.this_thread_index().value_or(98);
    released = true;
  });
  ASSERT_EQ(f.wait_for(10s), std::future_status::ready);
  EXPECT_EQ(ran_on.load(), 0u);
}

TEST(pinning, a_new_thread_may_pin_work_to_itself_from_its_start_hook) {
  std::atomic<int> ran{0};
  std::atomic<int> posted{0};
  std::atomic<int> refused{0};
  std::atomic<bool> stand_in_posted{false};
  fjord::pool_options options{.workers = 1};
  options.on_thread_start = [&](std::size_t index) {
    // The pool object is published once made: thread 0 may start before.
    if (fjord::pool* self = fjord::current_pool()) {
      try {
        self->post_to(index, [&ran, index] {
          ran.fetch_add(1);
          EXPECT_EQ(fjord::current_pool()->this_thread_index(), index);
        });
        posted.fetch_add(1);
        if (index == 1) {
          stand_in_posted = true;
        }
      } catch (const std::out_of_range&) {
        refused.fetch_add(1);
      }
    }
  };
  fjord::pool p(options);
  std::atomic<bool> done{false};
  p.post([&done] {
    fjord::block_in_place([&done] {
      while (!done.load()) {
        std::this_thread::sleep_for(100us);
      }
    });
  });
  // Thread 0 is blocked: a stand-in, thread 1, starts and runs this.
  EXPECT_EQ(p.submit([] { return 5; }).get(), 5);
  EXPECT_TRUE(eventually([&] { return stand_in_posted.load() && ran.load() == posted.load(); }));
  EXPECT_EQ(refused.load(), 0);
  done = true;
  p.wait_idle();
  EXPECT_EQ(ran.load(), posted.load());
}

TEST(pinning, a_thread_parked_in_the_reactor_wakes_for_its_job) {
  fjord::pool p(fjord::pool_options{.workers = 2});
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  // A coroutine waits for the pipe: one idle worker parks polling the
  // reactor instead of on its futex.
  auto waiter = [&]() -> fjord::task<fjord::io_status> {
    co_return co_await fjord::readable(fds[0]);
  };
  fjord::spawn(p, waiter());
  ASSERT_TRUE(
      eventually([&] { return fjord::detail::pool_access::core(p).waiting_coroutines() == 1; }));
  std::this_thread::sleep_for(20ms);  // both workers parked by now
  std::atomic<int> ran{0};
  for (std::size_t i = 0; i < 2; ++i) {
    p.post_to(i, [&ran] { ran.fetch_add(1); });
  }
  EXPECT_TRUE(eventually([&] { return ran.load() == 2; }));
  ASSERT_EQ(::write(fds[1], "x", 1), 1);
  p.wait_idle();
  ::close(fds[0]);
  ::close(fds[1]);
}

}  // namespace
