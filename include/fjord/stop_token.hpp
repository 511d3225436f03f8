#pragma once

#include <coroutine>
#include <stop_token>
#include <type_traits>
#include <utility>

#include "fjord/detail/promise_stop_token.hpp"
#include "fjord/detail/stop_token_awaiters.hpp"
#include "fjord/task.hpp"

// The stop token a coroutine runs under: set by when_any or with_stop_token,
// inherited by every task it awaits, observed by fjord's timed waits.

namespace fjord {

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
