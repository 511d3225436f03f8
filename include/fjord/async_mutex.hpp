#pragma once

#include <coroutine>
#include <mutex>
#include <stdexcept>
#include <utility>

#include "fjord/detail/primitive_awaiter.hpp"
#include "fjord/detail/waiter_list.hpp"

namespace fjord {

class async_mutex;

/// Owns a lock of an async_mutex and unlocks it when destroyed.
class [[nodiscard]] async_lock_guard {
 public:
  async_lock_guard() noexcept = default;
  /// Takes over a lock the calling coroutine already holds (from try_lock(), say).
  explicit async_lock_guard(async_mutex& m, std::adopt_lock_t) noexcept : mutex_(&m) {}
  /// Moves the lock; `o` no longer owns it.
  async_lock_guard(async_lock_guard&& o) noexcept : mutex_(std::exchange(o.mutex_, nullptr)) {}
  /// Unlocks what this guard held, then takes over `o`'s lock.
  async_lock_guard& operator=(async_lock_guard&& o) noexcept;
  async_lock_guard(const async_lock_guard&) = delete;
  async_lock_guard& operator=(const async_lock_guard&) = delete;
  ~async_lock_guard();

  /// Whether this guard holds a lock (false once moved from or unlocked).
  bool owns_lock() const noexcept { return mutex_ != nullptr; }
  /// The mutex whose lock this guard holds, or nullptr.
  async_mutex* mutex() const noexcept { return mutex_; }
  /// Unlocks early; throws std::logic_error if this guard holds no lock.
  void unlock();

 private:
  async_mutex* mutex_ = nullptr;
};

/// A mutex for coroutines: a coroutine that finds it locked waits (no
/// thread blocks) and resumes, owning the mutex, when its turn comes. FIFO:
/// unlock() hands the mutex straight to the longest waiter, so nobody can
/// barge in ahead of it. A woken waiter continues on the pool it was
/// running on (off a pool: on the unlocking thread).
///
///   auto guard = co_await m.scoped_lock();
class async_mutex {
 public:
  async_mutex() = default;
  async_mutex(const async_mutex&) = delete;
  async_mutex& operator=(const async_mutex&) = delete;
  ~async_mutex() = default;

  /// Takes the lock if it is free, without suspending; true on success.
  bool try_lock() noexcept {
    std::lock_guard lock(guard_);
    return try_take_locked();
  }

  /// A snapshot: true while some coroutine owns the mutex.
  bool is_locked() const noexcept {
    std::lock_guard lock(guard_);
    return locked_;
  }

  /// Releases the mutex, or hands it to the next waiter. Throws
  /// std::logic_error if the mutex is not locked.
  void unlock() {
    if (!try_unlock()) {
      throw std::logic_error("fjord::async_mutex::unlock: the mutex is not locked");
    }
  }

  /// As unlock(), but returns false instead of throwing.
  bool try_unlock() noexcept {
    detail::waiting_coroutine* next = nullptr;
    {
      std::lock_guard lock(guard_);
      if (!locked_) {
        return false;
      }
      next = waiters_.pop_front();
      locked_ = next != nullptr;  // ownership passes to `next`
    }
    if (next != nullptr) {
      next->wake();
    }
    return true;
  }

  /// What lock() returns; co_await it.
  using lock_awaiter = detail::primitive_awaiter<async_mutex>;

  /// What scoped_lock() returns: co_await it for an async_lock_guard.
  class scoped_lock_awaiter : public lock_awaiter {
   public:
    using lock_awaiter::lock_awaiter;
    /// The guard that owns the lock just taken.
    async_lock_guard await_resume() const noexcept {
      return async_lock_guard(primitive_, std::adopt_lock);
    }
  };

  /// co_await m.lock(): acquires the mutex (unlock() it yourself).
  [[nodiscard]] lock_awaiter lock() noexcept { return lock_awaiter(*this); }
  /// co_await m.scoped_lock(): acquires it and yields a guard that unlocks.
  [[nodiscard]] scoped_lock_awaiter scoped_lock() noexcept { return scoped_lock_awaiter(*this); }

 private:
  friend detail::primitive_awaiter<async_mutex>;
  bool try_take_locked() noexcept {
    if (locked_) {
      return false;
    }
    locked_ = true;
    return true;
  }

  mutable std::mutex guard_;  ///< held for a few instructions, never across a suspension
  bool locked_ = false;
  detail::waiter_list waiters_;
};

inline async_lock_guard& async_lock_guard::operator=(async_lock_guard&& o) noexcept {
  if (this != &o) {
    if (mutex_ != nullptr) {
      mutex_->try_unlock();  // owned, so it cannot fail
    }
    mutex_ = std::exchange(o.mutex_, nullptr);
  }
  return *this;
}

inline async_lock_guard::~async_lock_guard() {
  if (mutex_ != nullptr) {
    mutex_->try_unlock();  // owned, so it cannot fail
  }
}

inline void async_lock_guard::unlock() {
  if (mutex_ == nullptr) {
    throw std::logic_error("fjord::async_lock_guard::unlock: the guard owns no lock");
  }
  std::exchange(mutex_, nullptr)->unlock();
}

}  // namespace fjord
