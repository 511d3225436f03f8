#pragma once

#include <algorithm>
#include <cstddef>
#include <functional>
#include <iterator>

#include "fjord/detail/index_range.hpp"
#include "fjord/detail/range_split.hpp"
#include "fjord/execution.hpp"

namespace fjord::detail {

// The first element that no other precedes under `before` (last if empty):
// before(a, b) is comp(a, b) for min_element and comp(b, a) for max_element's
// "first largest" (ties keep the earlier index).
template <std::random_access_iterator It, class Before>
It parallel_first_extreme(const parallel_policy& policy, It first, It last, Before& before,
                          const char* algorithm) {
  const std::size_t n = checked_length(first, last, algorithm);
  if (n == 0) {
    return last;
  }
  auto at = [&](std::size_t i) -> decltype(auto) { return *index_at(first, i); };
  const std::size_t best = reduce_pieces<std::size_t>(
      policy, n,
      [&](std::size_t b, std::size_t e) {
        std::size_t leader = b;
        for (std::size_t i = b + 1; i < e; ++i) {
          if (before(at(i), at(leader))) {
            leader = i;
          }
        }
        return leader;
      },
      [&](std::size_t left, std::size_t right) {
        return before(at(right), at(left)) ? right : left;
      });
  return index_at(first, best);
}

}  // namespace fjord::detail
