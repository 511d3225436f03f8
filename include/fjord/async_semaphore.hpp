#pragma once

#include <coroutine>
#include <cstddef>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <stop_token>
#include <string>
#include <type_traits>
#include <utility>

#include "fjord/detail/primitive_awaiter.hpp"
#include "fjord/detail/promise_stop_token.hpp"
#include "fjord/detail/waiter_list.hpp"

namespace fjord {

/// A counting semaphore for coroutines: acquire() suspends the coroutine while
/// the count is zero. FIFO: release() hands units straight to the longest
/// waiters before anything is added to the count, so waiters are never
/// overtaken by a later try_acquire().
class async_semaphore {
 public:
  /// Starts with `initial` permits; throws std::invalid_argument, naming it, if it is negative.
  explicit async_semaphore(std::ptrdiff_t initial) : count_(initial) {
    if (initial < 0) {
      throw std::invalid_argument("fjord::async_semaphore: initial count " +
                                  std::to_string(initial) + " is negative");
    }
  }
  async_semaphore(const async_semaphore&) = delete;
  async_semaphore& operator=(const async_semaphore&) = delete;

  /// Takes a permit if one is free, without suspending; true on success.
  bool try_acquire() noexcept {
    std::lock_guard lock(guard_);
    return try_take_locked();
  }

  /// Adds n units, waking up to n waiters. Throws std::invalid_argument for
  /// a negative n.
  void release(std::ptrdiff_t n = 1) {
    if (n < 0) {
      throw std::invalid_argument("fjord::async_semaphore::release: count " + std::to_string(n) +
                                  " is negative");
    }
    release_unchecked(n);
  }

  /// Permits free right now (a snapshot).
  std::ptrdiff_t available() const noexcept {
    std::lock_guard lock(guard_);
    return count_;
  }

  /// What acquire() returns; co_await it.
  using acquire_awaiter = detail::primitive_awaiter<async_semaphore>;

  /// co_await s.acquire(): takes one unit, waiting for it if need be, however
  /// long; a stop request does not end the wait (see scoped_acquire()).
  [[nodiscard]] acquire_awaiter acquire() noexcept { return acquire_awaiter(*this); }

  class permit_awaiter;
  /// co_await s.scoped_acquire(): takes one unit and yields a permit that
  /// gives it back when destroyed. The wait ends early when a stop is
  /// requested on `token`, or, when none is given, on the stop token the
  /// coroutine runs under (current_stop_token()); the permit is then empty
  /// (false) and no unit was taken. A stop already requested does not wait.
  [[nodiscard]] permit_awaiter scoped_acquire(
      std::optional<std::stop_token> token = std::nullopt) noexcept;

 private:
  friend detail::primitive_awaiter<async_semaphore>;
  friend class async_semaphore_permit;

  /// release(n) without the check (n >= 0): what a permit gives back.
  void release_unchecked(std::ptrdiff_t n) noexcept {
    detail::waiter_list woken;
    {
      std::lock_guard lock(guard_);
      while (n > 0) {
        detail::waiting_coroutine* w = waiters_.pop_front();
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

  bool try_take_locked() noexcept {
    if (count_ == 0) {
      return false;
    }
    --count_;
    return true;
  }

  mutable std::mutex guard_;  ///< never held across a suspension
  std::ptrdiff_t count_;
  detail::waiter_list waiters_;
};

/// One unit of an async_semaphore, given back (release(1)) when the permit is
/// destroyed or release()d; empty when the acquisition was canceled.
class [[nodiscard]] async_semaphore_permit {
 public:
  async_semaphore_permit() noexcept = default;
  /// Owns one permit of s (nullptr: none).
  explicit async_semaphore_permit(async_semaphore* s) noexcept : semaphore_(s) {}
  /// Moves the permit; `o` no longer owns it.
  async_semaphore_permit(async_semaphore_permit&& o) noexcept
      : semaphore_(std::exchange(o.semaphore_, nullptr)) {}
  /// Releases this permit, then takes over `o`'s.
  async_semaphore_permit& operator=(async_semaphore_permit&& o) noexcept {
    if (this != &o) {
      release();
      semaphore_ = std::exchange(o.semaphore_, nullptr);
    }
    return *this;
  }
  async_semaphore_permit(const async_semaphore_permit&) = delete;
  async_semaphore_permit& operator=(const async_semaphore_permit&) = delete;
  ~async_semaphore_permit() { release(); }

  /// True when it holds a unit (the acquisition was not canceled).
  explicit operator bool() const noexcept { return semaphore_ != nullptr; }
  /// Gives the unit back now (no-op when empty).
  void release() noexcept {
    if (semaphore_ != nullptr) {
      std::exchange(semaphore_, nullptr)->release_unchecked(1);
    }
  }

 private:
  async_semaphore* semaphore_ = nullptr;
};

/// The awaiter of scoped_acquire(). Who decides the outcome, all under the
/// semaphore's guard: release() takes a listed waiter off the list and hands
/// it a unit; the stop callback takes it off the list (if still there) and
/// wakes it as canceled. Whoever takes it off the list wakes it, so it is
/// woken once. The stop callback is registered before the waiter is listed
/// (a callback that runs inline then only marks it canceled), and destroyed
/// in await_resume, which waits for one running on another thread.
class async_semaphore::permit_awaiter {
 public:
  /// Used by scoped_acquire(); the token, if any, can end the wait.
  permit_awaiter(async_semaphore& s, std::optional<std::stop_token> token) noexcept
      : semaphore_(s), token_(std::move(token)) {}
  permit_awaiter(const permit_awaiter&) = delete;
  permit_awaiter& operator=(const permit_awaiter&) = delete;

  /// Coroutine protocol: takes a free permit without suspending when it can.
  bool await_ready() noexcept {
    if (token_ && token_->stop_requested()) {
      state_ = state::canceled;
      return true;
    }
    std::lock_guard lock(semaphore_.guard_);
    if (semaphore_.try_take_locked()) {
      state_ = state::acquired;
      return true;
    }
    return false;
  }

  /// Coroutine protocol: queues the coroutine for a permit, or returns false if one came free or
  /// stop was already requested.
  template <class Promise>
  bool await_suspend(std::coroutine_handle<Promise> h) noexcept {
    if (!token_) {
      token_.emplace(detail::inherited_stop_token(h));
    }
    if (token_->stop_possible()) {
      on_stop_.emplace(*token_, canceler{this});  // may run inline: marks canceled
    }
    std::lock_guard lock(semaphore_.guard_);
    if (state_ == state::canceled) {
      return false;
    }
    if (semaphore_.try_take_locked()) {
      state_ = state::acquired;
      return false;
    }
    waiter_.begin_wait(h);
    semaphore_.waiters_.push_back(waiter_);
    state_ = state::listed;
    return true;  // nothing of *this is touched by us from here on
  }

  /// Coroutine protocol: the permit, or an empty one if stop was requested first.
  async_semaphore_permit await_resume() noexcept {
    on_stop_.reset();  // waits for a callback running on another thread
    // Listed and not canceled: release() handed us a unit.
    return async_semaphore_permit(state_ == state::canceled ? nullptr : &semaphore_);
  }

 private:
  enum class state : unsigned char { pending, listed, acquired, canceled };

  struct canceler {
    permit_awaiter* self;
    void operator()() const noexcept {
      bool wake = false;
      {
        std::lock_guard lock(self->semaphore_.guard_);
        if (self->state_ == state::pending) {
          self->state_ = state::canceled;  // not listed yet: it will not wait
        } else if (self->state_ == state::listed &&
                   self->semaphore_.waiters_.remove(self->waiter_)) {
          self->state_ = state::canceled;
          wake = true;
        }
      }
      if (wake) {
        self->waiter_.wake();
      }
    }
  };

  async_semaphore& semaphore_;
  std::optional<std::stop_token> token_;
  state state_ = state::pending;  ///< guarded by the semaphore's guard_ once suspending
  detail::waiting_coroutine waiter_;
  std::optional<std::stop_callback<canceler>> on_stop_;
};

inline async_semaphore::permit_awaiter async_semaphore::scoped_acquire(
    std::optional<std::stop_token> token) noexcept {
  return permit_awaiter(*this, std::move(token));
}

}  // namespace fjord
