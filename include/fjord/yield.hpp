#pragma once

#include "fjord/detail/schedule_awaiter.hpp"

namespace fjord {

/// co_await fjord::yield() lets the pool run other work before this coroutine
/// continues (see detail::yield_awaiter). A no-op off a pool.
[[nodiscard]] inline detail::yield_awaiter yield() noexcept {
  return {};
}

}  // namespace fjord
