#pragma once

#include <algorithm>
#include <cstddef>
#include <functional>
#include <iterator>

#include "fjord/detail/index_range.hpp"
#include "fjord/detail/minmax_impl.hpp"
#include "fjord/detail/range_split.hpp"
#include "fjord/execution.hpp"

namespace fjord {

/// The first smallest element under comp (std::less by default), or last
/// when the range is empty.
template <execution_policy Policy, std::random_access_iterator It, class Compare = std::less<>>
It min_element(Policy&& policy, It first, It last, Compare comp = {}) {
  if constexpr (detail::is_sequenced_v<Policy>) {
    detail::checked_length(first, last, "fjord::min_element");
    return std::min_element(first, last, comp);
  } else {
    auto before = [&](auto&& a, auto&& b) -> bool { return comp(a, b); };
    return detail::parallel_first_extreme(policy, first, last, before, "fjord::min_element");
  }
}

/// The first largest element under comp, or last when the range is empty.
template <execution_policy Policy, std::random_access_iterator It, class Compare = std::less<>>
It max_element(Policy&& policy, It first, It last, Compare comp = {}) {
  if constexpr (detail::is_sequenced_v<Policy>) {
    detail::checked_length(first, last, "fjord::max_element");
    return std::max_element(first, last, comp);
  } else {
    auto before = [&](auto&& a, auto&& b) -> bool { return comp(b, a); };
    return detail::parallel_first_extreme(policy, first, last, before, "fjord::max_element");
  }
}

}  // namespace fjord
