#include "fjord/async_semaphore.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <stdexcept>
#include <thread>
#include <vector>

#include "fjord/pool.hpp"
#include "fjord/sync_wait.hpp"
#include "fjord/task.hpp"
#include "fjord/when_all.hpp"
#include "fjord/yield.hpp"
#include "support/run_together.hpp"

namespace {

TEST(async_semaphore, counts) {
  fjord::async_semaphore s(2);
  EXPECT_TRUE(s.try_acquire());
  EXPECT_TRUE(s.try_acquire());
  EXPECT_FALSE(s.try_acquire());
  s.release(3);
  EXPECT_EQ(s.available(), 3);
}

TEST(async_semaphore, bad_counts_are_named) {
  try {
    fjord::async_semaphore s(-4);
    FAIL();
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("-4"), std::string::npos);
  }
  fjord::async_semaphore s(0);
  EXPECT_THROW(s.release(-1), std::invalid_argument);
}

TEST(async_semaphore, bounds_concurrency_under_contention) {
  fjord::pool p(fjord::pool_options{.workers = 2});
  fjord::async_semaphore s(3);
  std::atomic<int> inside{0};
  std::atomic<int> most{0};
  std::atomic<int> done{0};
  auto worker = [&]() -> fjord::task<void> {
    for (int i = 0; i < 10; ++i) {
      co_await s.acquire();
      const int now = inside.fetch_add(1) + 1;
      int seen = most.load();
      while (now > seen && !most.compare_exchange_weak(seen, now)) {
      }
      co_await fjord::yield();
      inside.fetch_sub(1);
      s.release();
    }
    done.fetch_add(1);
  };
  fjord_test::run_together(p, fjord_test::many(2000, [&](int /*i*/) { return worker(); }));
  EXPECT_EQ(done.load(), 2000);
  EXPECT_LE(most.load(), 3);
  EXPECT_EQ(s.available(), 3);
}

}  // namespace

TEST(async_semaphore, release_hands_over_without_barging_and_the_waiter_resumes_on_its_pool) {
  fjord::async_semaphore s(0);
  fjord::pool home(fjord::pool_options{.workers = 1});
  std::atomic<fjord::pool*> resumed_on{nullptr};
  std::thread waiter([&] {
    fjord::sync_wait([&]() -> fjord::task<void> {
      co_await home.schedule();
      co_await s.acquire();
      resumed_on = fjord::current_pool();
    }());
  });
  for (int i = 0; i < 10000 && home.core().parked_coroutines() != 1; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  ASSERT_EQ(home.core().parked_coroutines(), 1);
  s.release();                    // from a thread outside any pool
  EXPECT_FALSE(s.try_acquire());  // the unit went to the waiter
  waiter.join();
  EXPECT_EQ(resumed_on.load(), &home);
  EXPECT_FALSE(s.try_acquire());
}
