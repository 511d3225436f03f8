#include "fjord/sleep.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <stop_token>
#include <thread>
#include <vector>

#include "fjord/pool.hpp"
#include "fjord/spawn.hpp"
#include "fjord/sync_wait.hpp"
#include "fjord/task.hpp"
#include "fjord/when_all.hpp"
#include "support/run_together.hpp"

namespace {

using namespace std::chrono_literals;
using clock_type = std::chrono::steady_clock;

TEST(sleep, waits_at_least_the_duration) {
  auto body = []() -> fjord::task<fjord::sleep_status> {
    co_return co_await fjord::sleep_for(20ms);
  };
  const auto start = clock_type::now();
  EXPECT_EQ(fjord::sync_wait(body()), fjord::sleep_status::elapsed);
  EXPECT_GE(clock_type::now() - start, 20ms);
}

TEST(sleep, off_a_pool_wakes_on_the_thread_blocked_in_sync_wait) {
  const std::thread::id caller = std::this_thread::get_id();
  auto body = []() -> fjord::task<std::thread::id> {
    co_await fjord::sleep_for(1ms);
    co_return std::this_thread::get_id();
  };
  EXPECT_EQ(fjord::sync_wait(body()), caller);
}

TEST(sleep, until_a_past_time_does_not_suspend) {
  auto body = []() -> fjord::task<fjord::sleep_status> {
    co_return co_await fjord::sleep_until(clock_type::now() - 1s);
  };
  EXPECT_EQ(fjord::sync_wait(body()), fjord::sleep_status::elapsed);
}

TEST(sleep, resumes_on_the_pool_it_slept_on) {
  fjord::pool p(fjord::pool_options{.workers = 2});
  auto body = [&]() -> fjord::task<bool> {
    co_await p.schedule();
    co_await fjord::sleep_for(1ms);
    co_return p.owns_current_thread();
  };
  EXPECT_TRUE(fjord::sync_wait(body()));
}

TEST(sleep, wakes_in_deadline_order_without_a_thread_per_timer) {
  fjord::pool p(fjord::pool_options{.workers = 2});
  std::mutex m;
  std::vector<int> order;
  auto sleeper = [&](int ms) -> fjord::task<void> {
    co_await fjord::sleep_for(std::chrono::milliseconds(ms));
    std::lock_guard lock(m);
    order.push_back(ms);
  };
  const int ms[] = {40, 10, 30, 20};
  fjord_test::run_together(p, fjord_test::many(4, [&](int i) { return sleeper(ms[i]); }));
  EXPECT_EQ(order, (std::vector<int>{10, 20, 30, 40}));
}

TEST(sleep, stop_request_cancels_the_wait) {
  std::stop_source source;
  auto body = [&]() -> fjord::task<fjord::sleep_status> {
    co_return co_await fjord::sleep_for(60s, source.get_token());
  };
  std::thread stopper([&] {
    std::this_thread::sleep_for(10ms);
    source.request_stop();
  });
  const auto start = clock_type::now();
  EXPECT_EQ(fjord::sync_wait(body()), fjord::sleep_status::canceled);
  EXPECT_LT(clock_type::now() - start, 30s);
  stopper.join();
  EXPECT_EQ(fjord::detail::timer_service::instance().pending(), 0u);
}

TEST(sleep, already_stopped_token_does_not_suspend) {
  std::stop_source source;
  source.request_stop();
  auto body = [&]() -> fjord::task<fjord::sleep_status> {
    co_return co_await fjord::sleep_for(60s, source.get_token());
  };
  EXPECT_EQ(fjord::sync_wait(body()), fjord::sleep_status::canceled);
}

TEST(sleep, huge_durations_do_not_overflow) {
  std::stop_source source;
  auto body = [&]() -> fjord::task<fjord::sleep_status> {
    co_return co_await fjord::sleep_for(std::chrono::hours::max(), source.get_token());
  };
  std::thread stopper([&] {
    std::this_thread::sleep_for(5ms);
    source.request_stop();
  });
  EXPECT_EQ(fjord::sync_wait(body()), fjord::sleep_status::canceled);
  stopper.join();
}

// Expiry racing cancellation: each wait ends exactly once, either way.
TEST(sleep, cancellation_racing_expiry) {
  fjord::pool p(fjord::pool_options{.workers = 2});
  std::atomic<int> elapsed{0};
  std::atomic<int> canceled{0};
  auto one = [&](int i) -> fjord::task<void> {
    co_await p.schedule();
    std::stop_source source;
    std::thread stopper([&] {
      std::this_thread::sleep_for(std::chrono::microseconds(i % 200));
      source.request_stop();
    });
    const auto status =
        co_await fjord::sleep_for(std::chrono::microseconds(100), source.get_token());
    stopper.join();
    (status == fjord::sleep_status::elapsed ? elapsed : canceled).fetch_add(1);
  };
  auto body = [&]() -> fjord::task<void> {
    std::vector<fjord::task<void>> tasks;
    for (int i = 0; i < 200; ++i) {
      tasks.push_back(one(i));
    }
    co_await fjord::when_all(std::move(tasks));
  };
  fjord::sync_wait(body());
  EXPECT_EQ(elapsed.load() + canceled.load(), 200);
  EXPECT_EQ(fjord::detail::timer_service::instance().pending(), 0u);
}

TEST(sleep, thousands_of_sleepers) {
  fjord::pool p(fjord::pool_options{.workers = 2});
  std::atomic<int> woke{0};
  auto one = [&](int i) -> fjord::task<void> {
    co_await fjord::sleep_for(std::chrono::microseconds(i % 1000));
    woke.fetch_add(1);
  };
  fjord_test::run_together(p, fjord_test::many(5000, [&](int i) { return one(i); }));
  EXPECT_EQ(woke.load(), 5000);
}

}  // namespace

TEST(sleep, until_the_earliest_time_point_does_not_overflow_or_suspend) {
  auto body = []() -> fjord::task<fjord::sleep_status> {
    co_return co_await fjord::sleep_until(clock_type::time_point::min());
  };
  EXPECT_EQ(fjord::sync_wait(body()), fjord::sleep_status::elapsed);
  auto coarse = []() -> fjord::task<fjord::sleep_status> {
    co_return co_await fjord::sleep_until(
        std::chrono::time_point<std::chrono::system_clock, std::chrono::hours>::min());
  };
  EXPECT_EQ(fjord::sync_wait(coarse()), fjord::sleep_status::elapsed);
}

TEST(sleep, for_the_longest_duration_waits_until_canceled) {
  std::stop_source stop;
  fjord::pool p(fjord::pool_options{.workers = 1});
  auto body = [&]() -> fjord::task<fjord::sleep_status> {
    co_await p.schedule();
    co_return co_await fjord::sleep_for(std::chrono::hours::max(), stop.get_token());
  };
  std::thread canceler([&] {
    std::this_thread::sleep_for(20ms);
    stop.request_stop();
  });
  EXPECT_EQ(fjord::sync_wait(body()), fjord::sleep_status::canceled);
  canceler.join();
}

TEST(sleep, a_timer_firing_while_its_pool_is_destroyed_resumes_on_that_pool) {
  // The pool's destructor waits for the sleeping coroutine, and the timer
  // hands it to the pool (not to the timer thread, not inline).
  std::atomic<bool> on_its_pool{false};
  std::atomic<bool> finished{false};
  fjord::pool* where = nullptr;
  // Made before the pool: the coroutine uses its captures until the end.
  auto sleeper = [&]() -> fjord::task<void> {
    co_await fjord::sleep_for(30ms);
    on_its_pool = fjord::current_pool() == where;
    finished = true;
  };
  {
    fjord::pool p(fjord::pool_options{.workers = 1});
    where = &p;
    fjord::spawn(p, sleeper());
    std::this_thread::sleep_for(1ms);
  }  // ~pool: drains, the timer fires meanwhile
  EXPECT_TRUE(finished.load());
  EXPECT_TRUE(on_its_pool.load());
}
