#pragma once

#include <coroutine>
#include <exception>
#include <stdexcept>
#include <utility>

#include "fjord/detail/completion_latch.hpp"
#include "fjord/detail/pool_core.hpp"
#include "fjord/detail/task_promise.hpp"
#include "fjord/detail/transfer.hpp"
#include "fjord/detail/worker.hpp"
#include "fjord/task.hpp"

namespace fjord {

namespace detail {

// The coroutine sync_wait starts: it awaits the task's completion, then
// signals the waiting thread. The signal is the last thing it does; the
// waiter destroys its frame.
class sync_root {
 public:
  struct promise_type : promise_base {
    promise_type() noexcept { stop_token = nullptr; }
    sync_root get_return_object() noexcept {
      return sync_root(std::coroutine_handle<promise_type>::from_promise(*this));
    }
    struct signal_awaiter {
      bool await_ready() const noexcept { return false; }
      void await_suspend(std::coroutine_handle<promise_type> h) const noexcept {
        promise_type& p = h.promise();
        pool_core* pool = p.waiter_pool;
        if (pool != nullptr) {
          pool->count_down(p.latch);
        } else {
          const void* address = p.latch.futex_address();
          if (p.latch.count_down() == completion_latch::foreign_waiter) {
            completion_latch::wake_foreign(address);
          }
        }
      }
      void await_resume() const noexcept {}
    };
    signal_awaiter final_suspend() const noexcept { return {}; }
    void return_void() noexcept {}
    [[noreturn]] void unhandled_exception() noexcept { std::terminate(); }  // cannot happen

    completion_latch latch{1};
    pool_core* waiter_pool = nullptr;  // set when a worker waits (and helps)
  };

  explicit sync_root(std::coroutine_handle<promise_type> h) noexcept : handle_(h) {}
  sync_root(sync_root&& o) noexcept : handle_(std::exchange(o.handle_, {})) {}
  sync_root(const sync_root&) = delete;
  sync_root& operator=(const sync_root&) = delete;
  sync_root& operator=(sync_root&&) = delete;
  ~sync_root() {
    if (handle_) {
      handle_.destroy();
    }
  }

  // Starts the task on this thread and returns once it has finished. A
  // worker helps its pool meanwhile; any other thread sleeps on a futex.
  void run() noexcept {
    promise_type& p = handle_.promise();
    worker* w = current_worker;
    if (w != nullptr) {
      p.waiter_pool = w->pool;
      resume(handle_);
      w->pool->wait(p.latch);
      return;
    }
    resume(handle_);
    if (p.latch.done()) {
      return;  // finished inline: the common case for synchronous chains
    }
    if (!p.latch.set_waiter(completion_latch::foreign_waiter)) {
      p.latch.wait_foreign();
    }
  }

 private:
  std::coroutine_handle<promise_type> handle_;
};

template <class T>
sync_root make_sync_root(const task<T>& t) {
  co_await completion_awaiter<T>{task_access::handle(t)};  // sync_wait checked t
}

}  // namespace detail

// Runs t to completion and returns its result (or rethrows its exception).
// t starts on the calling thread and runs there until it first suspends
// (on pool::schedule(), a timer, an async primitive ...); the caller then
// sleeps until t ends, wherever that is. Called from a pool's worker, the
// worker runs other jobs of its pool while it waits instead of sleeping.
template <class T>
T sync_wait(task<T> t) {
  if (!t) {
    throw std::invalid_argument(
        "fjord::sync_wait: the task is empty (default-constructed or moved-from)");
  }
  {
    detail::sync_root root = detail::make_sync_root(t);
    root.run();
  }
  return detail::task_access::take_result(t);
}

}  // namespace fjord
