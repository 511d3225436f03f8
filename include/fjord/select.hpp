#pragma once

#include <array>
#include <coroutine>
#include <cstddef>
#include <optional>
#include <stop_token>
#include <tuple>
#include <type_traits>
#include <utility>

#include "fjord/channel.hpp"
#include "fjord/detail/blocking_section.hpp"
#include "fjord/detail/callable.hpp"
#include "fjord/detail/chrono.hpp"
#include "fjord/detail/deadline.hpp"
#include "fjord/detail/select_awaiter.hpp"
#include "fjord/detail/select_case.hpp"

namespace fjord {

// The cases of a select (Go's select statement):
//
//   std::optional<int> got;
//   switch (co_await fjord::select(fjord::receive_from(in, got),
//                                  fjord::send_to(out, 42),
//                                  fjord::timeout(10ms))) {
//     case 0: ... got holds the value, or is empty: `in` is closed
//     case 1: ... 42 was sent
//     case 2: ... nothing happened for 10 ms
//   }
//
// Exactly one case completes: the one whose index select returns. When
// several are ready, each is picked with equal probability. A case on a null
// channel is never ready.

/// Receives one value from ch into out. out is emptied when the select
/// starts; it holds the value if this case wins, and stays empty if it wins
/// because ch is closed and drained.
template <class T>
[[nodiscard]] detail::receive_case<T> receive_from(const channel<T>& ch, std::optional<T>& out) {
  return detail::receive_case<T>(ch, out);
}

/// Sends v on ch. If ch is closed when this case is picked, the select
/// throws fjord::channel_closed (v is destroyed).
template <class T, detail::value_for<T> U>
[[nodiscard]] detail::send_case<T> send_to(const channel<T>& ch, U&& v) {
  return detail::send_case<T>(ch, T(std::forward<U>(v)));
}

/// Ready when d has elapsed (from the select's creation) / at t.
template <class Rep, class Period>
[[nodiscard]] detail::timeout_case timeout(std::chrono::duration<Rep, Period> d) {
  return detail::timeout_case(detail::deadline_after(d));
}
/// Ready at time point t of any clock (converted to the steady clock).
template <class Clock, class Duration>
[[nodiscard]] detail::timeout_case timeout_at(std::chrono::time_point<Clock, Duration> t) {
  return detail::timeout_case(detail::deadline_at(t));
}

/// Ready once a stop is requested on token: cancellation, which is not an
/// error, is just another case.
[[nodiscard]] inline detail::stop_case when_stopped(std::stop_token token) {
  return detail::stop_case(std::move(token));
}

/// Go's default: the select does not wait; this case is picked when no other
/// is ready at once.
[[nodiscard]] inline detail::default_case no_wait() {
  return {};
}

/// co_await fjord::select(cases...): waits (suspended, no thread blocked)
/// until one case completes, and returns its index. Throws
/// fjord::channel_closed if the case picked is a send on a closed channel.
template <class... Cases>
[[nodiscard]] detail::select_awaiter<Cases...> select(Cases... cases) {
  return detail::select_awaiter<Cases...>(std::move(cases)...);
}

/// The same for a plain thread, which blocks (on a worker, with a stand-in
/// thread running in its place meanwhile).
template <class... Cases>
std::size_t blocking_select(Cases... cases) {
  detail::select_operation<Cases...> operation(std::move(cases)...);
  detail::channel_parker parker(true, detail::channel_parker::claimants::several);
  if (operation.begin(parker)) {
    const detail::blocking_section blocked;
    parker.park();
  }
  return operation.end(parker);
}

}  // namespace fjord
