// fjord::priority on post, submit, task_group and schedule.
#include "fjord/priority.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <mutex>
#include <random>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "fjord/pool.hpp"
#include "fjord/shutdown_error.hpp"
#include "fjord/sync_wait.hpp"
#include "fjord/task.hpp"
#include "fjord/task_group.hpp"

namespace {

using namespace std::chrono_literals;

// A one-worker pool held busy until release(), so that jobs queue up.
struct held_pool {
  fjord::pool pool{fjord::pool_options{.workers = 1}};
  std::atomic<bool> go{false};
  std::atomic<bool> holding{false};
  held_pool() {
    pool.post([this] {
      holding = true;
      while (!go.load()) {
        std::this_thread::sleep_for(100us);
      }
    });
    while (!holding.load()) {
      std::this_thread::yield();
    }
  }
  void release() { go = true; }
};

struct order_log {
  std::mutex m;
  std::vector<char> order;
  void add(char c) {
    std::lock_guard lock(m);
    order.push_back(c);
  }
};

TEST(priority, a_high_job_passes_a_backlog_of_normal_ones) {
  held_pool h;
  order_log log;
  for (int i = 0; i < 1000; ++i) {
    h.pool.post([&log] { log.add('n'); });
  }
  h.pool.post(fjord::priority::high, [&log] { log.add('H'); });
  h.release();
  h.pool.wait_idle();
  ASSERT_EQ(log.order.size(), 1001u);
  std::size_t at = 0;
  while (log.order[at] != 'H') {
    ++at;
  }
  // At most one normal job (a fairness turn) goes first.
  EXPECT_LE(at, 1u);
}

TEST(priority, low_jobs_wait_while_normal_work_waits) {
  held_pool h;
  order_log log;
  for (int i = 0; i < 100; ++i) {
    h.pool.post(fjord::priority::low, [&log] { log.add('l'); });
  }
  for (int i = 0; i < 100; ++i) {
    h.pool.post([&log] { log.add('n'); });
  }
  h.release();
  h.pool.wait_idle();
  ASSERT_EQ(log.order.size(), 200u);
  int low_before_last_normal = 0;
  std::size_t last_normal = 0;
  for (std::size_t i = 0; i < log.order.size(); ++i) {
    if (log.order[i] == 'n') {
      last_normal = i;
    }
  }
  for (std::size_t i = 0; i < last_normal; ++i) {
    low_before_last_normal += log.order[i] == 'l' ? 1 : 0;
  }
  // One low job per 4 fairness turns of 61 jobs: at most one in 100.
  EXPECT_LE(low_before_last_normal, 1);
}

// A job that posts its successor (onto the worker's deque, or at a level)
// until told to stop or a bound is hit.
struct flood {
  fjord::pool* pool;
  std::atomic<bool>* stop;
  std::atomic<int>* count;
  fjord::priority level;
  bool own_level;  // post at `level` (else plain post, onto the deque)
  void operator()() const {
    if (stop->load() || count->fetch_add(1) >= 1'000'000) {
      return;
    }
    if (own_level) {
      pool->post(level, *this);
    } else {
      pool->post(*this);
    }
  }
};

// Floods a one-worker pool with self-reposting jobs (at flood_level, or
// onto the deque for normal) and posts one job at waiter_level that ends
// the flood; returns how many flood jobs ran between the waiter's post
// returning and the waiter starting (about 1,000,000 if it starved). The
// count starts after the post: the posting thread may be descheduled
// while the flood runs, and those jobs say nothing about the scheduler.
int jobs_ahead_of(fjord::priority flood_level, fjord::priority waiter_level) {
  fjord::pool p(fjord::pool_options{.workers = 1});
  std::atomic<bool> stop{false};
  std::atomic<int> count{0};
  std::atomic<int> count_at_start{0};
  const bool at_level = flood_level != fjord::priority::normal;
  p.post(flood_level, flood{&p, &stop, &count, flood_level, at_level});
  p.post(waiter_level, [&] {
    count_at_start = count.load();
    stop = true;
  });
  const int count_at_post = count.load();
  p.wait_idle();
  EXPECT_TRUE(stop.load());
  return count_at_start.load() - count_at_post;
}

TEST(priority, low_is_not_starved_by_a_flood_of_normal_work) {
  EXPECT_LT(jobs_ahead_of(fjord::priority::normal, fjord::priority::low), 1000);
}

TEST(priority, normal_is_not_starved_by_a_flood_of_high_work) {
  EXPECT_LT(jobs_ahead_of(fjord::priority::high, fjord::priority::normal), 1000);
}

TEST(priority, low_is_not_starved_by_a_flood_of_high_work) {
  EXPECT_LT(jobs_ahead_of(fjord::priority::high, fjord::priority::low), 1000);
}

// A worker waiting for a high or low priority group: its children were
// injected, not pushed on its deque, so the wait must not take the inline
// path of a normal group (which pops the deque) and still sees every child.
TEST(priority, a_worker_waits_for_a_prioritized_group_it_started) {
  fjord::pool p(fjord::pool_options{.workers = 2});
  for (const fjord::priority level : {fjord::priority::high, fjord::priority::low}) {
    const int ran = p.call([&p, level] {
      std::atomic<int> n{0};
      fjord::task_group g(p, level);
      for (int i = 0; i < 200; ++i) {
        g.run([&n] { n.fetch_add(1); });
      }
      EXPECT_EQ(g.wait(), fjord::task_group_status::complete);
      return n.load();
    });
    EXPECT_EQ(ran, 200);
  }
}

TEST(priority, submit_group_and_schedule_take_a_priority) {
  fjord::pool p(fjord::pool_options{.workers = 2});
  EXPECT_EQ(p.submit(fjord::priority::high, [] { return 1; }).get(), 1);
  EXPECT_EQ(p.submit(fjord::priority::low, [] { return 2; }).get(), 2);
  std::atomic<int> ran{0};
  {
    fjord::task_group g(p, fjord::priority::low);
    for (int i = 0; i < 100; ++i) {
      g.run([&ran] { ran.fetch_add(1); });
    }
    EXPECT_EQ(g.wait(), fjord::task_group_status::complete);
  }
  EXPECT_EQ(ran.load(), 100);
  auto hop = [](fjord::pool& pool) -> fjord::task<bool> {
    co_await pool.schedule(fjord::priority::high);
    const bool on_pool = pool.owns_current_thread();
    co_await pool.schedule(fjord::priority::low);  // already there: carries on
    co_return on_pool&& pool.owns_current_thread();
  };
  EXPECT_TRUE(fjord::sync_wait(hop(p)));
}

TEST(priority, a_value_that_is_no_priority_is_named) {
  fjord::pool p(fjord::pool_options{.workers = 1});
  const auto bad = static_cast<fjord::priority>(7);
  try {
    p.post(bad, [] {});
    ADD_FAILURE() << "no error";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("priority 7"), std::string::npos) << e.what();
  }
  EXPECT_THROW(static_cast<void>(p.submit(bad, [] {})), std::invalid_argument);
  EXPECT_THROW(fjord::task_group(p, bad), std::invalid_argument);
  EXPECT_THROW(static_cast<void>(p.schedule(bad)), std::invalid_argument);
}

TEST(priority, mixed_levels_from_many_threads_run_exactly_once) {
  fjord::pool p(fjord::pool_options{.workers = 2});
  constexpr int threads = 4;
  constexpr int jobs = 5000;
  std::vector<std::atomic<int>> runs(std::size_t{threads} * jobs);
  std::vector<std::thread> posters;
  for (int t = 0; t < threads; ++t) {
    posters.emplace_back([&, t] {
      std::mt19937 rng(static_cast<unsigned>(t));
      for (int i = 0; i < jobs; ++i) {
        const auto level = static_cast<fjord::priority>(rng() % 3);
        auto* slot = &runs[static_cast<std::size_t>(t) * jobs + i];
        p.post(level, [slot] { slot->fetch_add(1); });
      }
    });
  }
  for (auto& t : posters) {
    t.join();
  }
  p.wait_idle();
  for (std::size_t i = 0; i < runs.size(); ++i) {
    ASSERT_EQ(runs[i].load(), 1) << "job " << i;
  }
}

TEST(priority, shutdown_runs_every_level_and_then_refuses_them) {
  std::atomic<int> ran{0};
  {
    fjord::pool p(fjord::pool_options{.workers = 1});
    p.pause();
    for (int i = 0; i < 50; ++i) {
      p.post(fjord::priority::high, [&ran] { ran.fetch_add(1); });
      p.post(fjord::priority::low, [&ran] { ran.fetch_add(1); });
    }
    p.close();
    EXPECT_EQ(ran.load(), 100);
    EXPECT_THROW(p.post(fjord::priority::high, [] {}), fjord::shutdown_error);
    EXPECT_THROW(p.post(fjord::priority::low, [] {}), fjord::shutdown_error);
  }
}

TEST(priority, jobs_on_a_deque_are_not_starved_by_a_flood_of_high_work) {
  fjord::pool p(fjord::pool_options{.workers = 1});
  std::atomic<bool> stop{false};
  std::atomic<int> count{0};
  std::atomic<int> normal{0};
  std::atomic<int> count_at_last{0};
  // A batch of normal work, most of which lands on the worker's deque.
  std::vector<std::function<void()>> batch(32, [&] {
    if (normal.fetch_add(1) + 1 == 32) {
      count_at_last = count.load();
      stop = true;
    }
  });
  p.post(fjord::priority::high, flood{&p, &stop, &count, fjord::priority::high, true});
  p.post_bulk(batch);
  const int count_at_post = count.load();  // see jobs_ahead_of
  p.wait_idle();
  EXPECT_EQ(normal.load(), 32);
  // A fair turn every 61 jobs runs one of them.
  const int ahead = count_at_last.load() - count_at_post;
  EXPECT_LT(ahead, 32 * 61 * 2) << "the batch waited behind " << ahead << " jobs";
}

}  // namespace
