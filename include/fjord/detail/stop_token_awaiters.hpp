#pragma once

#include <coroutine>
#include <stop_token>
#include <type_traits>
#include <utility>

#include "fjord/detail/promise_stop_token.hpp"

namespace fjord::detail {

// Awaitable: makes the awaiting coroutine run under `token` from here on
// (and the tasks it awaits inherit it). Never suspends.
struct stop_token_setter {
  const std::stop_token* token;
  bool await_ready() const noexcept { return false; }
  template <class Promise>
  bool await_suspend(std::coroutine_handle<Promise> h) const noexcept {
    h.promise().links.stop_token_address = token;
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

}  // namespace fjord::detail
