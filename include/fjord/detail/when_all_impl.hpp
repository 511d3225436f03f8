#pragma once

#include <array>
#include <concepts>
#include <cstddef>
#include <exception>
#include <optional>
#include <ranges>
#include <stdexcept>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "fjord/detail/fanout.hpp"
#include "fjord/detail/result_slot.hpp"
#include "fjord/detail/task_promise.hpp"

namespace fjord::detail {

template <class R>
concept task_range = std::ranges::input_range<R> &&
    is_task_v<std::remove_cvref_t<std::ranges::range_reference_t<R>>>;

template <class T>
storable_t<T> take_element(task<T>& t) {
  if constexpr (std::is_void_v<T>) {
    task_access::take_result(t);
    return {};
  } else {
    return task_access::take_result(t);
  }
}

// After every child finished: rethrows the exception of the first child (in
// argument or range order) that has one.
template <class Task>
void rethrow_first_error(Task& t) {
  if (task_access::handle(t).promise().has_error()) {
    task_access::take_result(t);  // rethrows
  }
}

template <class... T>
task<std::tuple<storable_t<T>...>> when_all_tuple(task<T>... tasks) {
  std::tuple<task<T>&...> children(tasks...);
  std::array<fanout::slot, sizeof...(T)> slots;
  fanout f(slots, &children, &runner_for_tuple<std::tuple<task<T>&...>>, nullptr);
  co_await fanout::awaiter{f};
  (rethrow_first_error(tasks), ...);
  co_return std::tuple<storable_t<T>...>(take_element(tasks)...);
}

// One child's outcome, moved out of its task by the child's runner, which then
// frees the child's frame: both happen on the thread that ran the child, in
// parallel, instead of in the parent after the last one finished.
template <class T>
struct outcome {
  std::optional<storable_t<T>> value;
  std::exception_ptr error;
};

template <class T>
struct settling_children {
  std::vector<task<T>>* tasks;
  std::vector<outcome<T>>* outcomes;
};

template <class T>
child_runner make_settling_runner(task<T>& t, outcome<T>& out) {
  co_await completion_awaiter<T>{task_access::handle(t)};
  try {
    out.value.emplace(take_element(t));
  } catch (...) {
    out.error = std::current_exception();
  }
  t = task<T>{};  // frees the child's frame here
}

template <class T>
std::coroutine_handle<child_runner::promise_type> settling_runner(void* children, std::size_t i) {
  auto& c = *static_cast<settling_children<T>*>(children);
  return make_settling_runner((*c.tasks)[i], (*c.outcomes)[i]).handle;
}

template <class T>
task<std::conditional_t<std::is_void_v<T>, void, std::vector<storable_t<T>>>> when_all_vector(
    std::vector<task<T>> tasks) {
  std::vector<outcome<T>> outcomes(tasks.size());
  settling_children<T> children{&tasks, &outcomes};
  std::vector<fanout::slot> slots(tasks.size());
  fanout f(slots, &children, &settling_runner<T>, nullptr);
  co_await fanout::awaiter{f};
  for (outcome<T>& o : outcomes) {
    if (o.error) {
      std::rethrow_exception(o.error);
    }
  }
  if constexpr (!std::is_void_v<T>) {
    std::vector<storable_t<T>> results;
    results.reserve(outcomes.size());
    for (outcome<T>& o : outcomes) {
      results.push_back(std::move(*o.value));
    }
    co_return results;
  }
}

template <class R>
auto to_task_vector(R&& range) {
  using task_t = std::remove_cvref_t<std::ranges::range_reference_t<R>>;
  std::vector<task_t> tasks;
  if constexpr (std::is_same_v<R, std::vector<task_t>>) {
    tasks = std::forward<R>(range);  // an rvalue vector: take its buffer
  } else {
    if constexpr (std::ranges::sized_range<R>) {
      tasks.reserve(std::ranges::size(range));
    }
    for (auto&& t : range) {
      tasks.push_back(std::move(t));
    }
  }
  for (const task_t& t : tasks) {
    if (!t) {
      throw std::invalid_argument(
          "fjord: an empty task (default-constructed or moved-from) passed to when_all/when_any");
    }
  }
  return tasks;
}

}  // namespace fjord::detail
