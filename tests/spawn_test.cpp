#include "fjord/spawn.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <exception>
#include <stdexcept>

#include "fjord/async_latch.hpp"
#include "fjord/pool.hpp"
#include "fjord/sync_wait.hpp"
#include "support/lifetime_probe.hpp"

namespace {

TEST(spawn, runs_every_task_once) {
  fjord_test::lifetime_probe::live = 0;
  std::atomic<int> ran{0};
  {
    fjord::pool p(fjord::pool_options{.workers = 2});
    auto body = [&]() -> fjord::task<void> {
      fjord_test::lifetime_probe probe;
      ran.fetch_add(1);
      co_return;
    };
    for (int i = 0; i < 10'000; ++i) {
      fjord::spawn(p, body());
    }
  }  // the pool drains before it ends
  EXPECT_EQ(ran.load(), 10'000);
  EXPECT_EQ(fjord_test::lifetime_probe::live.load(), 0);
}

TEST(spawn, reports_an_exception_to_the_handler) {
  std::atomic<int> reported{0};
  fjord::pool_options options;
  options.workers = 1;
  options.unhandled_exception_handler = [&](std::exception_ptr e) {
    try {
      std::rethrow_exception(e);
    } catch (const std::runtime_error&) {
      reported.fetch_add(1);
    }
  };
  {
    fjord::pool p(options);
    auto body = []() -> fjord::task<int> {
      throw std::runtime_error("lost?");
      co_return 0;
    };
    fjord::spawn(p, body());
  }
  EXPECT_EQ(reported.load(), 1);
}

TEST(spawn, tasks_can_be_awaited_through_a_latch) {
  fjord::async_latch done(100);
  std::atomic<int> sum{0};
  fjord::pool p(fjord::pool_options{.workers = 2});  // drains before the latch goes
  auto body = [&](int i) -> fjord::task<void> {
    sum.fetch_add(i);
    done.count_down();
    co_return;
  };
  for (int i = 0; i < 100; ++i) {
    fjord::spawn(p, body(i));
  }
  auto wait = [&]() -> fjord::task<void> { co_await done.wait(); };
  fjord::sync_wait(wait());
  EXPECT_EQ(sum.load(), 4950);
}

TEST(spawn, rejects_an_empty_task) {
  fjord::pool p(fjord::pool_options{.workers = 1});
  EXPECT_THROW(fjord::spawn(p, fjord::task<void>{}), std::invalid_argument);
}

}  // namespace
