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
#include "fjord/detail/promise_stop_token.hpp"
#include "fjord/detail/result_slot.hpp"
#include "fjord/detail/task_promise.hpp"
#include "fjord/detail/when_all_impl.hpp"
#include "fjord/when_any_result.hpp"

namespace fjord::detail {

// Forwards a stop request of the awaiting coroutine's own token to the race.
struct stop_forwarder {
  std::optional<std::stop_callback<std::function<void()>>> callback;

  bool await_ready() const noexcept { return false; }
  template <class Promise>
  bool await_suspend(std::coroutine_handle<Promise> h) {
    if constexpr (std::is_base_of_v<promise_base, Promise>) {
      if (const std::stop_token* t = stop_token_of(h.promise()); t != nullptr && race != nullptr) {
        fanout::race* r = race;
        // The copy keeps the stop state alive through request_stop(): the
        // race (and its source) may be destroyed while callbacks still run.
        callback.emplace(*t, [r] {
          std::stop_source keep = r->source;
          keep.request_stop();
        });
      }
    }
    return false;
  }
  void await_resume() const noexcept {}

  fanout::race* race = nullptr;
};

template <std::size_t I, class... T>
std::variant<storable_t<T>...> take_winner(std::size_t winner, std::tuple<task<T>...>& tasks) {
  if constexpr (I + 1 < sizeof...(T)) {
    if (winner != I) {
      return take_winner<I + 1, T...>(winner, tasks);
    }
  }
  return std::variant<storable_t<T>...>(std::in_place_index<I>, take_element(std::get<I>(tasks)));
}

template <class... T>
task<std::variant<storable_t<T>...>> when_any_tuple(task<T>... args) {
  std::tuple<task<T>...> tasks(std::move(args)...);
  fanout::race race;
  stop_forwarder forward{.callback = {}, .race = &race};
  co_await forward;
  std::array<fanout::slot, sizeof...(T)> slots;
  fanout f(slots, &tasks, &runner_for_tuple<std::tuple<task<T>...>>, &race);
  co_await fanout::awaiter{f};
  co_return take_winner<0, T...>(race.winner.load(std::memory_order_relaxed), tasks);
}

template <class T>
task<when_any_result<T>> when_any_vector(std::vector<task<T>> tasks) {
  fanout::race race;
  stop_forwarder forward{.callback = {}, .race = &race};
  co_await forward;
  std::vector<fanout::slot> slots(tasks.size());
  fanout f(slots, &tasks, &runner_for_range<std::vector<task<T>>>, &race);
  co_await fanout::awaiter{f};
  const std::size_t winner = race.winner.load(std::memory_order_relaxed);
  if constexpr (std::is_void_v<T>) {
    task_access::take_result(tasks[winner]);
    co_return when_any_result<void>{winner};
  } else {
    co_return when_any_result<T>{winner, task_access::take_result(tasks[winner])};
  }
}

}  // namespace fjord::detail
