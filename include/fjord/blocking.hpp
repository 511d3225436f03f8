#pragma once

#include <coroutine>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <functional>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>

#include "fjord/detail/blocking_awaiter.hpp"
#include "fjord/detail/blocking_pool.hpp"
#include "fjord/detail/chrono.hpp"
#include "fjord/detail/job.hpp"
#include "fjord/detail/result_slot.hpp"
#include "fjord/detail/resume_job.hpp"

namespace fjord {

/// co_await fjord::blocking(f): runs f() on a thread of fjord's blocking
/// pool, apart from every pool's workers, and resumes the coroutine where it
/// was running (its pool, or its sync_wait thread; any other coroutine on
/// the default pool) with f's result or exception. For calls that block
/// (file I/O, getaddrinfo, a legacy library), so they never hold a worker.
/// The pool makes a thread when a call finds none idle, up to a limit (512
/// unless set_blocking_limits says otherwise; beyond it calls queue, in
/// order), and an idle thread ends after its keep-alive (10 s). Its threads
/// take the main thread's CPU affinity (and its scheduling policy and nice
/// value where the system permits), not those of the worker whose call
/// started them. A call cannot be canceled, queued or
/// running: a stop request (or a when_any that races it) does not end the
/// co_await before f has returned. If the system
/// refuses a thread while none is running, the co_await throws
/// std::system_error (resource_unavailable_try_again). From a job that is
/// not a coroutine, use fjord::block_in_place instead.
template <class F>
[[nodiscard]] detail::blocking_awaiter<std::decay_t<F>> blocking(F&& f) {
  static_assert(std::is_invocable_v<std::decay_t<F>&>, "fjord::blocking needs a callable f()");
  static_assert(!std::is_rvalue_reference_v<std::invoke_result_t<std::decay_t<F>&>>,
                "fjord::blocking: f() returns an rvalue reference, which would dangle once the "
                "call ends; return the value");
  return detail::blocking_awaiter<std::decay_t<F>>(std::forward<F>(f));
}

/// The blocking pool's thread limit and idle keep-alive (0: an idle thread
/// ends at once; any duration, hours::max() included, saturates: a
/// keep-alive is capped at a year). Throws std::invalid_argument naming the
/// value for max_threads == 0 or a negative (or NaN) keep_alive. Threads
/// above a lowered limit end as they go idle; a raised limit starts threads
/// for calls already queued.
template <class Rep, class Period>
void set_blocking_limits(std::size_t max_threads, std::chrono::duration<Rep, Period> keep_alive) {
  // In long double, capped first, then converted from there: converting
  // hours::max() to nanoseconds overflows (into a negative count), and so
  // may a float duration just below the limit, rounded in float.
  using wide = std::chrono::duration<long double, std::nano>;
  const wide w(keep_alive);
  if (!(w >= wide::zero())) {  // negative, or NaN
    throw std::invalid_argument("fjord: a keep-alive of " + std::to_string(w.count()) +
                                " ns for blocking threads (it must be zero or more)");
  }
  constexpr std::chrono::nanoseconds year = std::chrono::hours(24 * 365);
  const std::chrono::nanoseconds ns =
      w >= wide(year) ? year : std::chrono::nanoseconds(static_cast<std::int64_t>(w.count()));
  detail::blocking_pool::instance().set_limits(max_threads, ns);
}

/// Threads the blocking pool has right now, busy or idle.
inline std::size_t blocking_threads() {
  return detail::blocking_pool::instance().threads();
}

}  // namespace fjord
