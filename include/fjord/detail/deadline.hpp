#pragma once

#include "fjord/detail/chrono.hpp"

namespace fjord::detail {

// Every timed wait in fjord converts its timeout or time point to a
// steady_clock deadline here, saturating instead of overflowing: a timeout
// too long to represent (hours::max()) means "never", a time point already
// past (time_point::min()) means "now".

using steady_deadline = std::chrono::steady_clock::time_point;

// now + d, with d <= 0 giving now and a d past the clock's range giving
// time_point::max().
template <class Rep, class Period>
steady_deadline deadline_after(std::chrono::duration<Rep, Period> d) {
  using clock = std::chrono::steady_clock;
  const auto now = clock::now();
  if (!(d > d.zero())) {
    return now;  // also NaN, which compares false with everything
  }
  // Compared in long double nanoseconds: converting either side to the
  // other's integer type could overflow (hours::max() in nanoseconds, or the
  // clock's range in a narrow Rep).
  using wide = std::chrono::duration<long double, std::nano>;
  if (wide(d) >= wide(clock::time_point::max() - now)) {
    return clock::time_point::max();
  }
  return now + std::chrono::ceil<clock::duration>(d);
}

// The steady_clock deadline matching t on its own clock. The difference is
// taken in long double nanoseconds too: t - now in t's own types overflows
// for time_point::min() or a coarse Duration's max().
template <class Clock, class Duration>
steady_deadline deadline_at(std::chrono::time_point<Clock, Duration> t) {
  using wide = std::chrono::duration<long double, std::nano>;
  const wide left = wide(t.time_since_epoch()) - wide(Clock::now().time_since_epoch());
  return deadline_after(left);
}

}  // namespace fjord::detail
