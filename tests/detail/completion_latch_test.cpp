#include "fjord/detail/completion_latch.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <memory>
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

}  // namespace
