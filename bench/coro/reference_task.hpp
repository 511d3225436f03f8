#pragma once
// The suite's reference for the coroutine benchmarks: the plainest correct
// lazy task. Frames come from operator new (malloc), start is lazy, and both
// directions use symmetric transfer; no executor, no allocator control.
// Exceptions are stored and rethrown at co_await, so the comparison with a
// full task type is fair on that count.

#include <coroutine>
#include <exception>
#include <utility>

namespace bench {

template <class T>
class reference_task {
 public:
  struct promise_type {
    T value{};
    std::exception_ptr error;
    std::coroutine_handle<> continuation = std::noop_coroutine();

    reference_task get_return_object() noexcept {
      return reference_task(std::coroutine_handle<promise_type>::from_promise(*this));
    }
    std::suspend_always initial_suspend() noexcept { return {}; }
    struct final_awaiter {
      bool await_ready() noexcept { return false; }
      std::coroutine_handle<> await_suspend(std::coroutine_handle<promise_type> h) noexcept {
        return h.promise().continuation;
      }
      void await_resume() noexcept {}
    };
    final_awaiter final_suspend() noexcept { return {}; }
    void return_value(T v) noexcept { value = std::move(v); }
    void unhandled_exception() noexcept { error = std::current_exception(); }
  };

  explicit reference_task(std::coroutine_handle<promise_type> h) noexcept : handle_(h) {}
  reference_task(reference_task&& o) noexcept : handle_(std::exchange(o.handle_, {})) {}
  reference_task(const reference_task&) = delete;
  ~reference_task() {
    if (handle_) {
      handle_.destroy();
    }
  }

  bool await_ready() const noexcept { return false; }
  std::coroutine_handle<> await_suspend(std::coroutine_handle<> awaiting) noexcept {
    handle_.promise().continuation = awaiting;
    return handle_;
  }
  T await_resume() {
    if (handle_.promise().error) {
      std::rethrow_exception(handle_.promise().error);
    }
    return std::move(handle_.promise().value);
  }

  // Runs the task to completion on this thread (it never suspends for real).
  T run() {
    handle_.resume();
    return await_resume();
  }

 private:
  std::coroutine_handle<promise_type> handle_;
};

}  // namespace bench
