#include "fjord/spawn.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <exception>
#include <stdexcept>

#include "fjord/async_latch.hpp"
#include "fjord/pool.hpp"
#include "fjord/sync_wait.hpp"
#include "support/lifetime_probe.hpp"
#include "support/pool_fixture.hpp"

namespace {

// Runs on pools of 1, 2 and 4 workers and checks that nothing is left behind.
class spawn_on_pools : public fjord_test::pool_fixture {};

TEST(spawn, runs_every_task_once_before_the_pool_ends) {
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

TEST_P(spawn_on_pools, runs_every_task_once) {
  std::atomic<int> ran{0};
  auto body = [&]() -> fjord::task<void> {
    fjord_test::lifetime_probe probe;  // the fixture checks every frame went
    ran.fetch_add(1);
    co_return;
  };
  for (int i = 0; i < 10'000; ++i) {
    fjord::spawn(pool(), body());
  }
  pool().wait_idle();
  EXPECT_EQ(ran.load(), 10'000);
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

TEST_P(spawn_on_pools, tasks_can_be_awaited_through_a_latch) {
  fjord::async_latch done(100);
  std::atomic<int> sum{0};
  fjord::pool& p = pool();
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
  pool().wait_idle();  // the spawned roots end after their count_down
}

TEST_P(spawn_on_pools, rejects_an_empty_task) {
  fjord::pool& p = pool();
  EXPECT_THROW(fjord::spawn(p, fjord::task<void>{}), std::invalid_argument);
}

INSTANTIATE_TEST_SUITE_P(workers, spawn_on_pools, fjord_test::worker_counts,
                         fjord_test::worker_count_name);

}  // namespace
