#pragma once

#include <algorithm>
#include <cstddef>
#include <functional>
#include <iterator>

#include "fjord/detail/index_range.hpp"
#include "fjord/detail/range_split.hpp"
#include "fjord/execution.hpp"

namespace fjord {

namespace detail {

// The index of the first element that no other precedes under `before`:
// before(a, b) is comp(a, b) for min_element and comp(b, a) for max_element's
// "first largest" (ties keep the earlier index).
template <std::random_access_iterator It, class Before>
std::size_t parallel_first_extreme(const parallel_policy& policy, It first, std::size_t n,
                                   Before& before) {
  auto at = [&](std::size_t i) -> decltype(auto) { return *index_at(first, i); };
  return reduce_pieces<std::size_t>(
      policy, n,
      [&](std::size_t b, std::size_t e) {
        std::size_t best = b;
        for (std::size_t i = b + 1; i < e; ++i) {
          if (before(at(i), at(best))) {
            best = i;
          }
        }
        return best;
      },
      [&](std::size_t left, std::size_t right) {
        return before(at(right), at(left)) ? right : left;
      });
}

}  // namespace detail

// The first smallest element under comp (std::less by default), or last
// when the range is empty.
template <execution_policy Policy, std::random_access_iterator It, class Compare = std::less<>>
It min_element(Policy&& policy, It first, It last, Compare comp = {}) {
  const std::size_t n = detail::checked_length(first, last, "fjord::min_element");
  if constexpr (detail::is_sequenced_v<Policy>) {
    return std::min_element(first, last, comp);
  } else {
    if (n == 0) {
      return last;
    }
    auto before = [&](const auto& a, const auto& b) -> bool { return comp(a, b); };
    return detail::index_at(first, detail::parallel_first_extreme(policy, first, n, before));
  }
}

// The first largest element under comp, or last when the range is empty.
template <execution_policy Policy, std::random_access_iterator It, class Compare = std::less<>>
It max_element(Policy&& policy, It first, It last, Compare comp = {}) {
  const std::size_t n = detail::checked_length(first, last, "fjord::max_element");
  if constexpr (detail::is_sequenced_v<Policy>) {
    return std::max_element(first, last, comp);
  } else {
    if (n == 0) {
      return last;
    }
    auto before = [&](const auto& a, const auto& b) -> bool { return comp(b, a); };
    return detail::index_at(first, detail::parallel_first_extreme(policy, first, n, before));
  }
}

}  // namespace fjord
