#pragma once

#include <cstddef>
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

// Reduces element(b) ... element(e - 1), e > b, in index order, as four
// running sums over four consecutive quarters joined left to right: four
// independent chains let the CPU overlap four operations (a floating-point
// add has 4 cycles of latency and 0.5 of throughput), and op need not be
// commutative. The grouping depends on b and e alone, so a deterministic
// reduction stays deterministic.
template <class T, class Element, class Op>
T unrolled_reduce(std::size_t b, std::size_t e, Element& element, Op& op) {
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
