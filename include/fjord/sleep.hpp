#pragma once

#include <coroutine>
#include <optional>
#include <stop_token>
#include <type_traits>

#include "fjord/detail/chrono.hpp"
#include "fjord/detail/deadline.hpp"
#include "fjord/detail/promise_stop_token.hpp"
#include "fjord/detail/sleep_awaiter.hpp"
#include "fjord/detail/timer_service.hpp"
#include "fjord/sleep_status.hpp"

namespace fjord {

/// co_await fjord::sleep_until(t): suspends the coroutine (no thread waits)
/// until t, then resumes it where it was running (the thread blocked in its
/// sync_wait, or its pool). The wait ends
/// early with sleep_status::canceled when a stop is requested on `token`, or,
/// when no token is given, on the stop token the coroutine runs under (see
/// current_stop_token()). A time already past does not suspend.
template <class Clock, class Duration>
[[nodiscard]] detail::sleep_awaiter sleep_until(
    std::chrono::time_point<Clock, Duration> t,
    std::optional<std::stop_token> token = std::nullopt) {
  return detail::sleep_awaiter(detail::deadline_at(t), std::move(token));
}

/// co_await fjord::sleep_for(d): sleep_until(now + d).
template <class Rep, class Period>
[[nodiscard]] detail::sleep_awaiter sleep_for(std::chrono::duration<Rep, Period> d,
                                              std::optional<std::stop_token> token = std::nullopt) {
  return detail::sleep_awaiter(detail::deadline_after(d), std::move(token));
}

}  // namespace fjord
