#pragma once

#include <array>
#include <concepts>
#include <cstddef>
#include <exception>
#include <functional>
#include <iterator>
#include <optional>
#include <ranges>
#include <tuple>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include "fjord/detail/fanout.hpp"
#include "fjord/detail/result_slot.hpp"
#include "fjord/detail/when_all_impl.hpp"
#include "fjord/task.hpp"

namespace fjord {

/// Awaits every task, running them in parallel on the current pool (when
/// awaited from a worker; one after another on the awaiting thread
/// otherwise). The coroutine resumes when the last task ends, on the thread
/// that ended it; no thread blocks. Yields a tuple of the results (void as
/// std::monostate, a reference as std::reference_wrapper). If any task
/// threw, every task still runs to its end, then the exception of the first
/// one (in argument order) that threw is rethrown; the others are dropped.
/// The tasks inherit the awaiting coroutine's stop token.
template <class... T>
task<std::tuple<detail::storable_t<T>...>> when_all(task<T>... tasks) {
  if ((!tasks || ...)) {
    throw std::invalid_argument(
        "fjord::when_all: an empty task (default-constructed or moved-from)");
  }
  return detail::when_all_tuple(std::move(tasks)...);
}

/// The same over a range of task<T> (the tasks are moved out of it): yields a
/// std::vector of the results in range order, or nothing for task<void>.
template <detail::task_range R>
auto when_all(R&& tasks) {
  return detail::when_all_vector(detail::to_task_vector(std::forward<R>(tasks)));
}

}  // namespace fjord
