#pragma once

#include <coroutine>
#include <stop_token>
#include <type_traits>
#include <utility>

#include "fjord/detail/promise_stop_token.hpp"
#include "fjord/task.hpp"

// The stop token a coroutine runs under: set by when_any or with_stop_token,
// inherited by every task it awaits, observed by fjord's timed waits.

namespace fjord {

namespace detail {

// Awaitable: makes the awaiting coroutine run under `token` from here on
// (and the tasks it awaits inherit it). Never suspends.
struct stop_token_setter {
  const std::stop_token* token;
  bool await_ready() const noexcept { return false; }
  template <class Promise>
  bool await_suspend(std::coroutine_handle<Promise> h) const noexcept {
    h.promise().stop_token_address = token;
    return false;
  }
  void await_resume() const noexcept {}
};

// Awaitable: the stop token of the coroutine that awaits it.
struct stop_token_reader {
  std::stop_token token;
  bool await_ready() const noexcept { return false; }
  template <class Promise>
  bool await_suspend(std::coroutine_handle<Promise> h) noexcept {
    if constexpr (std::is_base_of_v<promise_base, Promise>) {
      if (const std::stop_token* t = stop_token_of(h.promise()); t != nullptr) {
        token = *t;
      }
    }
    return false;  // never actually suspends
  }
  std::stop_token await_resume() const noexcept { return token; }
};

}  // namespace detail

/// co_await fjord::current_stop_token() yields the stop token the calling
/// coroutine runs under: set by when_any or with_stop_token and inherited by
/// every task it awaits. A coroutine not running under one gets a token on
/// which no stop can be requested.
[[nodiscard]] inline detail::stop_token_reader current_stop_token() noexcept {
  return {};
}

/// Runs t under `token`: t, and every task it awaits, sees it through
/// current_stop_token() and in fjord's timed waits.
template <class T>
task<T> with_stop_token(std::stop_token token, task<T> t) {
  co_await detail::stop_token_setter{&token};
  co_return co_await std::move(t);
}

}  // namespace fjord
