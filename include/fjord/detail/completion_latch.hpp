#pragma once

#include <atomic>
#include <cstdint>
#include <stdexcept>

#include "fjord/detail/assert.hpp"

#include "fjord/detail/futex.hpp"

namespace fjord::detail {

// A countdown that one waiter (a worker of a pool, or any other thread) can
// sleep on, built so that the thread bringing the count to zero never touches
// the latch afterwards: the waiter may destroy it the moment it sees zero.
//
// One 64-bit word holds the count (low half, also the futex word) and who
// waits (high half: 0 nobody, 1..n worker index + 1, ~0 a foreign thread
// sleeping on the futex). Because count_down() learns the waiter from the
// value its own fetch_sub returns, it needs nothing else from the latch:
// it wakes a worker through the pool (which outlives the latch) or calls
// futex_wake on the address, harmless even if the memory is gone.
class completion_latch {
 public:
  static constexpr std::uint32_t no_waiter = 0;
  static constexpr std::uint32_t foreign_waiter = ~std::uint32_t{0};

  explicit completion_latch(std::uint32_t count = 0, std::uint32_t waiter = no_waiter) noexcept
      : word_(pack(count, waiter)) {}

  struct raw_word {
    std::uint64_t value;
  };
  // From a word made by pack() ahead of time (a worker's join word).
  explicit completion_latch(raw_word w) noexcept : word_(w.value) {}

  // The count's top bit marks a finish hold (finish_hold()): the count
  // proper has 31 bits.
  static constexpr std::uint32_t hold_bit = std::uint32_t{1} << 31;
  static constexpr std::uint32_t max_count = hold_bit - 1;

  // Returns the count before the addition (with hold_bit, if a hold is set).
  std::uint32_t add(std::uint32_t n = 1) {
    const std::uint64_t old = word_.fetch_add(n, std::memory_order_relaxed);
    if ((count_of(old) & max_count) + std::uint64_t{n} > max_count) {
      word_.fetch_sub(n, std::memory_order_relaxed);
      throw std::length_error("fjord: more than 2147483647 pending children in one group");
    }
    return count_of(old);
  }

  // A finish hold: one more count, flagged by hold_bit, taken once. Children
  // counting down with count_down_held() learn which of them leaves only the
  // hold: that one runs the finishing action, then release_hold() drops the
  // hold (and the flag) and wakes the waiter if that was the last count.
  // Returns the count before the hold, so the caller sees whether no child
  // was pending (then it finishes itself). acq_rel: the caller's stores
  // before taking the hold (the action) reach the finishing child, whose
  // count_down_held() reads this in the RMW chain.
  std::uint32_t take_hold() noexcept {
    return count_of(word_.fetch_add(hold_bit + 1, std::memory_order_acq_rel));
  }

  struct held_count_down {
    std::uint32_t waiter;  // to wake, as count_down() returns it
    bool finish;           // only the hold is left: run the finishing action
  };
  [[nodiscard]] held_count_down count_down_held() noexcept {
    const std::uint64_t old = word_.fetch_sub(1, std::memory_order_acq_rel);
    FJORD_ASSERT((count_of(old) & max_count) != 0, "completion_latch: counted down below zero");
    if (count_of(old) == hold_bit + 2) {
      return {no_waiter, true};
    }
    return {count_of(old) == 1 ? waiter_of(old) : no_waiter, false};
  }

  // Drops the hold; returns the waiter to wake, as count_down() does.
  [[nodiscard]] std::uint32_t release_hold() noexcept {
    const std::uint64_t old = word_.fetch_sub(hold_bit + 1, std::memory_order_acq_rel);
    FJORD_ASSERT((count_of(old) & hold_bit) != 0 && (count_of(old) & max_count) != 0,
                 "completion_latch: released a hold it does not have");
    return count_of(old) == hold_bit + 1 ? waiter_of(old) : no_waiter;
  }

  // Returns the waiter to wake (no_waiter if none, or count not yet zero).
  // acq_rel: release publishes the child's results to the waiter; acquire
  // makes the waiter's registration (and the data it wrote) visible here.
  [[nodiscard]] std::uint32_t count_down() noexcept {
    const std::uint64_t old = word_.fetch_sub(1, std::memory_order_acq_rel);
    FJORD_ASSERT((count_of(old) & max_count) != 0, "completion_latch: counted down below zero");
    return count_of(old) == 1 ? waiter_of(old) : no_waiter;
  }

  // n completions at once (a waiter settling the children it ran itself;
  // see task_group). Returns the waiter to wake, as count_down() does.
  [[nodiscard]] std::uint32_t count_down_by(std::uint32_t n) noexcept {
    const std::uint64_t old = word_.fetch_sub(n, std::memory_order_acq_rel);
    FJORD_ASSERT((count_of(old) & max_count) >= n, "completion_latch: counted down below zero");
    return count_of(old) == n ? waiter_of(old) : no_waiter;
  }

  bool done() const noexcept { return count_of(word_.load(std::memory_order_acquire)) == 0; }
  std::uint32_t count() const noexcept { return count_of(word_.load(std::memory_order_acquire)); }

  // Registers the waiter; returns true if the count was already zero.
  bool set_waiter(std::uint32_t waiter) noexcept {
    // acquire: on "already zero" the caller reads what the completers wrote.
    std::uint64_t old = word_.load(std::memory_order_acquire);
    std::uint64_t desired = 0;
    do {
      if (count_of(old) == 0) {
        return true;
      }
      desired = pack(count_of(old), waiter);
    } while (!word_.compare_exchange_weak(old, desired, std::memory_order_acq_rel,
                                          std::memory_order_acquire));
    return false;
  }

  // Clears the waiter after the count reached zero (latch reuse).
  void reset_waiter() noexcept { word_.fetch_and(0xFFFF'FFFFu, std::memory_order_relaxed); }

  // For a foreign waiter after set_waiter(foreign_waiter): sleeps until zero.
  void wait_foreign() const noexcept {
    while (true) {
      const std::uint32_t c = count_of(word_.load(std::memory_order_acquire));
      if (c == 0) {
        return;
      }
      futex_wait(futex_address(), c);
    }
  }

  // Wakes a foreign waiter. Take the address before count_down(): the call is
  // valid even if the latch was destroyed meanwhile.
  static void wake_foreign(const void* futex_address) noexcept { futex_wake_all(futex_address); }

  // The count is the low half: little-endian puts it at the word's address.
  const void* futex_address() const noexcept { return &word_; }

 private:
  static constexpr std::uint64_t pack(std::uint32_t count, std::uint32_t waiter) noexcept {
    return (std::uint64_t{waiter} << 32) | count;
  }
  static constexpr std::uint32_t count_of(std::uint64_t w) noexcept {
    return static_cast<std::uint32_t>(w);
  }
  static constexpr std::uint32_t waiter_of(std::uint64_t w) noexcept {
    return static_cast<std::uint32_t>(w >> 32);
  }

#if !defined(__BYTE_ORDER__) || __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "completion_latch sleeps on the low half of its word: little-endian only"
#endif
  std::atomic<std::uint64_t> word_;
};

}  // namespace fjord::detail
