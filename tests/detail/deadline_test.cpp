#include "fjord/detail/deadline.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <future>
#include <latch>
#include <limits>

#include "fjord/future.hpp"
#include "fjord/pool.hpp"

using namespace std::chrono_literals;
using steady = std::chrono::steady_clock;

TEST(deadline, durations_past_the_clock_saturate) {
  EXPECT_EQ(fjord::detail::deadline_after(std::chrono::hours::max()), steady::time_point::max());
  EXPECT_EQ(fjord::detail::deadline_after(std::chrono::nanoseconds::max()),
            steady::time_point::max());
  EXPECT_EQ(fjord::detail::deadline_after(std::chrono::duration<double>(1e300)),
            steady::time_point::max());
}

TEST(deadline, non_positive_durations_mean_now) {
  const auto before = steady::now();
  const auto d = fjord::detail::deadline_after(std::chrono::hours::min());
  EXPECT_GE(d, before);
  EXPECT_LE(d, steady::now());
  EXPECT_GE(fjord::detail::deadline_after(-1s), before);
}

TEST(deadline, a_nan_duration_means_now) {
  const auto before = steady::now();
  const auto d = fjord::detail::deadline_after(
      std::chrono::duration<double>(std::numeric_limits<double>::quiet_NaN()));
  EXPECT_GE(d, before);
  EXPECT_LE(d, steady::now());
}

TEST(deadline, time_points_at_either_end_of_any_clock) {
  const auto earliest = fjord::detail::deadline_at(steady::time_point::min());
  EXPECT_LE(earliest, steady::now());
  EXPECT_EQ(fjord::detail::deadline_at(steady::time_point::max()), steady::time_point::max());
  using coarse = std::chrono::time_point<std::chrono::system_clock, std::chrono::hours>;
  const auto coarse_earliest = fjord::detail::deadline_at(coarse::min());
  EXPECT_LE(coarse_earliest, steady::now());
  EXPECT_EQ(fjord::detail::deadline_at(coarse::max()), steady::time_point::max());
}

TEST(deadline, an_ordinary_timeout_lands_where_expected) {
  const auto before = steady::now();
  const auto d = fjord::detail::deadline_after(50ms);
  EXPECT_GE(d, before + 50ms);
  EXPECT_LE(d, steady::now() + 50ms);
}

TEST(future, wait_for_the_longest_duration_waits_for_the_result) {
  // From a thread that is not a worker: used to overflow and time out at once.
  fjord::pool p(fjord::pool_options{.workers = 1});
  std::latch go(1);
  auto f = p.submit([&] {
    go.wait();
    return 3;
  });
  std::thread release([&] {
    std::this_thread::sleep_for(20ms);
    go.count_down();
  });
  EXPECT_EQ(f.wait_for(std::chrono::hours::max()), std::future_status::ready);
  EXPECT_EQ(f.get(), 3);
  release.join();
}

TEST(future, wait_until_a_past_or_minimal_time_point_does_not_wait) {
  fjord::pool p(fjord::pool_options{.workers = 1});
  std::latch go(1);
  auto f = p.submit([&] { go.wait(); });
  EXPECT_EQ(f.wait_until(steady::time_point::min()), std::future_status::timeout);
  EXPECT_EQ(f.wait_until(std::chrono::system_clock::time_point::min()),
            std::future_status::timeout);
  EXPECT_EQ(f.wait_for(std::chrono::hours::min()), std::future_status::timeout);
  go.count_down();
  EXPECT_EQ(f.wait_for(std::chrono::hours::max()), std::future_status::ready);
}
