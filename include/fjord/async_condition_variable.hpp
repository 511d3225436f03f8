#pragma once

#include <coroutine>
#include <cstdio>
#include <exception>
#include <mutex>
#include <stdexcept>

#include "fjord/async_mutex.hpp"
#include "fjord/detail/waiter_list.hpp"
#include "fjord/task.hpp"

namespace fjord {

/// A condition variable for coroutines, used with an async_mutex. wait()
/// releases the mutex and suspends the coroutine in one step (a notify after the
/// release cannot be missed), then re-acquires the mutex before returning.
/// As with std::condition_variable, check the condition in a loop, or use
/// the predicate form.
class async_condition_variable {
 public:
  async_condition_variable() = default;
  async_condition_variable(const async_condition_variable&) = delete;
  async_condition_variable& operator=(const async_condition_variable&) = delete;

  /// Resumes the longest-waiting coroutine, if any.
  void notify_one() noexcept {
    detail::waiting_coroutine* w = nullptr;
    {
      std::lock_guard lock(guard_);
      w = waiters_.pop_front();
    }
    if (w != nullptr) {
      w->wake();
    }
  }

  /// Resumes every waiting coroutine.
  void notify_all() noexcept {
    detail::waiter_list woken;
    {
      std::lock_guard lock(guard_);
      woken = waiters_.take_all();
    }
    woken.wake_all();
  }

  /// Precondition: the calling coroutine holds m.
  task<void> wait(async_mutex& m) {
    co_await release_and_wait_awaiter(*this, m);
    co_await m.lock();
  }

  /// Waits until pred() holds: checks it first, and again after every wake-up, holding m each time.
  template <class Predicate>
  task<void> wait(async_mutex& m, Predicate pred) {
    while (!pred()) {
      co_await wait(m);
    }
  }

 private:
  class release_and_wait_awaiter {
   public:
    release_and_wait_awaiter(async_condition_variable& cv, async_mutex& m) noexcept
        : cv_(cv), mutex_(m) {}
    bool await_ready() const noexcept { return false; }
    void await_suspend(std::coroutine_handle<> h) {
      // Copies: once the waiter is listed it may be woken and its frame (with
      // this awaiter) freed before the unlock below.
      async_mutex& m = mutex_;
      if (!m.is_locked()) {
        throw std::logic_error("fjord::async_condition_variable::wait: the mutex is not locked");
      }
      {
        std::lock_guard lock(cv_.guard_);
        waiter_.begin_wait(h);
        cv_.waiters_.push_back(waiter_);
      }
      if (!m.try_unlock()) {
        // The caller broke the precondition (it did not own m) and someone
        // else unlocked m meanwhile; the waiter is already listed, so there
        // is no way to report it without a wake-up of a dead frame.
        std::fputs("fjord::async_condition_variable::wait: the mutex was not held\n", stderr);
        std::terminate();
      }
    }
    void await_resume() const noexcept {}

   private:
    async_condition_variable& cv_;
    async_mutex& mutex_;
    detail::waiting_coroutine waiter_;
  };

  std::mutex guard_;  ///< never held across a suspension
  detail::waiter_list waiters_;
};

}  // namespace fjord
