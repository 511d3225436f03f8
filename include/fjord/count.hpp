#pragma once

#include <algorithm>
#include <cstddef>
#include <functional>
#include <iterator>

#include "fjord/detail/index_range.hpp"
#include "fjord/execution.hpp"
#include "fjord/reduce.hpp"

namespace fjord {

/// The number of elements of [first, last) for which pred is true.
template <execution_policy Policy, std::random_access_iterator It, class Pred>
std::iter_difference_t<It> count_if(Policy&& policy, It first, It last, Pred pred) {
  using count_t = std::iter_difference_t<It>;
  if constexpr (detail::is_sequenced_v<Policy>) {
    detail::checked_length(first, last, "fjord::count_if");
    return std::count_if(first, last, pred);
  } else {
    return fjord::transform_reduce(policy, first, last, count_t{0}, std::plus<>(),
                                   [&](auto&& x) { return pred(x) ? count_t{1} : count_t{0}; });
  }
}

/// The number of elements equal to value.
template <execution_policy Policy, std::random_access_iterator It, class T>
std::iter_difference_t<It> count(Policy&& policy, It first, It last, const T& value) {
  return fjord::count_if(policy, first, last, [&](const auto& x) { return x == value; });
}

}  // namespace fjord
