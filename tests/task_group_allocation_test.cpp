// A task_group in steady state allocates nothing from operator new: not its
// stop_source (made only when a token is asked for), not its children (they
// come from the worker's job heap, or from outside the pool a slot of the
// caller's submission lane). Its own binary, because it replaces the
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

// From outside the pool a small child is built in a slot of the calling
// thread's submission lane: once the lane exists, no child allocates. (A
// heap job per child would: the pool is paused, so no block comes back to
// be used again.)
TEST(task_group_allocation, children_run_from_outside_the_pool_allocate_nothing) {
  fjord::pool p(fjord::pool_options{.workers = 1});
  std::atomic<int> ran{0};
  {
    fjord::task_group warm(p);
    warm.run([&ran] { ran.fetch_add(1, std::memory_order_relaxed); });  // makes the lane
    warm.wait();
  }
  p.pause();
  fjord::task_group g(p);
  const long before = allocations.load(std::memory_order_relaxed);
  for (int i = 0; i < 100; ++i) {
    g.run([&ran] { ran.fetch_add(1, std::memory_order_relaxed); });
  }
  const long counted = allocations.load(std::memory_order_relaxed) - before;
  p.resume();
  g.wait();
  EXPECT_EQ(counted, 0);
  EXPECT_EQ(ran.load(), 101);
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
