// pool::schedule() and fjord::yield().
#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <vector>

#include "fjord/pool.hpp"
#include "fjord/shutdown_error.hpp"
#include "fjord/sync_wait.hpp"
#include "fjord/task.hpp"
#include "fjord/when_all.hpp"
#include "fjord/yield.hpp"
#include "support/pool_fixture.hpp"

namespace {

// Runs on pools of 1, 2 and 4 workers and checks that nothing is left behind.
class schedule_on_pools : public fjord_test::pool_fixture {};

TEST_P(schedule_on_pools, moves_the_coroutine_onto_the_pool) {
  fjord::pool& p = pool();
  auto body = [&]() -> fjord::task<bool> {
    const bool before = p.owns_current_thread();
    co_await p.schedule();
    co_return !before && p.owns_current_thread();
  };
  EXPECT_TRUE(fjord::sync_wait(body()));
}

TEST(schedule, hops_between_pools) {
  fjord::pool a(fjord::pool_options{.workers = 1});
  fjord::pool b(fjord::pool_options{.workers = 1});
  auto body = [&]() -> fjord::task<int> {
    int hops = 0;
    for (int i = 0; i < 100; ++i) {
      co_await a.schedule();
      hops += a.owns_current_thread() ? 1 : 0;
      co_await b.schedule();
      hops += b.owns_current_thread() ? 1 : 0;
    }
    co_return hops;
  };
  EXPECT_EQ(fjord::sync_wait(body()), 200);
}

TEST(schedule, on_a_worker_of_the_same_pool_does_not_suspend) {
  fjord::pool p(fjord::pool_options{.workers = 1});
  auto body = [&]() -> fjord::task<bool> {
    co_await p.schedule();
    const auto before = std::this_thread::get_id();
    co_await p.schedule();
    co_return before == std::this_thread::get_id();
  };
  EXPECT_TRUE(fjord::sync_wait(body()));
}

TEST(yield, lets_other_work_run_first) {
  fjord::pool p(fjord::pool_options{.workers = 1});
  std::vector<int> order;
  auto a = [&]() -> fjord::task<void> {
    order.push_back(1);
    co_await fjord::yield();
    order.push_back(3);
  };
  auto b = [&]() -> fjord::task<void> {
    order.push_back(2);
    co_return;
  };
  auto both = [&]() -> fjord::task<void> {
    co_await p.schedule();
    co_await fjord::when_all(a(), b());
  };
  fjord::sync_wait(both());
  EXPECT_EQ(order, (std::vector<int>{1, 2, 3}));
}

TEST(yield, off_a_pool_is_a_no_op) {
  auto body = []() -> fjord::task<int> {
    co_await fjord::yield();
    co_return 1;
  };
  EXPECT_EQ(fjord::sync_wait(body()), 1);
}

INSTANTIATE_TEST_SUITE_P(workers, schedule_on_pools, fjord_test::worker_counts,
                         fjord_test::worker_count_name);

}  // namespace
