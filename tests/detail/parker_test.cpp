#include "fjord/detail/parker.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>

namespace {

using fjord::detail::parker;

TEST(parker, token_before_park_returns_at_once) {
  parker p;
  p.unpark();
  p.park();  // must not block
  SUCCEED();
}

TEST(parker, tokens_do_not_accumulate) {
  parker p;
  p.unpark();
  p.unpark();
  p.park();
  EXPECT_FALSE(p.park_for(std::chrono::milliseconds(1)));
}

TEST(parker, park_for_times_out) {
  parker p;
  const auto start = std::chrono::steady_clock::now();
  EXPECT_FALSE(p.park_for(std::chrono::milliseconds(5)));
  EXPECT_GE(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(4));
}

TEST(parker, unpark_wakes_a_sleeping_thread) {
  parker p;
  std::atomic<bool> woke{false};
  std::thread t([&] {
    p.park();
    woke = true;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(10));
  p.unpark();
  t.join();
  EXPECT_TRUE(woke.load());
}

// Ping-pong: each side parks until the other unparks it; a lost wake-up
// would hang the test.
TEST(parker, stress_ping_pong) {
  parker a, b;
  std::atomic<int> turn{0};
  constexpr int rounds = 20000;
  std::thread t([&] {
    for (int i = 0; i < rounds; ++i) {
      while (turn.load(std::memory_order_acquire) != 1) {
        b.park();
      }
      turn.store(0, std::memory_order_release);
      a.unpark();
    }
  });
  for (int i = 0; i < rounds; ++i) {
    turn.store(1, std::memory_order_release);
    b.unpark();
    while (turn.load(std::memory_order_acquire) != 0) {
      a.park();
    }
  }
  t.join();
  SUCCEED();
}

}  // namespace
