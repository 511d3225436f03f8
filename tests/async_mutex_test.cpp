#include "fjord/async_mutex.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
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

TEST(async_mutex, try_lock_and_unlock) {
  fjord::async_mutex m;
  EXPECT_TRUE(m.try_lock());
  EXPECT_FALSE(m.try_lock());
  EXPECT_TRUE(m.is_locked());
  m.unlock();
  EXPECT_FALSE(m.is_locked());
  EXPECT_THROW(m.unlock(), std::logic_error);
}

TEST(async_mutex, scoped_lock_releases) {
  fjord::async_mutex m;
  auto body = [&]() -> fjord::task<void> {
    {
      auto guard = co_await m.scoped_lock();
      EXPECT_TRUE(guard.owns_lock());
      EXPECT_TRUE(m.is_locked());
    }
    EXPECT_FALSE(m.is_locked());
  };
  fjord::sync_wait(body());
}

TEST(async_mutex, waiter_parks_until_unlock) {
  fjord::async_mutex m;
  ASSERT_TRUE(m.try_lock());
  bool got = false;
  auto waiter = [&]() -> fjord::task<void> {
    co_await m.lock();
    got = true;
    m.unlock();
  };
  auto t = waiter();
  auto driver = [&]() -> fjord::task<void> {
    co_await fjord::when_all(std::move(t), [&]() -> fjord::task<void> {
      EXPECT_FALSE(got);  // parked, not spinning: this runs meanwhile
      m.unlock();         // hands the mutex to the waiter
      co_return;
    }());
  };
  fjord::sync_wait(driver());
  EXPECT_TRUE(got);
  EXPECT_FALSE(m.is_locked());
}

// Thousands of coroutines on two workers increment a plain counter under the
// mutex: any overlap of critical sections shows as a lost update (and as a
// race under TSan).
TEST(async_mutex, thousands_of_contending_coroutines) {
  fjord::pool p(fjord::pool_options{.workers = 2});
  fjord::async_mutex m;
  long counter = 0;
  std::atomic<int> inside{0};
  auto worker = [&]() -> fjord::task<void> {
    for (int i = 0; i < 20; ++i) {
      auto guard = co_await m.scoped_lock();
      EXPECT_EQ(inside.fetch_add(1), 0);
      ++counter;
      if (i % 5 == 0) {
        co_await fjord::yield();  // hold the lock across a suspension
      }
      inside.fetch_sub(1);
    }
  };
  fjord_test::run_together(p, fjord_test::many(2000, [&](int /*i*/) { return worker(); }));
  EXPECT_EQ(counter, 2000 * 20);
  EXPECT_FALSE(m.is_locked());
}

}  // namespace

namespace {

// Waits (bounded) until p has n waiting coroutines.
bool parked_soon(fjord::pool& p, std::int64_t n) {
  for (int i = 0; i < 10000; ++i) {
    if (fjord::detail::pool_access::core(p).waiting_coroutines() == n) {
      return true;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return false;
}

}  // namespace

TEST(async_mutex, unlock_hands_over_without_barging_and_the_waiter_resumes_on_its_pool) {
  fjord::async_mutex m;
  fjord::pool home(fjord::pool_options{.workers = 1});
  ASSERT_TRUE(m.try_lock());
  std::atomic<fjord::pool*> resumed_on{nullptr};
  std::atomic<bool> may_unlock{false};
  std::thread waiter([&] {
    fjord::sync_wait([&]() -> fjord::task<void> {
      co_await home.schedule();
      co_await m.lock();
      resumed_on = fjord::current_pool();
      while (!may_unlock.load()) {  // hold it until the main thread has looked
        std::this_thread::yield();
      }
      m.unlock();
    }());
  });
  ASSERT_TRUE(parked_soon(home, 1));
  m.unlock();                  // from a thread outside any pool
  EXPECT_FALSE(m.try_lock());  // the waiter owns it now, whether it ran yet or not
  may_unlock = true;
  waiter.join();
  EXPECT_EQ(resumed_on.load(), &home);
  EXPECT_FALSE(m.is_locked());
}
