#pragma once

#include <concepts>
#include <cstddef>
#include <functional>
#include <iterator>
#include <numeric>
#include <type_traits>
#include <utility>

#include "fjord/detail/index_range.hpp"
#include "fjord/detail/range_split.hpp"
#include "fjord/detail/unrolled_reduce.hpp"
#include "fjord/execution.hpp"

namespace fjord::detail {

// init op (element(0) op ... op element(n - 1)) with fjord::par: pieces
// reduced in parallel and joined in index order. With a deterministic
// policy the grouping depends on n (and the grain) alone.
template <class T, class Element, class Op>
T parallel_generalized_sum(const parallel_policy& policy, std::size_t n, T init, Element& element,
                           Op& op) {
  if (n == 0) {
    return init;
  }
  T sum = reduce_pieces<T>(
      policy, n,
      [&](std::size_t b, std::size_t e) { return unrolled_reduce<T>(b, e, element, op); },
      [&](T left, T right) -> T { return op(std::move(left), std::move(right)); });
  return op(std::move(init), std::move(sum));
}

}  // namespace fjord::detail
