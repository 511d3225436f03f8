// A task_group in steady state allocates nothing from operator new: not its
// stop_source (made only when a token is asked for), not its children (they
// come from the worker's job heap). Its own binary, because it replaces the
// global operator new to count.
#include <gtest/gtest.h>

#include <atomic>
#include <stop_token>

#include "fjord/task_group.hpp"
#include "support/counting_operator_new.hpp"

namespace {

using test_support::allocations;

// One group of `children` on the calling worker, each child adding one.
void one_group(int children, bool ask_for_a_token) {
  std::atomic<int> ran{0};
  fjord::task_group g;
  if (ask_for_a_token) {
    static_cast<void>(g.get_stop_token());
  }
  for (int i = 0; i < children; ++i) {
    g.run([&ran] { ran.fetch_add(1, std::memory_order_relaxed); });
  }
  g.wait();
  EXPECT_EQ(ran.load(), children);
}

TEST(task_group_allocation, a_group_that_hands_out_no_token_allocates_nothing) {
  fjord::pool p(fjord::pool_options{.workers = 2});
  const long counted = p.call([] {
    one_group(100, false);  // warm: the worker's job heap has its blocks now
    const long before = allocations.load(std::memory_order_relaxed);
    for (int round = 0; round < 100; ++round) {
      one_group(100, false);
    }
    return allocations.load(std::memory_order_relaxed) - before;
  });
  EXPECT_EQ(counted, 0);
}

TEST(task_group_allocation, asking_for_a_token_makes_the_stop_source_once) {
  fjord::pool p(fjord::pool_options{.workers = 1});
  const long counted = p.call([] {
    one_group(10, true);
    const long before = allocations.load(std::memory_order_relaxed);
    one_group(10, true);
    return allocations.load(std::memory_order_relaxed) - before;
  });
  // The source object and its shared stop state: a fixed cost per group
  // that asks, none per child.
  EXPECT_GE(counted, 1);
  EXPECT_LE(counted, 2);
}

}  // namespace
