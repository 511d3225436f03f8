#include "fjord/detail/completion_latch.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <memory>
#include <stdexcept>
#include <thread>
#include <vector>

namespace {

using fjord::detail::completion_latch;

TEST(completion_latch, count_down_reports_the_waiter_once) {
  completion_latch latch(2, 5);
  EXPECT_EQ(latch.count_down(), completion_latch::no_waiter);
  EXPECT_FALSE(latch.done());
  EXPECT_EQ(latch.count_down(), 5u);
  EXPECT_TRUE(latch.done());
}

TEST(completion_latch, set_waiter_after_done_says_so) {
  completion_latch latch(1);
  static_cast<void>(latch.count_down());
  EXPECT_TRUE(latch.set_waiter(3));
}

TEST(completion_latch, add_then_count_down) {
  completion_latch latch;
  latch.add(3);
  EXPECT_EQ(latch.count(), 3u);
  static_cast<void>(latch.count_down());
  static_cast<void>(latch.count_down());
  static_cast<void>(latch.count_down());
  EXPECT_TRUE(latch.done());
}

// Foreign waiter sleeping on the futex while many threads count down; the
// waiter frees the latch as soon as it returns (ASan checks that the last
// count_down does not touch it afterwards).
TEST(completion_latch, stress_foreign_waiter_destroys_latch_at_once) {
  for (int round = 0; round < 200; ++round) {
    auto latch = std::make_unique<completion_latch>(4);
    std::vector<std::thread> threads;
    for (int t = 0; t < 4; ++t) {
      threads.emplace_back([l = latch.get()] {
        const void* address = l->futex_address();
        if (l->count_down() == completion_latch::foreign_waiter) {
          completion_latch::wake_foreign(address);
        }
      });
    }
    if (!latch->set_waiter(completion_latch::foreign_waiter)) {
      latch->wait_foreign();
    }
    latch.reset();
    for (auto& t : threads) {
      t.join();
    }
  }
  SUCCEED();
}

TEST(completion_latch, a_hold_finishes_exactly_once_with_the_last_child) {
  completion_latch latch(3);
  EXPECT_EQ(latch.take_hold() & completion_latch::max_count, 3u);
  EXPECT_FALSE(latch.count_down_held().finish);
  EXPECT_FALSE(latch.count_down_held().finish);
  const completion_latch::held_count_down last = latch.count_down_held();
  EXPECT_TRUE(last.finish);  // only the hold is left
  EXPECT_FALSE(latch.done());
  static_cast<void>(latch.release_hold());
  EXPECT_TRUE(latch.done());
  EXPECT_EQ(latch.count(), 0u);
}

TEST(completion_latch, releasing_the_hold_last_wakes_the_waiter) {
  completion_latch latch(1);
  static_cast<void>(latch.take_hold());
  EXPECT_FALSE(latch.set_waiter(7));
  EXPECT_TRUE(latch.count_down_held().finish);
  EXPECT_EQ(latch.release_hold(), 7u);
}

TEST(completion_latch, a_hold_on_an_empty_latch_reports_nothing_pending) {
  completion_latch latch(0);
  EXPECT_EQ(latch.take_hold() & completion_latch::max_count, 0u);
  EXPECT_EQ(latch.release_hold(), completion_latch::no_waiter);
  EXPECT_TRUE(latch.done());
}

TEST(completion_latch, the_count_is_limited_to_31_bits) {
  completion_latch latch(completion_latch::max_count);
  EXPECT_THROW(latch.add(1), std::length_error);
  EXPECT_EQ(latch.count(), completion_latch::max_count);
}

TEST(completion_latch, stress_exactly_one_finisher) {
  for (int round = 0; round < 500; ++round) {
    completion_latch latch(4);
    std::atomic<int> finishers{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < 4; ++t) {
      threads.emplace_back([&] {
        if (latch.count_down_held().finish) {
          finishers.fetch_add(1);
        }
      });
    }
    if ((latch.take_hold() & completion_latch::max_count) == 0) {
      finishers.fetch_add(1);  // every child was done: the holder finishes
    }
    for (auto& t : threads) {
      t.join();
    }
    ASSERT_EQ(finishers.load(), 1) << "round " << round;
    static_cast<void>(latch.release_hold());
    ASSERT_TRUE(latch.done());
  }
}

}  // namespace
