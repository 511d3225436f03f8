#pragma once

#include <coroutine>
#include <cstddef>
#include <mutex>
#include <stdexcept>
#include <string>

#include "fjord/detail/parking_awaiter.hpp"
#include "fjord/detail/waiter_list.hpp"

namespace fjord {

// A counting semaphore for coroutines: acquire() parks the coroutine while
// the count is zero. FIFO: release() hands units straight to the longest
// waiters before anything is added to the count, so waiters are never
// overtaken by a later try_acquire().
class async_semaphore {
 public:
  explicit async_semaphore(std::ptrdiff_t initial) : count_(initial) {
    if (initial < 0) {
      throw std::invalid_argument("fjord::async_semaphore: initial count " +
                                  std::to_string(initial) + " is negative");
    }
  }
  async_semaphore(const async_semaphore&) = delete;
  async_semaphore& operator=(const async_semaphore&) = delete;

  bool try_acquire() noexcept {
    std::lock_guard lock(guard_);
    return try_take_locked();
  }

  // Adds n units, waking up to n waiters. Throws std::invalid_argument for
  // a negative n.
  void release(std::ptrdiff_t n = 1) {
    if (n < 0) {
      throw std::invalid_argument("fjord::async_semaphore::release: count " + std::to_string(n) +
                                  " is negative");
    }
    detail::waiter_list woken;
    {
      std::lock_guard lock(guard_);
      while (n > 0) {
        detail::parked_coroutine* w = waiters_.pop_front();
        if (w == nullptr) {
          break;
        }
        woken.push_back(*w);
        --n;
      }
      count_ += n;
    }
    woken.wake_all();
  }

  std::ptrdiff_t available() const noexcept {
    std::lock_guard lock(guard_);
    return count_;
  }

  using acquire_awaiter = detail::parking_awaiter<async_semaphore>;

  // co_await s.acquire(): takes one unit, waiting for it if need be.
  [[nodiscard]] acquire_awaiter acquire() noexcept { return acquire_awaiter(*this); }

 private:
  friend detail::parking_awaiter<async_semaphore>;
  bool try_take_locked() noexcept {
    if (count_ == 0) {
      return false;
    }
    --count_;
    return true;
  }

  mutable std::mutex guard_;  // never held across a suspension
  std::ptrdiff_t count_;
  detail::waiter_list waiters_;
};

}  // namespace fjord
