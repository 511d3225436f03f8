#pragma once

#include "fjord/detail/chrono.hpp"
#include "fjord/detail/deadline.hpp"

namespace fjord {

/// The time limit of an I/O operation: none (the default), a duration from
/// now, or a time point on any clock. Converts implicitly, so an operation
/// reads `co_await s.read(buffer, 5s)`. Too long a duration means none; a
/// past time point means now (the operation still succeeds if it need not
/// wait).
class io_deadline {
 public:
  /// The clock deadlines are kept on.
  using clock = std::chrono::steady_clock;

  io_deadline() noexcept = default;
  /// A duration from now (saturating: a huge one means no deadline).
  template <class Rep, class Period>
  io_deadline(std::chrono::duration<Rep, Period> d) : at_(detail::deadline_after(d)) {}
  /// A time point of any clock, converted to the steady clock (saturating).
  template <class Clock, class Duration>
  io_deadline(std::chrono::time_point<Clock, Duration> t) : at_(detail::deadline_at(t)) {}

  /// The deadline (clock::time_point::max(): none).
  clock::time_point at() const noexcept { return at_; }
  /// Whether this is io_deadline::none().
  bool is_none() const noexcept { return at_ == clock::time_point::max(); }

 private:
  clock::time_point at_ = clock::time_point::max();
};

}  // namespace fjord
