#include "fjord/detail/channel_ring.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <cstddef>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

namespace {

using fjord::detail::channel_ring;
using fjord::detail::ring_result;

// Counts live instances, so that a value destroyed twice or never shows.
struct counted {
  static inline std::atomic<int> live{0};
  int value = 0;
  explicit counted(int v) noexcept : value(v) { live.fetch_add(1); }
  counted(counted&& o) noexcept : value(o.value) { live.fetch_add(1); }
  counted(const counted&) = delete;
  counted& operator=(const counted&) = delete;
  counted& operator=(counted&&) = delete;
  ~counted() { live.fetch_sub(1); }
};

// Capacities that are and are not powers of two wrap around over many laps
// and keep FIFO order and exact fullness.
TEST(channel_ring, fills_to_exactly_its_capacity_and_keeps_order_over_many_laps) {
  for (std::size_t capacity : {1U, 2U, 3U, 5U, 7U, 8U, 1000U}) {
    channel_ring<int> ring(capacity);
    int next_in = 0;
    int next_out = 0;
    for (int lap = 0; lap < 50; ++lap) {
      // Fill (a different phase each lap: one fewer pop than pushes).
      for (;;) {
        int v = next_in;
        if (ring.try_push(v) != ring_result::done) {
          break;
        }
        ++next_in;
      }
      ASSERT_EQ(static_cast<std::size_t>(next_in - next_out), capacity) << "capacity " << capacity;
      int extra = -1;
      ASSERT_EQ(ring.try_push(extra), ring_result::no_room);  // open and full
      ASSERT_EQ(ring.locked_size(), capacity);
      const std::size_t drain = capacity > 1 ? capacity - 1 : 1;
      for (std::size_t i = 0; i < drain; ++i) {
        std::optional<int> out;
        ASSERT_EQ(ring.try_pop(out), ring_result::done);
        ASSERT_EQ(*out, next_out) << "capacity " << capacity;
        ++next_out;
      }
    }
    std::optional<int> out;
    while (ring.try_pop(out) == ring_result::done) {
      ASSERT_EQ(*out, next_out++);
    }
    EXPECT_EQ(next_in, next_out);
    EXPECT_EQ(ring.locked_size(), 0U);
  }
}

// With the gate closed the lock-free operations fail and the locked ones
// work on the same FIFO; opening it hands the ring back.
TEST(channel_ring, a_closed_gate_turns_away_the_fast_paths) {
  channel_ring<int> ring(3);
  int v = 1;
  ASSERT_EQ(ring.try_push(v), ring_result::done);
  ring.close();
  v = 2;
  EXPECT_EQ(ring.try_push(v), ring_result::gated);
  std::optional<int> out;
  EXPECT_EQ(ring.try_pop(out), ring_result::gated);
  EXPECT_FALSE(out.has_value());
  EXPECT_TRUE(ring.locked_push(v));
  v = 3;
  EXPECT_TRUE(ring.locked_push(v));
  v = 4;
  EXPECT_FALSE(ring.locked_push(v));  // full
  EXPECT_EQ(ring.locked_size(), 3U);
  ASSERT_TRUE(ring.locked_pop(out));
  EXPECT_EQ(*out, 1);
  ring.open();
  ASSERT_EQ(ring.try_push(v), ring_result::done);
  for (int expected : {2, 3, 4}) {
    ASSERT_EQ(ring.try_pop(out), ring_result::done);
    EXPECT_EQ(*out, expected);
  }
  EXPECT_EQ(ring.try_pop(out), ring_result::no_room);  // open and empty
  ring.close();
  EXPECT_FALSE(ring.locked_pop(out));
}

TEST(channel_ring, values_left_in_it_are_destroyed_once) {
  {
    channel_ring<counted> ring(5);
    for (int i = 0; i < 12; ++i) {  // wraps: 5 in, 3 out, ...
      counted c(i);
      if (ring.try_push(c) != ring_result::done) {
        std::optional<counted> out;
        ASSERT_EQ(ring.try_pop(out), ring_result::done);
        ASSERT_EQ(ring.try_push(c), ring_result::done);
      }
    }
    EXPECT_EQ(counted::live.load(), 5);
  }
  EXPECT_EQ(counted::live.load(), 0);
}

// Fast producers and consumers race a third party that closes the gate
// under a mutex, works the ring with the locked operations, and opens it
// again (what a channel's lock does): every value comes out exactly once,
// and one producer's values come out in order.
TEST(channel_ring, fast_and_locked_operations_racing_lose_and_double_nothing) {
  constexpr int producers = 2;
  constexpr int per_producer = 100000;
  channel_ring<int> ring(7);
  std::mutex lock;
  std::vector<std::atomic<int>> seen(std::size_t{producers} * per_producer);
  std::atomic<int> received{0};
  std::atomic<bool> out_of_order{false};
  std::vector<std::thread> threads;
  threads.reserve(5);
  for (int id = 0; id < producers; ++id) {
    threads.emplace_back([&, id] {
      for (int i = 0; i < per_producer;) {
        int v = id * per_producer + i;
        if (ring.try_push(v) == ring_result::done) {
          ++i;
          continue;
        }
        const std::lock_guard guard(lock);
        ring.close();
        if (ring.locked_push(v)) {
          ++i;
        }
        ring.open();
      }
    });
  }
  auto take = [&](std::optional<int>& out, std::vector<int>& last) {
    const int v = *out;
    seen[static_cast<std::size_t>(v)].fetch_add(1);
    const int from = v / per_producer;
    if (v <= last[static_cast<std::size_t>(from)]) {
      out_of_order = true;
    }
    last[static_cast<std::size_t>(from)] = v;
    received.fetch_add(1);
    out.reset();
  };
  for (int c = 0; c < 2; ++c) {
    threads.emplace_back([&] {
      std::vector<int> last(producers, -1);
      std::optional<int> out;
      while (received.load() < producers * per_producer) {
        if (ring.try_pop(out) == ring_result::done) {
          take(out, last);
        }
      }
    });
  }
  threads.emplace_back([&] {  // the lock holder
    std::vector<int> last(producers, -1);
    std::optional<int> out;
    while (received.load() < producers * per_producer) {
      const std::lock_guard guard(lock);
      ring.close();
      (void)ring.locked_size();
      if (ring.locked_pop(out)) {
        take(out, last);
      }
      ring.open();
    }
  });
  for (std::thread& t : threads) {
    t.join();
  }
  for (std::size_t i = 0; i < seen.size(); ++i) {
    ASSERT_EQ(seen[i].load(), 1) << "value " << i;
  }
  EXPECT_FALSE(out_of_order.load());
}

}  // namespace
