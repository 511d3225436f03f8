#pragma once

#include <coroutine>
#include <cstddef>
#include <mutex>
#include <stdexcept>
#include <string>

#include "fjord/detail/primitive_awaiter.hpp"
#include "fjord/detail/waiter_list.hpp"

namespace fjord {

/// A single-use countdown for coroutines: wait() suspends until the count reaches
/// zero; count_down() from any thread or coroutine.
class async_latch {
 public:
  /// Starts at count; throws std::invalid_argument, naming it, if it is negative.
  explicit async_latch(std::ptrdiff_t count) : count_(count) {
    if (count < 0) {
      throw std::invalid_argument("fjord::async_latch: count " + std::to_string(count) +
                                  " is negative");
    }
  }
  async_latch(const async_latch&) = delete;
  async_latch& operator=(const async_latch&) = delete;

  /// Throws std::invalid_argument if n is negative or larger than the count
  /// left (naming both).
  void count_down(std::ptrdiff_t n = 1) {
    detail::waiter_list woken;
    {
      std::lock_guard lock(guard_);
      if (n < 0 || n > count_) {
        throw std::invalid_argument("fjord::async_latch::count_down: " + std::to_string(n) +
                                    " with a count of " + std::to_string(count_));
      }
      count_ -= n;
      if (count_ == 0) {
        woken = waiters_.take_all();
      }
    }
    woken.wake_all();
  }

  /// True once the count has reached zero (never suspends).
  bool try_wait() const noexcept {
    std::lock_guard lock(guard_);
    return count_ == 0;
  }

  /// What wait() returns; co_await it.
  using wait_awaiter = detail::primitive_awaiter<async_latch>;

  /// co_await l.wait(): returns once the count is zero.
  [[nodiscard]] wait_awaiter wait() noexcept { return wait_awaiter(*this); }

 private:
  friend detail::primitive_awaiter<async_latch>;
  bool try_take_locked() const noexcept { return count_ == 0; }

  mutable std::mutex guard_;  ///< never held across a suspension
  std::ptrdiff_t count_;
  detail::waiter_list waiters_;
};

}  // namespace fjord
