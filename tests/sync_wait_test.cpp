#include "fjord/sync_wait.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <stdexcept>
#include <thread>

#include "fjord/detail/sync_wait_loop.hpp"
#include "fjord/join.hpp"
#include "fjord/pool.hpp"
#include "fjord/sleep.hpp"
#include "fjord/spawn.hpp"
#include "fjord/task.hpp"

namespace {

using namespace std::chrono_literals;

fjord::task<std::thread::id> where_am_i(fjord::pool& p) {
  co_await p.schedule();
  co_return std::this_thread::get_id();
}

TEST(sync_wait, runs_inline_until_the_first_suspension) {
  auto here = []() -> fjord::task<std::thread::id> { co_return std::this_thread::get_id(); };
  EXPECT_EQ(fjord::sync_wait(here()), std::this_thread::get_id());
}

TEST(sync_wait, sleeps_while_the_task_runs_on_a_pool) {
  fjord::pool p(fjord::pool_options{.workers = 2});
  EXPECT_NE(fjord::sync_wait(where_am_i(p)), std::this_thread::get_id());
  auto slow = [&]() -> fjord::task<int> {
    co_await p.schedule();
    std::this_thread::sleep_for(20ms);
    co_return 3;
  };
  EXPECT_EQ(fjord::sync_wait(slow()), 3);
}

TEST(sync_wait, rethrows_from_a_pool) {
  fjord::pool p(fjord::pool_options{.workers = 1});
  auto thrower = [&]() -> fjord::task<void> {
    co_await p.schedule();
    throw std::out_of_range("far");
  };
  EXPECT_THROW(fjord::sync_wait(thrower()), std::out_of_range);
}

TEST(sync_wait, from_a_worker_blocks_with_a_stand_in) {
  // One worker: if sync_wait blocked it without a stand-in, work queued
  // behind it on the same single worker could never run. (Its own sleep
  // comes back to the waiting thread.)
  fjord::pool p(fjord::pool_options{.workers = 1});
  auto inner = [&]() -> fjord::task<int> {
    co_await fjord::sleep_for(1ms);
    co_return 9;
  };
  const int got = p.submit([&] { return fjord::sync_wait(inner()); }).get();
  EXPECT_EQ(got, 9);
}

TEST(sync_wait, a_coroutine_started_inside_it_but_not_part_of_its_task_goes_to_its_pool) {
  // On a worker, the task joins; the first closure spawns u on the pool and
  // join runs u's start job right there, while the sync_wait's loop is
  // current. u then sleeps past the end of the task: it must wake on the
  // pool, not post to the loop, which is gone by then.
  fjord::pool p(fjord::pool_options{.workers = 1});
  std::atomic<bool> u_done{false};
  std::atomic<fjord::pool*> u_resumed_on{nullptr};
  auto u = [&]() -> fjord::task<void> {
    co_await fjord::sleep_for(30ms);
    u_resumed_on = fjord::current_pool();
    u_done = true;
  };
  auto t = [&]() -> fjord::task<void> {
    fjord::join([&] { fjord::spawn(p, u()); }, [] {});
    co_return;
  };
  p.submit([&] { fjord::sync_wait(t()); }).get();
  const auto give_up = std::chrono::steady_clock::now() + 10s;
  while (!u_done.load() && std::chrono::steady_clock::now() < give_up) {
    std::this_thread::sleep_for(1ms);
  }
  EXPECT_TRUE(u_done.load());
  EXPECT_EQ(u_resumed_on.load(), &p);
}

TEST(sync_wait, the_loop_outlives_two_to_the_thirty_posts) {
  // The post count wraps within its bits: post number 2^30 must not carry
  // into the "task ended" flag and let run() return early.
  fjord::detail::sync_wait_loop loop(fjord::detail::sync_wait_loop::count_mask);
  std::atomic<bool> ran{false};
  struct flag_job : fjord::detail::job {
    explicit flag_job(std::atomic<bool>& f) : job(&execute), flag(&f) {}
    static void execute(job* j) noexcept { static_cast<flag_job*>(j)->flag->store(true); }
    std::atomic<bool>* flag;
  } job(ran);
  std::atomic<bool> returned{false};
  std::thread runner([&] {
    loop.run();
    returned = true;
  });
  std::this_thread::sleep_for(5ms);  // let it sleep (sets its sleeping flag)
  loop.post(&job);
  const auto give_up = std::chrono::steady_clock::now() + 10s;
  while (!ran.load() && std::chrono::steady_clock::now() < give_up) {
    std::this_thread::sleep_for(1ms);
  }
  ASSERT_TRUE(ran.load());
  std::this_thread::sleep_for(20ms);
  EXPECT_FALSE(returned.load());  // the task has not ended
  loop.finish();
  runner.join();
  EXPECT_TRUE(returned.load());
}

TEST(sync_wait, many_threads_at_once) {
  fjord::pool p(fjord::pool_options{.workers = 2});
  std::atomic<long> total{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 500; ++i) {
        auto one = [&]() -> fjord::task<int> {
          co_await p.schedule();
          co_return 1;
        };
        total += fjord::sync_wait(one());
      }
    });
  }
  for (auto& t : threads) {
    t.join();
  }
  EXPECT_EQ(total.load(), 8 * 500);
}

}  // namespace
