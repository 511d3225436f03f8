#include "fjord/timer.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>

#include "fjord/pool.hpp"
#include "fjord/select.hpp"
#include "fjord/sync_wait.hpp"
#include "fjord/task.hpp"

namespace {

using namespace std::chrono_literals;
using fjord::timer_clock;

TEST(after, delivers_the_time_once_when_it_comes) {
  const auto start = timer_clock::now();
  fjord::channel<timer_clock::time_point> ch = fjord::after(20ms);
  EXPECT_EQ(ch.try_receive(), std::nullopt);
  const std::optional<timer_clock::time_point> t = ch.blocking_receive();
  ASSERT_TRUE(t.has_value());
  EXPECT_GE(*t - start, 20ms);
  EXPECT_GE(timer_clock::now() - start, 20ms);
  std::this_thread::sleep_for(5ms);
  EXPECT_EQ(ch.try_receive(), std::nullopt);  // once only
  EXPECT_FALSE(ch.is_closed());
}

TEST(after, is_a_timeout_case_for_a_coroutine_select) {
  fjord::pool p(fjord::pool_options{.workers = 1});
  fjord::channel<int> never(0);
  auto wait = [&]() -> fjord::task<std::size_t> {
    co_await p.schedule();
    std::optional<int> x;
    std::optional<timer_clock::time_point> t;
    co_return co_await fjord::select(fjord::receive_from(never, x),
                                     fjord::receive_from(fjord::after(10ms), t));
  };
  EXPECT_EQ(fjord::sync_wait(wait()), 1U);
}

TEST(after, a_duration_that_overflows_never_fires) {
  const std::size_t armed = fjord::detail::timer_service::instance().pending();
  fjord::channel<timer_clock::time_point> ch = fjord::after(std::chrono::hours::max());
  // Nothing is armed for it (it would stay in the heap for ever).
  EXPECT_EQ(fjord::detail::timer_service::instance().pending(), armed);
  std::optional<timer_clock::time_point> t;
  EXPECT_EQ(fjord::blocking_select(fjord::receive_from(ch, t), fjord::timeout(20ms)), 1U);
}

TEST(ticker, ticks_periodically_until_stopped) {
  const auto start = timer_clock::now();  // before the ticker: its grid starts after this
  fjord::ticker t(5ms);
  timer_clock::time_point last{};
  for (int i = 0; i < 5; ++i) {
    const std::optional<timer_clock::time_point> tick = t.ticks().blocking_receive();
    ASSERT_TRUE(tick.has_value());
    EXPECT_GT(*tick, last);
    last = *tick;
  }
  EXPECT_GE(timer_clock::now() - start, 25ms);
  t.stop();
  t.stop();  // idempotent
  std::optional<timer_clock::time_point> tick;
  // Nothing after stop(), not even a tick pending when it was called.
  EXPECT_EQ(fjord::blocking_select(fjord::receive_from(t.ticks(), tick), fjord::timeout(30ms)), 1U);
}

TEST(ticker, a_slow_receiver_misses_ticks_instead_of_queueing_them) {
  fjord::ticker t(1ms);
  std::this_thread::sleep_for(30ms);
  EXPECT_LE(t.ticks().size(), 1U);
}

TEST(ticker, a_bad_period_is_named) {
  try {
    fjord::ticker t(-3ms);
    FAIL();
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("-3"), std::string::npos);
  }
  EXPECT_THROW(fjord::ticker(0s), std::invalid_argument);
}

TEST(ticker, stop_racing_the_timer_thread_is_safe) {
  for (int i = 0; i < 2000; ++i) {
    fjord::ticker t(std::chrono::microseconds(1 + i % 50));
    if (i % 3 == 0) {
      std::this_thread::sleep_for(std::chrono::microseconds(i % 40));
    }
  }
}

TEST(call_after, posts_the_callback_to_the_pool) {
  fjord::pool p(fjord::pool_options{.workers = 1});
  fjord::channel<fjord::pool*> ran(1);
  const auto start = timer_clock::now();
  fjord::timer t = fjord::call_after(p, 10ms, [ran] { (void)ran.try_send(fjord::current_pool()); });
  EXPECT_EQ(ran.blocking_receive(), &p);
  EXPECT_GE(timer_clock::now() - start, 10ms);
  EXPECT_FALSE(t.cancel());  // too late
}

TEST(call_after, cancel_prevents_the_call) {
  fjord::pool p(fjord::pool_options{.workers = 1});
  std::atomic<int> calls{0};
  fjord::timer t = fjord::call_after(p, 20ms, [&] { calls.fetch_add(1); });
  EXPECT_TRUE(t.cancel());
  EXPECT_FALSE(t.cancel());
  std::this_thread::sleep_for(40ms);
  EXPECT_EQ(calls.load(), 0);
}

TEST(call_after, a_dropped_handle_still_fires) {
  fjord::pool p(fjord::pool_options{.workers = 1});
  fjord::channel<int> ran(1);
  (void)fjord::call_after(p, 1ms, [ran] { (void)ran.try_send(1); });
  EXPECT_EQ(ran.blocking_receive(), 1);
}

TEST(call_after, cancel_racing_the_timer_runs_the_callback_at_most_once) {
  fjord::pool p(fjord::pool_options{.workers = 2});
  std::atomic<int> calls{0};
  int canceled = 0;
  for (int i = 0; i < 2000; ++i) {
    fjord::timer t =
        fjord::call_after(p, std::chrono::microseconds(i % 30), [&] { calls.fetch_add(1); });
    if (i % 2 == 0) {
      std::this_thread::sleep_for(std::chrono::microseconds(i % 20));
    }
    canceled += t.cancel() ? 1 : 0;
  }
  // Every timer either was canceled or runs its callback, once.
  const auto give_up = timer_clock::now() + 10s;
  while (calls.load() + canceled < 2000 && timer_clock::now() < give_up) {
    std::this_thread::sleep_for(1ms);
  }
  std::this_thread::sleep_for(20ms);
  EXPECT_EQ(calls.load() + canceled, 2000);
}

}  // namespace
