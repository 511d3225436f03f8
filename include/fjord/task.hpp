#pragma once

#include <coroutine>
#include <utility>

#include "fjord/detail/task_promise.hpp"
#include "fjord/detail/transfer.hpp"

namespace fjord {

/// A lazy coroutine producing a T (or void, or a reference). Nothing runs
/// until the task is awaited (or handed to sync_wait, spawn, when_all ...);
/// the awaiting coroutine is resumed by symmetric transfer when the task ends,
/// on whichever thread ended it. An exception leaving the body is stored and
/// rethrown at the co_await. Move-only; destroying a task that never ran (or
/// has finished) destroys its frame.
///
///   fjord::task<int> answer() { co_return 42; }
///   fjord::task<int> twice() { co_return 2 * co_await answer(); }
template <class T = void>
class [[nodiscard]] task {
 public:
  /// Coroutine protocol: the promise of a task's frame.
  using promise_type = detail::task_promise<T>;
  /// What co_await on the task returns.
  using value_type = T;

  task() noexcept = default;
  /// Moves the task; `other` becomes empty.
  task(task&& other) noexcept : handle_(std::exchange(other.handle_, {})) {}
  /// Destroys this task's frame (if not started) and takes over `other`'s.
  task& operator=(task&& other) noexcept {
    if (this != &other) {
      reset();
      handle_ = std::exchange(other.handle_, {});
    }
    return *this;
  }
  task(const task&) = delete;
  task& operator=(const task&) = delete;
  ~task() { reset(); }

  /// False for a default-constructed or moved-from task.
  explicit operator bool() const noexcept { return static_cast<bool>(handle_); }
  /// True once the body has run to its end (value or exception).
  bool done() const noexcept { return handle_ && handle_.done(); }

  /// co_await std::move(t) yields the value; co_await t (an lvalue) yields a
  /// reference to it, leaving it in the task.
  auto operator co_await() && { return awaiter<true>{{handle_}}; }
  /// co_await on an lvalue task: runs it and yields a reference to the
  /// result, which stays in the task.
  auto operator co_await() & { return awaiter<false>{{handle_}}; }

 private:
  friend promise_type;
  friend struct detail::task_access;
  explicit task(std::coroutine_handle<promise_type> h) noexcept : handle_(h) {}

  void reset() noexcept {
    if (handle_) {
      handle_.destroy();
      handle_ = {};
    }
  }

  template <bool Rvalue>
  struct awaiter : detail::completion_awaiter<T> {
    bool await_ready() const {
      if (!this->handle) [[unlikely]] {
        detail::throw_empty_task();
      }
      return this->handle.done();
    }
    decltype(auto) await_resume() const {
      if constexpr (Rvalue) {
        return std::move(this->handle.promise()).result();
      } else {
        return this->handle.promise().result();
      }
    }
  };

  std::coroutine_handle<promise_type> handle_;
};

namespace detail {

/// @cond internal
template <class T>
task<T> task_promise<T>::get_return_object() noexcept {
  return task<T>(std::coroutine_handle<task_promise>::from_promise(*this));
}
template <class T>
task<T&> task_promise<T&>::get_return_object() noexcept {
  return task<T&>(std::coroutine_handle<task_promise>::from_promise(*this));
}
inline task<void> task_promise<void>::get_return_object() noexcept {
  return task<void>(std::coroutine_handle<task_promise>::from_promise(*this));
}
/// @endcond

}  // namespace detail

}  // namespace fjord
