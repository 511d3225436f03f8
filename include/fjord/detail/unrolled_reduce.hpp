#pragma once

#include <cstddef>
#include <functional>
#include <type_traits>
#include <utility>

namespace fjord::detail {

// An element (or op's result) as the sum's type: by implicit conversion, as
// std's generalized sum converts, never through an explicit constructor
// (vector<int>(3) is not the sum of a 3); arithmetic types by static_cast,
// which is the same conversion without the narrowing warning.
template <class T, class V>
T as_sum(V&& v) {
  if constexpr (std::is_arithmetic_v<T>) {
    return static_cast<T>(std::forward<V>(v));
  } else {
    return std::forward<V>(v);
  }
}

// From this many elements on, four quarters are read as four streams: on
// this machine that moves more bytes per second than one stream does (a
// sum of 10^7 ints in one piece: 2.8 ms against 4.1).
inline constexpr std::size_t long_piece = 2048;

// + and * on arithmetic types: commutative, so running sums may take
// elements in any fixed order (rounding still depends on the grouping).
template <class T, class Op>
inline constexpr bool is_plus = std::is_same_v<Op, std::plus<>> || std::is_same_v<Op, std::plus<T>>;
template <class T, class Op>
inline constexpr bool commutative_arithmetic =
    std::is_arithmetic_v<T> && !std::is_same_v<T, bool> &&
    (is_plus<T, Op> || std::is_same_v<Op, std::multiplies<>> ||
     std::is_same_v<Op, std::multiplies<T>>);

// What the strided sums keep: integers as unsigned of at least int's width,
// so that partial sums that a left-to-right sum would not reach wrap
// instead of overflowing (an overflow of a signed type is undefined); the
// conversion back at the end is modular, so the result is exact whenever
// the true total fits in T. Floating-point types as they are.
template <class T>
using lane_t = std::conditional_t<
    std::is_integral_v<T>,
    std::conditional_t<(sizeof(T) < sizeof(unsigned)), unsigned, std::make_unsigned_t<T>>, T>;

inline constexpr std::size_t strided_lanes = 8;

// Reduces element(b) ... element(e - 1), e - b >= 2 * strided_lanes, as
// strided_lanes running sums of Lane, each taking every strided_lanes-th
// element (as to_lane(element)), folded in halves at the end: the range is
// read as one stream.
template <class Lane, class Element, class ToLane, class Step>
Lane strided_reduce(std::size_t b, std::size_t e, Element& element, ToLane to_lane, Step step) {
  constexpr std::size_t lanes = strided_lanes;
  Lane sums[lanes];
  for (std::size_t k = 0; k < lanes; ++k) {
    sums[k] = to_lane(element(b + k));
  }
  std::size_t i = b + lanes;
  for (; e - i >= lanes; i += lanes) {
    for (std::size_t k = 0; k < lanes; ++k) {
      sums[k] = step(sums[k], to_lane(element(i + k)));
    }
  }
  for (; i < e; ++i) {
    sums[0] = step(sums[0], to_lane(element(i)));
  }
  for (std::size_t width = lanes / 2; width > 0; width /= 2) {
    for (std::size_t k = 0; k < width; ++k) {
      sums[k] = step(sums[k], sums[k + width]);
    }
  }
  return sums[0];
}

// Reduces element(b) ... element(e - 1), e > b, as several running sums:
// independent chains let the CPU overlap operations (a floating-point add
// has 4 cycles of latency and 0.5 of throughput). Long pieces, and every
// piece when op may not be commutative, run four sums over four
// consecutive quarters joined left to right. Short pieces of + or * on
// arithmetic types run eight sums over every eighth element instead: four
// streams a few hundred bytes long restart the hardware prefetcher at every
// piece (pieces of 610 ints took 1.6x as long as one stream). Either way the
// grouping depends on b and e alone, so a deterministic reduction stays
// deterministic.
template <class T, class Element, class Op>
T unrolled_reduce(std::size_t b, std::size_t e, Element& element, Op& op) {
  if constexpr (commutative_arithmetic<T, Op>) {
    using element_t = std::remove_cvref_t<decltype(element(b))>;
    if (e - b >= 2 * strided_lanes && e - b < long_piece) {
      if constexpr (std::is_floating_point_v<T>) {
        return strided_reduce<T>(
            b, e, element, [](auto&& x) { return as_sum<T>(std::forward<decltype(x)>(x)); },
            [&op](T x, T y) { return as_sum<T>(op(x, y)); });
      } else if constexpr (std::is_integral_v<element_t>) {
        using lane = lane_t<T>;
        auto to_lane = [](auto&& x) {
          return static_cast<lane>(as_sum<T>(std::forward<decltype(x)>(x)));
        };
        auto step = [](lane x, lane y) {
          return static_cast<lane>(is_plus<T, Op> ? x + y : x * y);
        };
        return static_cast<T>(strided_reduce<lane>(b, e, element, to_lane, step));
      }
    }
  }
  const std::size_t quarter = (e - b) / 4;
  if (quarter < 2) {
    T sum = as_sum<T>(element(b));
    for (std::size_t i = b + 1; i < e; ++i) {
      sum = op(std::move(sum), element(i));
    }
    return sum;
  }
  const std::size_t q1 = b + quarter;
  const std::size_t q2 = q1 + quarter;
  const std::size_t q3 = q2 + quarter;
  T s0 = as_sum<T>(element(b));
  T s1 = as_sum<T>(element(q1));
  T s2 = as_sum<T>(element(q2));
  T s3 = as_sum<T>(element(q3));
  for (std::size_t i = 1; i < quarter; ++i) {
    s0 = op(std::move(s0), element(b + i));
    s1 = op(std::move(s1), element(q1 + i));
    s2 = op(std::move(s2), element(q2 + i));
    s3 = op(std::move(s3), element(q3 + i));
  }
  for (std::size_t i = q3 + quarter; i < e; ++i) {  // the last quarter's remainder
    s3 = op(std::move(s3), element(i));
  }
  return op(op(std::move(s0), std::move(s1)), op(std::move(s2), std::move(s3)));
}

}  // namespace fjord::detail
