#pragma once

#include <coroutine>
#include <stop_token>
#include <type_traits>

#include "fjord/detail/task_promise.hpp"

namespace fjord::detail {

// The std::stop_token a fjord coroutine runs under (promise_base keeps only
// its address, untyped), or nullptr: no stop can be requested.
inline const std::stop_token* stop_token_of(const promise_base& p) noexcept {
  return static_cast<const std::stop_token*>(p.links.stop_token_address);
}

// The stop token a wait with no token of its own observes: the one the
// awaiting coroutine runs under (set by when_any or with_stop_token), or one
// on which no stop can be requested (also for coroutines fjord did not make).
template <class Promise>
std::stop_token inherited_stop_token(std::coroutine_handle<Promise> h) noexcept {
  if constexpr (std::is_base_of_v<promise_base, Promise>) {
    if (const std::stop_token* inherited = stop_token_of(h.promise()); inherited != nullptr) {
      return *inherited;
    }
  }
  return {};
}

}  // namespace fjord::detail
