#pragma once

#include <coroutine>
#include <exception>
#include <stdexcept>
#include <utility>

#include "fjord/detail/resume_job.hpp"
#include "fjord/detail/task_promise.hpp"
#include "fjord/pool.hpp"
#include "fjord/task.hpp"

namespace fjord {

namespace detail {

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

}  // namespace detail

/// Starts t on p as a job and returns at once. Nobody awaits t: an exception
/// leaving it goes to p's unhandled_exception_handler (by default: print it
/// and std::terminate, as an exception leaving a std::thread does). Throws
/// fjord::shutdown_error (and destroys t unrun) if p is being destroyed and
/// the caller is not one of its workers. p must outlive t.
template <class T>
void spawn(pool& p, task<T> t) {
  if (!t) {
    throw std::invalid_argument(
        "fjord::spawn: the task is empty (default-constructed or moved-from)");
  }
  detail::start_detached(detail::pool_access::core(p), detail::make_detached_root(std::move(t)));
}

}  // namespace fjord
