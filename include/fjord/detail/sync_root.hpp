#pragma once

#include <coroutine>
#include <exception>
#include <stdexcept>
#include <utility>

#include "fjord/detail/blocking_section.hpp"
#include "fjord/detail/sync_wait_loop.hpp"
#include "fjord/detail/task_promise.hpp"
#include "fjord/detail/transfer.hpp"

namespace fjord::detail {

// The coroutine sync_wait starts: it awaits the task's completion, then
// signals the waiting thread. The signal is the last thing it does; the
// waiter destroys its frame.
class sync_root {
 public:
  struct promise_type : root_promise<sync_root, promise_type> {
    struct signal_awaiter {
      bool await_ready() const noexcept { return false; }
      void await_suspend(std::coroutine_handle<promise_type> h) const noexcept {
        h.promise().loop->finish();  // the last touch: the waiter may return now
      }
      void await_resume() const noexcept {}
    };
    signal_awaiter final_suspend() const noexcept { return {}; }

    sync_wait_loop* loop = nullptr;
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

  // Starts the task on this thread and returns once it has finished.
  // Meanwhile the thread runs the task's coroutines that suspended on it and
  // are woken (sync_wait_loop); a worker of a pool blocks with compensation
  // (a spare thread takes its place) instead of helping, so nothing is
  // buried under the wait and nothing waits behind it.
  void run() noexcept {
    sync_wait_loop loop;
    handle_.promise().loop = &loop;
    const sync_wait_loop::scope current(&loop);
    resume(handle_);
    if (loop.finished()) {
      loop.run();  // returns at once: nothing was posted
      return;      // finished inline: the common case for synchronous chains
    }
    const blocking_section blocking;
    loop.run();
  }

 private:
  std::coroutine_handle<promise_type> handle_;
};

template <class T>
sync_root make_sync_root(const task<T>& t) {
  co_await completion_awaiter<T>{task_access::handle(t)};  // sync_wait checked t
}

}  // namespace fjord::detail
