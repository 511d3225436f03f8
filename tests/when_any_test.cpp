#include "fjord/when_any.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <stdexcept>
#include <vector>

#include "fjord/pool.hpp"
#include "fjord/sleep.hpp"
#include "fjord/stop_token.hpp"
#include "fjord/sync_wait.hpp"
#include "support/lifetime_probe.hpp"

namespace {

using namespace std::chrono_literals;

TEST(when_any, first_finisher_wins_and_the_rest_are_stopped) {
  fjord::pool p(fjord::pool_options{.workers = 2});
  auto fast = []() -> fjord::task<int> { co_return 1; };
  auto slow = []() -> fjord::task<std::string> {
    const auto status = co_await fjord::sleep_for(60s);  // ended by the stop request
    co_return status == fjord::sleep_status::canceled ? "canceled" : "elapsed";
  };
  auto body = [&]() -> fjord::task<std::size_t> {
    co_await p.schedule();
    auto result = co_await fjord::when_any(slow(), fast());
    co_return result.index();
  };
  const auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(fjord::sync_wait(body()), 1u);
  EXPECT_LT(std::chrono::steady_clock::now() - start, 30s);  // did not sleep a minute
}

TEST(when_any, range_gives_index_and_value) {
  std::vector<fjord::task<int>> tasks;
  auto value = [](int v) -> fjord::task<int> {
    co_await fjord::sleep_for(std::chrono::milliseconds(v));
    co_return v;
  };
  tasks.push_back(value(200));
  tasks.push_back(value(1));
  tasks.push_back(value(300));
  const auto r = fjord::sync_wait(fjord::when_any(std::move(tasks)));
  EXPECT_EQ(r.index, 1u);
  EXPECT_EQ(r.value, 1);
}

TEST(when_any, winner_exception_is_rethrown) {
  auto thrower = []() -> fjord::task<int> {
    throw std::logic_error("first");
    co_return 0;
  };
  auto slow = []() -> fjord::task<int> {
    co_await fjord::sleep_for(60s);
    co_return 2;
  };
  EXPECT_THROW(fjord::sync_wait(fjord::when_any(thrower(), slow())), std::logic_error);
}

TEST(when_any, outer_stop_reaches_the_children) {
  std::stop_source source;
  auto sleeper = []() -> fjord::task<fjord::sleep_status> {
    co_return co_await fjord::sleep_for(60s);
  };
  auto stopper = [&]() -> fjord::task<fjord::sleep_status> {
    source.request_stop();
    co_return co_await fjord::sleep_for(60s);
  };
  auto r = fjord::sync_wait(
      fjord::with_stop_token(source.get_token(), fjord::when_any(sleeper(), stopper())));
  // Both children are stopped; whichever finished first wins.
  EXPECT_EQ(r.index() == 0 ? std::get<0>(r) : std::get<1>(r), fjord::sleep_status::canceled);
}

TEST(when_any, empty_range_is_an_error) {
  EXPECT_THROW((void)fjord::when_any(std::vector<fjord::task<int>>{}), std::invalid_argument);
}

TEST(when_any, cancellation_racing_completion_frees_everything) {
  fjord_test::lifetime_probe::live = 0;
  fjord::pool p(fjord::pool_options{.workers = 2});
  auto racer = [](int i) -> fjord::task<int> {
    fjord_test::lifetime_probe probe;
    co_await fjord::sleep_for(std::chrono::microseconds(i % 3 * 50));
    co_return i;
  };
  auto body = [&](int round) -> fjord::task<std::size_t> {
    co_await p.schedule();
    std::vector<fjord::task<int>> tasks;
    for (int i = 0; i < 8; ++i) {
      tasks.push_back(racer(round + i));
    }
    co_return (co_await fjord::when_any(std::move(tasks))).index;
  };
  for (int round = 0; round < 300; ++round) {
    EXPECT_LT(fjord::sync_wait(body(round)), 8u);
  }
  EXPECT_EQ(fjord_test::lifetime_probe::live.load(), 0);
}

}  // namespace
