#include "fjord/async_latch.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <stdexcept>
#include <thread>
#include <vector>

#include "fjord/pool.hpp"
#include "fjord/sync_wait.hpp"
#include "fjord/task.hpp"
#include "fjord/when_all.hpp"
#include "support/run_together.hpp"

namespace {

TEST(async_latch, ready_at_zero) {
  fjord::async_latch l(0);
  EXPECT_TRUE(l.try_wait());
  auto body = [&]() -> fjord::task<void> { co_await l.wait(); };
  fjord::sync_wait(body());
}

TEST(async_latch, bad_counts_are_named) {
  EXPECT_THROW(fjord::async_latch(-1), std::invalid_argument);
  fjord::async_latch l(2);
  try {
    l.count_down(3);
    FAIL();
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("3 with a count of 2"), std::string::npos);
  }
}

TEST(async_latch, thousands_of_waiters_released_by_threads) {
  fjord::async_latch l(4);
  std::atomic<int> released{0};
  fjord::pool p(fjord::pool_options{.workers = 2});
  auto waiter = [&]() -> fjord::task<void> {
    co_await l.wait();
    released.fetch_add(1);
  };
  std::vector<std::thread> counters;
  for (int i = 0; i < 4; ++i) {
    counters.emplace_back([&] { l.count_down(); });
  }
  fjord_test::run_together(p, fjord_test::many(3000, [&](int /*i*/) { return waiter(); }));
  for (auto& t : counters) {
    t.join();
  }
  EXPECT_EQ(released.load(), 3000);
}

}  // namespace
