#pragma once

#include <functional>
#include <type_traits>
#include <utility>

#include "fjord/detail/call_signature.hpp"
#include "fjord/detail/callable.hpp"
#include "fjord/detail/detached_task.hpp"
#include "fjord/pool.hpp"
#include "fjord/spawn.hpp"
#include "fjord/task.hpp"

namespace fjord {

namespace detail {

// A process's root, for callables that need one (process_needs_no_root):
// its frame owns the callable and its arguments, so a coroutine lambda
// (whose captures live in the lambda object) and reference parameters stay
// valid for as long as the process runs.
template <class F, class... Args>
task<void> make_process(F f, Args... args) {
  co_await std::invoke(std::move(f), std::move(args)...);
}

}  // namespace detail

/// Starts a process (Go's `go f(args...)`): f(args...) runs detached on p,
/// with f and the arguments copied or moved into the process. When f returns
/// a fjord::task, the process is that coroutine: while it waits (on a
/// channel, a timer, an async primitive) it costs its frames, not a thread.
/// Otherwise f runs as a job (pool::post). A blocked process costs its
/// coroutine's frame alone when f holds no state (a function, a lambda
/// without captures) and takes each parameter by value or through
/// std::ref; otherwise a second, root frame owns f and the arguments
/// (docs/channels.md, "Processes"). An exception escaping the process
/// goes to p's unhandled_exception_handler, as with spawn. Throws
/// fjord::shutdown_error if p is being destroyed and the caller is not one of
/// its workers; p must outlive the process.
template <class F, class... Args>
requires detail::process_callable<F, Args...>
void go(pool& p, F&& f, Args&&... args) {
  using result = std::invoke_result_t<std::decay_t<F>, std::decay_t<Args>...>;
  if constexpr (detail::is_task_v<result> && detail::process_needs_no_root<F, Args...>()) {
    // The coroutine is the process: its frame holds the arguments, and f
    // has no state to keep.
    detail::start_detached(p, std::invoke(std::forward<F>(f), std::forward<Args>(args)...));
  } else if constexpr (detail::is_task_v<result>) {
    detail::start_detached(p,
                           detail::make_process(std::forward<F>(f), std::forward<Args>(args)...));
  } else {
    p.post([f = std::forward<F>(f), ... args = std::forward<Args>(args)]() mutable {
      std::invoke(std::move(f), std::move(args)...);
    });
  }
}

/// The same on the calling worker's pool, or fjord::default_pool() from
/// other threads.
template <class F, class... Args>
requires detail::process_callable<F, Args...>
void go(F&& f, Args&&... args) {
  pool* current = current_pool();
  go(current != nullptr ? *current : default_pool(), std::forward<F>(f),
     std::forward<Args>(args)...);
}

}  // namespace fjord
