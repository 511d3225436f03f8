#pragma once

#include <coroutine>
#include <exception>
#include <stdexcept>
#include <utility>

#include "fjord/detail/pool_core.hpp"
#include "fjord/detail/resume_job.hpp"
#include "fjord/detail/task_promise.hpp"

namespace fjord::detail {

// The frame that owns a spawned task: it awaits the task, sends an escaping
// exception to the pool's unhandled_exception_handler, and frees itself.
class detached_root {
 public:
  struct promise_type : root_promise<detached_root, promise_type> {
    std::suspend_never final_suspend() const noexcept { return {}; }
    void unhandled_exception() noexcept { pool->report_unhandled(std::current_exception()); }

    resume_job start;
    pool_core* pool = nullptr;
  };

  explicit detached_root(std::coroutine_handle<promise_type> h) noexcept : handle_(h) {}
  std::coroutine_handle<promise_type> handle() const noexcept { return handle_; }

 private:
  std::coroutine_handle<promise_type> handle_;
};

template <class T>
detached_root make_detached_root(task<T> t) {
  co_await std::move(t);
}

// Starts a detached root on p as a job; on failure (p is being destroyed)
// destroys it unrun and rethrows.
inline void start_detached(pool_core& p, detached_root root) {
  const auto h = root.handle();
  auto& promise = h.promise();
  promise.pool = &p;
  promise.start.handle = h;
  try {
    p.push_or_inject(&promise.start);
  } catch (...) {
    h.destroy();
    throw;
  }
}

}  // namespace fjord::detail
