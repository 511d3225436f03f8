// pool::wait_idle, close, pause and resume.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <latch>
#include <stdexcept>
#include <thread>
#include <vector>

#include "fjord/join.hpp"
#include "fjord/pool.hpp"
#include "fjord/shutdown_error.hpp"
#include "fjord/sleep.hpp"
#include "fjord/spawn.hpp"
#include "fjord/task.hpp"

namespace {

using namespace std::chrono_literals;

TEST(wait_idle, returns_at_once_on_an_idle_pool) {
  fjord::pool p(fjord::pool_options{.workers = 2});
  p.wait_idle();
  p.wait_idle();
}

TEST(wait_idle, every_posted_job_has_run_and_the_pool_stays_open) {
  fjord::pool p(fjord::pool_options{.workers = 2});
  std::atomic<int> ran{0};
  for (int round = 1; round <= 3; ++round) {
    for (int i = 0; i < 1000; ++i) {
      p.post([&ran, i] {
        if (i % 100 == 0) {
          std::this_thread::sleep_for(1ms);
        }
        ran.fetch_add(1, std::memory_order_relaxed);
      });
    }
    p.wait_idle();
    EXPECT_EQ(ran.load(), round * 1000);
  }
}

TEST(wait_idle, waits_for_the_jobs_that_jobs_made) {
  fjord::pool p(fjord::pool_options{.workers = 2});
  std::atomic<int> leaves{0};
  // Each job posts two more down to depth 10, and forks as it goes.
  struct spreader {
    fjord::pool* pool;
    std::atomic<int>* leaves;
    int depth;
    void operator()() const {
      if (depth == 0) {
        leaves->fetch_add(1, std::memory_order_relaxed);
        return;
      }
      fjord::join([] {}, [] {});
      pool->post(spreader{pool, leaves, depth - 1});
      pool->post(spreader{pool, leaves, depth - 1});
    }
  };
  p.post(spreader{&p, &leaves, 10});
  p.wait_idle();
  EXPECT_EQ(leaves.load(), 1024);
}

TEST(wait_idle, waits_for_coroutines_parked_on_the_pool) {
  fjord::pool p(fjord::pool_options{.workers = 2});
  std::atomic<int> woke{0};
  auto sleeper = [](std::atomic<int>& w) -> fjord::task<void> {
    co_await fjord::sleep_for(30ms);
    w.fetch_add(1);
  };
  for (int i = 0; i < 4; ++i) {
    fjord::spawn(p, sleeper(woke));
  }
  p.wait_idle();
  EXPECT_EQ(woke.load(), 4);
}

TEST(wait_idle, many_threads_posting_and_waiting_each_see_their_own_jobs_done) {
  fjord::pool p(fjord::pool_options{.workers = 2});
  constexpr int threads = 6;
  constexpr int jobs = 5000;
  std::vector<std::atomic<int>> ran(threads);
  std::atomic<int> total{0};
  std::vector<std::thread> posters;
  std::latch start(threads);
  for (int t = 0; t < threads; ++t) {
    posters.emplace_back([&, t] {
      start.arrive_and_wait();
      for (int round = 0; round < 4; ++round) {
        for (int i = 0; i < jobs / 4; ++i) {
          p.post([&, t] {
            ran[static_cast<std::size_t>(t)].fetch_add(1, std::memory_order_relaxed);
            total.fetch_add(1, std::memory_order_relaxed);
          });
        }
        p.wait_idle();
        // Everything this thread posted so far has run.
        EXPECT_EQ(ran[static_cast<std::size_t>(t)].load(), (round + 1) * (jobs / 4));
      }
    });
  }
  for (auto& t : posters) {
    t.join();
  }
  EXPECT_EQ(total.load(), threads * jobs);
}

TEST(wait_idle, on_a_worker_of_the_pool_throws_logic_error) {
  fjord::pool p(fjord::pool_options{.workers = 2});
  EXPECT_THROW(p.call([&p] { p.wait_idle(); }), std::logic_error);
  try {
    p.call([&p] { p.wait_idle(); });
  } catch (const std::logic_error& e) {
    EXPECT_NE(std::string(e.what()).find("wait for itself"), std::string::npos) << e.what();
  }
}

TEST(wait_idle, from_a_worker_of_another_pool) {
  fjord::pool a(fjord::pool_options{.workers = 1});
  fjord::pool b(fjord::pool_options{.workers = 1});
  std::atomic<int> ran{0};
  a.call([&] {
    for (int i = 0; i < 100; ++i) {
      b.post([&ran] { ran.fetch_add(1); });
    }
    b.wait_idle();
    EXPECT_EQ(ran.load(), 100);
  });
}

TEST(wait_idle, after_close_returns_at_once) {
  fjord::pool p(fjord::pool_options{.workers = 2});
  p.post([] {});
  p.close();
  p.wait_idle();
}

TEST(close, runs_what_was_submitted_then_refuses_with_shutdown_error) {
  fjord::pool p(fjord::pool_options{.workers = 2});
  std::atomic<int> ran{0};
  for (int i = 0; i < 1000; ++i) {
    p.post([&ran] { ran.fetch_add(1); });
  }
  auto f = p.submit([] { return 7; });
  EXPECT_FALSE(p.is_closed());
  p.close();
  EXPECT_TRUE(p.is_closed());
  EXPECT_EQ(ran.load(), 1000);
  EXPECT_EQ(f.get(), 7);
  EXPECT_THROW(p.post([] {}), fjord::shutdown_error);
  EXPECT_THROW(static_cast<void>(p.submit([] {})), fjord::shutdown_error);
  p.close();  // idempotent
}

TEST(close, racing_posters_get_either_a_run_or_an_exception) {
  for (int trial = 0; trial < 20; ++trial) {
    fjord::pool p(fjord::pool_options{.workers = 2});
    std::atomic<int> ran{0};
    std::atomic<int> refused{0};
    std::atomic<int> attempts{0};
    std::vector<std::thread> posters;
    for (int t = 0; t < 3; ++t) {
      posters.emplace_back([&] {
        for (int i = 0; i < 2000; ++i) {
          attempts.fetch_add(1);
          try {
            p.post([&ran] { ran.fetch_add(1); });
          } catch (const fjord::shutdown_error&) {
            refused.fetch_add(1);
          }
        }
      });
    }
    std::this_thread::sleep_for(std::chrono::microseconds(trial * 50));
    p.close();
    for (auto& t : posters) {
      t.join();
    }
    // Every post ran before close() returned, or threw.
    EXPECT_EQ(ran.load() + refused.load(), attempts.load());
  }
}

TEST(close, from_a_worker_of_the_pool_refuses_work_and_the_destructor_drains) {
  std::atomic<int> ran{0};
  {
    fjord::pool p(fjord::pool_options{.workers = 2});
    std::atomic<bool> refused{false};
    p.call([&] {
      p.close();
      // Its own workers may still post (a draining job may fork)...
      p.post([&ran] { ran.fetch_add(1); });
    });
    // ...but nobody else.
    try {
      p.post([] {});
    } catch (const fjord::shutdown_error&) {
      refused = true;
    }
    EXPECT_TRUE(refused.load());
    EXPECT_TRUE(p.is_closed());
  }
  EXPECT_EQ(ran.load(), 1);
}

TEST(pause, jobs_posted_while_paused_wait_for_resume) {
  fjord::pool p(fjord::pool_options{.workers = 2});
  std::atomic<int> ran{0};
  p.pause();
  EXPECT_TRUE(p.is_paused());
  for (int i = 0; i < 500; ++i) {
    p.post([&ran] { ran.fetch_add(1); });
  }
  auto f = p.submit([] { return 1; });
  std::this_thread::sleep_for(50ms);
  // Posted after pause() returned: none may have started.
  EXPECT_EQ(ran.load(), 0);
  EXPECT_EQ(f.wait_for(0s), std::future_status::timeout);
  p.resume();
  EXPECT_FALSE(p.is_paused());
  p.wait_idle();
  EXPECT_EQ(ran.load(), 500);
  EXPECT_EQ(f.get(), 1);
}

TEST(pause, a_running_job_finishes_with_its_forks) {
  fjord::pool p(fjord::pool_options{.workers = 2});
  std::atomic<bool> started{false};
  std::atomic<bool> go{false};
  std::atomic<int> leaves{0};
  auto f = p.submit([&] {
    started = true;
    while (!go.load()) {
      std::this_thread::yield();
    }
    fjord::join([&] { leaves.fetch_add(1); }, [&] { leaves.fetch_add(1); });
    return leaves.load();
  });
  while (!started.load()) {
    std::this_thread::yield();
  }
  p.pause();
  go = true;
  EXPECT_EQ(f.get(), 2);
  p.resume();
}

TEST(pause, waiting_for_idle_while_paused_waits_for_resume) {
  fjord::pool p(fjord::pool_options{.workers = 2});
  std::atomic<int> ran{0};
  p.pause();
  for (int i = 0; i < 100; ++i) {
    p.post([&ran] { ran.fetch_add(1); });
  }
  std::atomic<bool> idle{false};
  std::thread waiter([&] {
    p.wait_idle();
    idle = true;
  });
  std::this_thread::sleep_for(30ms);
  EXPECT_FALSE(idle.load());  // nothing could run yet
  p.resume();
  waiter.join();
  EXPECT_EQ(ran.load(), 100);
}

TEST(pause, a_job_may_pause_its_own_pool) {
  fjord::pool p(fjord::pool_options{.workers = 2});
  std::atomic<int> ran{0};
  p.call([&] { p.pause(); });
  p.post([&ran] { ran.fetch_add(1); });
  std::this_thread::sleep_for(20ms);
  EXPECT_EQ(ran.load(), 0);
  p.resume();
  p.wait_idle();
  EXPECT_EQ(ran.load(), 1);
}

TEST(pause, destroying_a_paused_pool_runs_every_job) {
  std::atomic<int> ran{0};
  {
    fjord::pool p(fjord::pool_options{.workers = 2});
    p.pause();
    for (int i = 0; i < 300; ++i) {
      p.post([&ran] { ran.fetch_add(1); });
    }
  }
  EXPECT_EQ(ran.load(), 300);
}

TEST(pause, pausing_and_resuming_under_load_runs_every_job_once) {
  fjord::pool p(fjord::pool_options{.workers = 2});
  constexpr int jobs = 20000;
  std::vector<std::atomic<int>> runs(jobs);
  std::thread toggler([&] {
    for (int i = 0; i < 200; ++i) {
      p.pause();
      std::this_thread::sleep_for(50us);
      p.resume();
    }
  });
  for (int i = 0; i < jobs; ++i) {
    p.post([&runs, i] { runs[static_cast<std::size_t>(i)].fetch_add(1); });
  }
  toggler.join();
  p.wait_idle();
  for (int i = 0; i < jobs; ++i) {
    ASSERT_EQ(runs[static_cast<std::size_t>(i)].load(), 1) << "job " << i;
  }
}

TEST(pause, a_pause_during_the_drain_is_undone) {
  std::atomic<int> ran{0};
  fjord::pool p(fjord::pool_options{.workers = 1});
  p.post([&] {
    std::this_thread::sleep_for(30ms);  // close() is draining by now
    p.pause();
    ran.fetch_add(1);
  });
  p.post([&ran] { ran.fetch_add(1); });
  p.close();  // hung before pause() checked for a drain
  EXPECT_EQ(ran.load(), 2);
}

}  // namespace
