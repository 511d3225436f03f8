#pragma once

#include <atomic>
#include <cstdint>
#include <utility>

#include "fjord/detail/chrono.hpp"
#include "fjord/detail/futex.hpp"

namespace fjord::detail {

// Wakes the worker waiting in the reactor (reactor.cpp).
void interrupt_reactor() noexcept;

// A one-token binary semaphore per thread, in the shape of Rust's futex-based
// thread parker: unpark() leaves a token (at most one), park() consumes it or
// sleeps until one arrives. Callers always re-check their condition after
// park() returns, so a stale token only costs one extra loop iteration.
class parker {
 public:
  void park() noexcept {
    if (try_consume()) {
      return;
    }
    // Announce the sleep. If a token raced in between, take it and go.
    if (state_.exchange(parked, std::memory_order_acquire) == notified) {
      state_.store(empty, std::memory_order_relaxed);
      return;
    }
    while (true) {
      futex_wait(&state_, parked);
      if (try_consume()) {
        return;
      }
    }
  }

  // Returns true if a token was consumed, false on timeout.
  bool park_for(std::chrono::nanoseconds timeout) noexcept {
    if (try_consume()) {
      return true;
    }
    if (state_.exchange(parked, std::memory_order_acquire) == notified) {
      state_.store(empty, std::memory_order_relaxed);
      return true;
    }
    futex_wait_for(&state_, parked, timeout);
    // Either a token arrived (notified) or we give up: leave `empty` behind.
    return state_.exchange(empty, std::memory_order_acquire) == notified;
  }

  // Parks by calling wait(), a wait in the reactor, instead of sleeping on
  // the futex; unpark() interrupts that wait (docs/io.md, "Who polls").
  template <class Wait>
  void park_polling(Wait&& wait) noexcept {
    if (try_consume()) {
      return;
    }
    if (state_.exchange(polling, std::memory_order_acquire) == notified) {
      state_.store(empty, std::memory_order_relaxed);
      return;
    }
    std::forward<Wait>(wait)();
    // Consumes a token that came meanwhile (its interrupt may still be
    // pending in the reactor: the next poller's wait then returns once
    // early, which every park loop tolerates).
    state_.exchange(empty, std::memory_order_acquire);
  }

  void unpark() noexcept {
    // Release pairs with the acquire in park(): what the unparker wrote
    // before unpark() is visible after park() returns.
    const std::uint32_t previous = state_.exchange(notified, std::memory_order_release);
    if (previous == parked) {
      futex_wake_one(&state_);
    } else if (previous == polling) {
      interrupt_reactor();
    }
  }

  bool try_consume() noexcept {
    std::uint32_t expected = notified;
    return state_.compare_exchange_strong(expected, empty, std::memory_order_acquire,
                                          std::memory_order_relaxed);
  }

 private:
  static constexpr std::uint32_t empty = 0;
  static constexpr std::uint32_t notified = 1;
  static constexpr std::uint32_t parked = 2;
  static constexpr std::uint32_t polling = 3;  // waiting in the reactor

  std::atomic<std::uint32_t> state_{empty};
};

}  // namespace fjord::detail
