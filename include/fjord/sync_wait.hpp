#pragma once

#include <coroutine>
#include <exception>
#include <stdexcept>
#include <utility>

#include "fjord/detail/blocking_section.hpp"
#include "fjord/detail/sync_root.hpp"
#include "fjord/detail/sync_wait_loop.hpp"
#include "fjord/detail/task_promise.hpp"
#include "fjord/detail/transfer.hpp"
#include "fjord/task.hpp"

namespace fjord {

/// Runs t to completion and returns its result (or rethrows its exception).
/// t starts on the calling thread and runs there until it first suspends
/// (on pool::schedule(), a timer, an async primitive ...); the caller then
/// sleeps until t ends, wherever that is. Coroutines of t that suspend on a
/// timer or an async primitive while running on the calling thread are
/// resumed on it. Called from a pool's worker, the worker blocks too: a spare
/// thread takes its place until t ends (docs/scheduler.md, "Blocking").
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
