#pragma once

#include <algorithm>
#include <concepts>
#include <cstddef>
#include <functional>
#include <iterator>
#include <type_traits>

#include "fjord/detail/index_range.hpp"
#include "fjord/detail/range_split.hpp"
#include "fjord/execution.hpp"

namespace fjord {

/// out[i] = op(first[i]) for every i; returns the end of the output. The
/// output may be the input (in place) but must not overlap it otherwise.
template <execution_policy Policy, std::random_access_iterator In, std::random_access_iterator Out,
          class UnaryOp>
Out transform(Policy&& policy, In first, In last, Out out, UnaryOp op) {
  const std::size_t n = detail::checked_length(first, last, "fjord::transform");
  if constexpr (detail::is_sequenced_v<Policy>) {
    return std::transform(first, last, out, op);
  } else {
    detail::for_each_piece(policy, n, [&](std::size_t b, std::size_t e) {
      std::transform(detail::index_at(first, b), detail::index_at(first, e),
                     detail::index_at(out, b), std::ref(op));
    });
    return detail::index_at(out, n);
  }
}

/// out[i] = op(first1[i], first2[i]) for every i of [first1, last1).
template <execution_policy Policy, std::random_access_iterator In1, std::random_access_iterator In2,
          std::random_access_iterator Out, class BinaryOp>
Out transform(Policy&& policy, In1 first1, In1 last1, In2 first2, Out out, BinaryOp op) {
  const std::size_t n = detail::checked_length(first1, last1, "fjord::transform");
  if constexpr (detail::is_sequenced_v<Policy>) {
    return std::transform(first1, last1, first2, out, op);
  } else {
    detail::for_each_piece(policy, n, [&](std::size_t b, std::size_t e) {
      std::transform(detail::index_at(first1, b), detail::index_at(first1, e),
                     detail::index_at(first2, b), detail::index_at(out, b), std::ref(op));
    });
    return detail::index_at(out, n);
  }
}

}  // namespace fjord
