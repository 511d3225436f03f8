#include "fjord/sync_wait.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <stdexcept>
#include <thread>

#include "fjord/pool.hpp"
#include "fjord/sleep.hpp"
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

TEST(sync_wait, from_a_worker_helps_instead_of_blocking) {
  // One worker: if sync_wait blocked it, the inner task (queued behind it on
  // the same single worker) could never run.
  fjord::pool p(fjord::pool_options{.workers = 1});
  auto inner = [&]() -> fjord::task<int> {
    co_await fjord::sleep_for(1ms);
    co_return 9;
  };
  const int got = p.invoke([&] { return fjord::sync_wait(inner()); });
  EXPECT_EQ(got, 9);
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
