#pragma once

#include <atomic>
#include <exception>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>

#include "fjord/channel.hpp"
#include "fjord/detail/chrono.hpp"
#include "fjord/detail/deadline.hpp"
#include "fjord/detail/timer_service.hpp"
#include "fjord/pool.hpp"

namespace fjord {

// Timers on fjord's one timer thread (no thread per timer), in the three
// forms Go and libcsp offer: a channel that delivers once (after), a channel
// that delivers periodically (ticker), and a callback with cancel
// (call_after, libcsp's timer_after / timer_cancel).

/// The clock every fjord timer runs on.
using timer_clock = std::chrono::steady_clock;

namespace detail {
// Makes the channel of after(), armed for `deadline`.
channel<timer_clock::time_point> make_after_channel(timer_clock::time_point deadline);
struct ticker_state;
}  // namespace detail

/// A channel that receives the time once, at now + d (Go's time.After), and
/// is never closed. Receive it in a select for a timeout that is also a
/// channel. The timer holds the channel until it fires, even if every handle
/// is dropped before: prefer fjord::timeout(d) in a select that loops.
template <class Rep, class Period>
[[nodiscard]] channel<timer_clock::time_point> after(std::chrono::duration<Rep, Period> d) {
  return detail::make_after_channel(detail::deadline_after(d));
}

/// Delivers the time on its channel every period (Go's time.Ticker). The
/// channel holds one tick: a slow receiver misses ticks rather than
/// receiving a backlog. After stop() (or destruction) no tick is received
/// any more, not even one that was pending.
class ticker {
 public:
  /// Throws std::invalid_argument, naming the value, for a period that is
  /// not positive.
  template <class Rep, class Period>
  explicit ticker(std::chrono::duration<Rep, Period> period)
      : ticker(checked_tag{},
               checked_period(std::chrono::duration<double, std::nano>(period).count())) {}
  ticker(const ticker&) = delete;
  ticker& operator=(const ticker&) = delete;
  ~ticker() { stop(); }

  /// The channel the ticks arrive on (a handle: it may outlive the ticker,
  /// and is then silent).
  const channel<timer_clock::time_point>& ticks() const noexcept { return ticks_; }

  /// No tick is delivered after it returns. Idempotent.
  void stop() noexcept;

 private:
  struct checked_tag {};
  /// The period in the clock's ticks, rounded up, and capped at about 30
  /// years (a longer one would overflow when added to now).
  static timer_clock::duration checked_period(double ns);
  ticker(checked_tag, timer_clock::duration period);

  channel<timer_clock::time_point> ticks_;
  detail::ticker_state* state_;
};

namespace detail {

// The state a callback timer shares with its handle: the entry in the timer
// service, and two references (the handle's, and the timer's until it has
// fired or been canceled).
struct callback_timer_base : timer_service::entry {
  // Both drop their reference here; the last one destroys the state.
  std::atomic<int> references{2};
  void release() noexcept;
  virtual void destroy() noexcept = 0;
  bool cancel() noexcept;

 protected:
  callback_timer_base() = default;
  callback_timer_base(const callback_timer_base&) = delete;
  callback_timer_base& operator=(const callback_timer_base&) = delete;
  ~callback_timer_base() = default;
};

template <class F>
struct callback_timer final : callback_timer_base {
  callback_timer(F&& fn, pool& p) : f(std::move(fn)), target(&p) { on_fire = &fire; }

  static void fire(timer_service::entry& e) noexcept {
    auto* self = static_cast<callback_timer*>(&e);
    try {
      self->target->post(std::move(self->f));
    } catch (...) {
      // The pool is being destroyed: its handler still hears of it, so
      // the callback is not lost without a word.
      detail::pool_access::core(*self->target).report_unhandled(std::current_exception());
    }
    self->release();
  }
  void destroy() noexcept override { delete this; }

  F f;
  pool* target;
};

}  // namespace detail

/// A handle to a pending call_after callback.
class timer {
 public:
  timer() noexcept = default;
  /// Made by call_after().
  explicit timer(detail::callback_timer_base* s) noexcept : state_(s) {}
  /// Moves the handle; `o` no longer refers to a timer.
  timer(timer&& o) noexcept : state_(std::exchange(o.state_, nullptr)) {}
  /// Drops this handle (the timer still fires) and takes over `o`'s.
  timer& operator=(timer o) noexcept {
    std::swap(state_, o.state_);
    return *this;
  }
  timer(const timer&) = delete;
  /// Dropping the handle does not cancel the callback.
  ~timer() {
    if (state_ != nullptr) {
      state_->release();
    }
  }

  /// Cancels the call: true if the callback will never run, false if it has
  /// run, is running, or was already handed to its pool.
  bool cancel() noexcept { return state_ != nullptr && state_->cancel(); }

 private:
  detail::callback_timer_base* state_ = nullptr;
};

/// Posts f() to p at now + d (from the timer thread: user code never runs
/// there). If p is being destroyed by then, p's unhandled_exception_handler
/// gets the shutdown_error instead. p must outlive the timer.
template <class Rep, class Period, class F>
requires std::invocable < std::decay_t<F>
& > [[nodiscard("dropping the handle is fine, but then the call cannot be canceled")]] timer
    call_after(pool& p, std::chrono::duration<Rep, Period> d, F&& f) {
  auto* state = new detail::callback_timer<std::decay_t<F>>(std::decay_t<F>(std::forward<F>(f)), p);
  state->deadline = detail::deadline_after(d);
  try {
    detail::timer_service::instance().arm(*state);
  } catch (...) {
    delete state;
    throw;
  }
  return timer(state);
}

}  // namespace fjord
