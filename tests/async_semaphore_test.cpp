#include "fjord/async_semaphore.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <stdexcept>
#include <stop_token>
#include <thread>
#include <vector>

#include "fjord/pool.hpp"
#include "fjord/stop_token.hpp"
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
  for (int i = 0; i < 10000 && fjord::detail::pool_access::core(home).waiting_coroutines() != 1;
       ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  ASSERT_EQ(fjord::detail::pool_access::core(home).waiting_coroutines(), 1);
  s.release();                    // from a thread outside any pool
  EXPECT_FALSE(s.try_acquire());  // the unit went to the waiter
  waiter.join();
  EXPECT_EQ(resumed_on.load(), &home);
  EXPECT_FALSE(s.try_acquire());
}

TEST(async_semaphore, a_permit_gives_its_unit_back) {
  fjord::async_semaphore s(1);
  fjord::sync_wait([&]() -> fjord::task<void> {
    {
      auto permit = co_await s.scoped_acquire();
      EXPECT_TRUE(permit);
      EXPECT_EQ(s.available(), 0);
      auto moved = std::move(permit);
      EXPECT_FALSE(permit);  // NOLINT(bugprone-use-after-move): checks the moved-from state
      EXPECT_TRUE(moved);
    }
    EXPECT_EQ(s.available(), 1);
    auto early = co_await s.scoped_acquire();
    early.release();
    EXPECT_EQ(s.available(), 1);
  }());
}

TEST(async_semaphore, a_stop_request_ends_the_wait_with_an_empty_permit) {
  fjord::async_semaphore s(0);
  fjord::pool home(fjord::pool_options{.workers = 1});
  std::stop_source stop;
  std::atomic<int> outcome{-1};
  std::thread waiter([&] {
    fjord::sync_wait([&]() -> fjord::task<void> {
      co_await home.schedule();
      auto permit = co_await s.scoped_acquire(stop.get_token());
      outcome = permit ? 1 : 0;
    }());
  });
  for (int i = 0; i < 10000 && fjord::detail::pool_access::core(home).waiting_coroutines() != 1;
       ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  ASSERT_EQ(fjord::detail::pool_access::core(home).waiting_coroutines(), 1);
  stop.request_stop();
  waiter.join();
  EXPECT_EQ(outcome.load(), 0);
  EXPECT_EQ(s.available(), 0);  // no unit taken
  s.release();
  EXPECT_EQ(s.available(), 1);  // and none lost: the canceled waiter left the list
}

TEST(async_semaphore, a_stop_already_requested_does_not_wait) {
  fjord::async_semaphore s(0);
  std::stop_source stop;
  stop.request_stop();
  const bool got = fjord::sync_wait([&]() -> fjord::task<bool> {
    auto permit = co_await s.scoped_acquire(stop.get_token());
    co_return static_cast<bool>(permit);
  }());
  EXPECT_FALSE(got);
}

TEST(async_semaphore, cancellations_racing_releases_lose_and_duplicate_no_unit) {
  // Many waiters, half of them canceled while releases arrive: every unit
  // released ends either with a waiter that got a permit (and gives it
  // back) or in the count; none is lost or handed out twice.
  constexpr int waiters = 200;
  fjord::async_semaphore s(0);
  fjord::pool p(fjord::pool_options{.workers = 2});
  std::vector<std::stop_source> stops(waiters);
  std::atomic<int> acquired{0};
  std::atomic<int> canceled{0};
  std::atomic<int> inside{0};
  std::atomic<int> max_inside{0};
  auto one = [&](int i) -> fjord::task<void> {
    auto permit = co_await s.scoped_acquire(stops[static_cast<std::size_t>(i)].get_token());
    if (!permit) {
      canceled.fetch_add(1);
      co_return;
    }
    const int now = inside.fetch_add(1) + 1;
    int seen = max_inside.load();
    while (now > seen && !max_inside.compare_exchange_weak(seen, now)) {
    }
    acquired.fetch_add(1);
    inside.fetch_sub(1);
  };
  std::thread releaser([&] {
    for (int i = 0; i < waiters; ++i) {
      if (i % 2 == 0) {
        stops[static_cast<std::size_t>(i)].request_stop();
      }
      if (i % 20 == 0) {
        s.release(3);
      }
    }
    for (int i = 1; i < waiters; i += 2) {
      stops[static_cast<std::size_t>(i)].request_stop();  // stragglers end too
    }
  });
  fjord_test::run_together(p, fjord_test::many(waiters, [&](int i) { return one(i); }));
  releaser.join();
  EXPECT_EQ(acquired.load() + canceled.load(), waiters);
  EXPECT_EQ(s.available(), 30);  // 10 releases of 3, every permit given back
  EXPECT_LE(max_inside.load(), 30);
}

TEST(async_semaphore, scoped_acquire_observes_the_inherited_stop_token) {
  fjord::async_semaphore s(0);
  std::stop_source stop;
  std::thread stopper([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    stop.request_stop();
  });
  const bool got =
      fjord::sync_wait(fjord::with_stop_token(stop.get_token(), [&]() -> fjord::task<bool> {
        auto permit = co_await s.scoped_acquire();  // no token given: the task's
        co_return static_cast<bool>(permit);
      }()));
  stopper.join();
  EXPECT_FALSE(got);
  EXPECT_EQ(s.available(), 0);
}
