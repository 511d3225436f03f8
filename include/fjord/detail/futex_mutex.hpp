#pragma once

#include <atomic>
#include <cstdint>

#include "fjord/detail/config.hpp"
#include "fjord/detail/futex.hpp"

namespace fjord::detail {

// A mutex for short critical sections that are often contended by exactly
// the threads that would run next (a channel's producer and consumer):
// spins briefly, as Go's runtime lock does, before sleeping on a futex.
// The state machine is Drepper's "mutex3" ("Futexes Are Tricky", 2011):
// 0 unlocked, 1 locked, 2 locked with possible sleepers; unlock wakes one
// sleeper only from state 2. A std::mutex sleeps at once when contended,
// which on two cores turns each hand-off into a pair of system calls.
// Meets Lockable, for std::lock_guard.
class futex_mutex {
 public:
  void lock() noexcept {
    std::uint32_t c = 0;
    // Acquire: the critical section happens after the previous owner's.
    if (state_.compare_exchange_strong(c, 1, std::memory_order_acquire, std::memory_order_relaxed))
        [[likely]] {
      return;
    }
    lock_contended();
  }

  bool try_lock() noexcept {
    std::uint32_t c = 0;
    return state_.compare_exchange_strong(c, 1, std::memory_order_acquire,
                                          std::memory_order_relaxed);
  }

  void unlock() noexcept {
    // Release: our critical section happens before the next owner's.
    if (state_.exchange(0, std::memory_order_release) == 2) [[unlikely]] {
      futex_wake_one(&state_);
    }
  }

 private:
  void lock_contended() noexcept {
    for (int spin = 0; spin < 32; ++spin) {
      cpu_relax();
      std::uint32_t c = state_.load(std::memory_order_relaxed);
      if (c == 0 && state_.compare_exchange_weak(c, 1, std::memory_order_acquire,
                                                 std::memory_order_relaxed)) {
        return;
      }
    }
    // Mark "sleepers possible" and sleep while it stays locked; whoever
    // takes the lock from here takes it in state 2, so its unlock wakes
    // the next sleeper (a spurious wake-up at worst).
    while (state_.exchange(2, std::memory_order_acquire) != 0) {
      futex_wait(&state_, 2);
    }
  }

  std::atomic<std::uint32_t> state_{0};
};

}  // namespace fjord::detail
