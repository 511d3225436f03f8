#pragma once

#include <stdexcept>
#include <utility>

#include "fjord/detail/detached_task.hpp"
#include "fjord/pool.hpp"
#include "fjord/task.hpp"

namespace fjord {

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
  detail::start_detached(p, std::move(t));
}

}  // namespace fjord
