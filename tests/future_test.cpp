#include "fjord/future.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <future>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "fjord/pool.hpp"
#include "support/pool_fixture.hpp"

namespace {

// Runs on pools of 1, 2 and 4 workers and checks that nothing is left behind.
class future_on_pools : public fjord_test::pool_fixture {};

using namespace std::chrono_literals;

TEST_P(future_on_pools, get_returns_value) {
  fjord::pool& p = pool();
  auto f = p.submit([] { return std::string("hello"); });
  EXPECT_TRUE(f.valid());
  EXPECT_EQ(f.get(), "hello");
  EXPECT_FALSE(f.valid());
}

TEST_P(future_on_pools, void_and_move_only) {
  fjord::pool& p = pool();
  std::atomic<int> x{0};
  auto f = p.submit([&] { x = 1; });
  f.get();
  EXPECT_EQ(x.load(), 1);
  auto g = p.submit([] { return std::make_unique<int>(9); });
  EXPECT_EQ(*g.get(), 9);
}

TEST_P(future_on_pools, exception_is_rethrown_by_get) {
  fjord::pool& p = pool();
  auto f = p.submit([]() -> int { throw std::domain_error("bad"); });
  EXPECT_THROW(f.get(), std::domain_error);
}

TEST(future, wait_for_times_out_then_becomes_ready) {
  fjord::pool p(fjord::pool_options{.workers = 1});
  std::atomic<bool> release{false};
  auto f = p.submit([&] {
    while (!release.load()) {
      std::this_thread::sleep_for(100us);
    }
    return 3;
  });
  EXPECT_EQ(f.wait_for(2ms), std::future_status::timeout);
  EXPECT_FALSE(f.ready());
  release = true;
  EXPECT_EQ(f.wait_for(10s), std::future_status::ready);
  EXPECT_TRUE(f.ready());
  EXPECT_EQ(f.get(), 3);
}

TEST(future, invalid_future_throws_no_state) {
  fjord::future<int> f;
  EXPECT_FALSE(f.valid());
  EXPECT_THROW(f.wait(), std::future_error);
}

TEST(future, outlives_its_pool) {
  fjord::future<int> f;
  {
    fjord::pool p(fjord::pool_options{.workers = 1});
    f = p.submit([] { return 11; });
  }
  EXPECT_TRUE(f.ready());
  EXPECT_EQ(f.get(), 11);
}

TEST(future, waiting_inside_a_worker_helps) {
  // One worker: waiting on a future of the same pool must run it, not block.
  fjord::pool p(fjord::pool_options{.workers = 1});
  const int r = p.call([&] {
    auto inner = p.submit([] { return 21; });
    return inner.get() * 2;
  });
  EXPECT_EQ(r, 42);
}

TEST(future, timed_wait_inside_a_worker_helps) {
  // One worker: the job sits on the waiting worker's own deque; a timed
  // wait that only slept would time out forever.
  fjord::pool p(fjord::pool_options{.workers = 1});
  const int r = p.call([&] {
    auto inner = p.submit([] { return 5; });
    int spins = 0;
    while (inner.wait_for(1ms) == std::future_status::timeout) {
      ++spins;
    }
    return inner.get() + (spins > 1000 ? 100 : 0);
  });
  EXPECT_EQ(r, 5);
}

TEST(future, wait_until_the_end_of_time_inside_a_worker) {
  // time_point::max() means no deadline, not an overflow into the past.
  fjord::pool p(fjord::pool_options{.workers = 1});
  const auto status = p.call([&] {
    auto inner = p.submit([] { return 1; });
    return inner.wait_until(std::chrono::steady_clock::time_point::max());
  });
  EXPECT_EQ(status, std::future_status::ready);
}

TEST(future, timed_wait_inside_a_worker_times_out) {
  fjord::pool p(fjord::pool_options{.workers = 2});
  std::atomic<bool> release{false};
  std::atomic<bool> started{false};
  auto slow = p.submit([&] {
    started = true;
    while (!release.load()) {
      std::this_thread::sleep_for(100us);
    }
  });
  // Running on one worker before the other waits, or the waiter could pick
  // it up while helping and block on it.
  while (!started.load()) {
    std::this_thread::yield();
  }
  const auto status = p.call([&] {
    // From a worker of the same pool, the job running elsewhere: times out.
    return slow.wait_for(2ms);
  });
  EXPECT_EQ(status, std::future_status::timeout);
  release = true;
  slow.get();
}

TEST_P(future_on_pools, dropped_without_get_is_freed) {
  fjord::pool& p = pool();
  for (int i = 0; i < 1000; ++i) {
    static_cast<void>(p.submit([] { return std::vector<int>(100); }));
  }
  SUCCEED();  // ASan reports a leak if a state is never freed
}

TEST_P(future_on_pools, many_submitters) {
  fjord::pool& p = pool();
  std::vector<std::thread> threads;
  std::atomic<long> sum{0};
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      std::vector<fjord::future<int>> fs;
      for (int i = 0; i < 2000; ++i) {
        fs.push_back(p.submit([i, t] { return i + t; }));
      }
      for (auto& f : fs) {
        sum.fetch_add(f.get());
      }
    });
  }
  for (auto& t : threads) {
    t.join();
  }
  EXPECT_EQ(sum.load(), 4L * (1999L * 2000L / 2) + 2000L * (0 + 1 + 2 + 3));
}

INSTANTIATE_TEST_SUITE_P(workers, future_on_pools, fjord_test::worker_counts,
                         fjord_test::worker_count_name);

}  // namespace
