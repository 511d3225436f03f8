#pragma once

#include <array>
#include <cstddef>
#include <functional>
#include <optional>
#include <stdexcept>
#include <stop_token>
#include <utility>
#include <variant>
#include <vector>

#include "fjord/detail/fanout.hpp"
#include "fjord/detail/result_slot.hpp"
#include "fjord/detail/when_any_impl.hpp"
#include "fjord/task.hpp"
#include "fjord/when_all.hpp"
#include "fjord/when_any_result.hpp"

namespace fjord {

/// Runs the tasks as when_all does; the first to finish (with a value or an
/// exception) wins: the others are asked to stop through the stop token they
/// run under (see current_stop_token(); fjord's timed waits end early on
/// it). Structured: the coroutine resumes once every task has ended, so no
/// task outlives the call. Yields the winner's result as a variant (its
/// index is the winner's position), or rethrows the winner's exception;
/// the losers' results and exceptions are dropped. A stop request on the
/// awaiting coroutine's own token is passed on to every task.
template <class... T>
task<std::variant<detail::storable_t<T>...>> when_any(task<T>... tasks) {
  static_assert(sizeof...(T) > 0, "fjord::when_any needs at least one task");
  if ((!tasks || ...)) {
    throw std::invalid_argument(
        "fjord::when_any: an empty task (default-constructed or moved-from)");
  }
  return detail::when_any_tuple(std::move(tasks)...);
}

/// The same over a range of task<T> (moved out of it); throws
/// std::invalid_argument if the range is empty.
template <detail::task_range R>
auto when_any(R&& tasks) {
  auto v = detail::to_task_vector(std::forward<R>(tasks));
  if (v.empty()) {
    throw std::invalid_argument("fjord::when_any: the range holds no tasks (0)");
  }
  return detail::when_any_vector(std::move(v));
}

}  // namespace fjord
