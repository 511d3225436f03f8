#pragma once

#include <algorithm>
#include <cstddef>
#include <functional>
#include <iterator>

#include "fjord/detail/index_range.hpp"
#include "fjord/detail/merge_sort.hpp"
#include "fjord/execution.hpp"

namespace fjord {

/// Sorts [first, last) by comp (std::less by default). With fjord::par a
/// parallel merge sort that uses a buffer of last - first elements; integers,
/// std::string and std::string_view by std::less or std::greater take a
/// radix sort instead (stable, and comp is not called). If comp
/// throws, the exception reaches the caller and the range holds its
/// elements' values in an unspecified state (some may be moved-from).
template <execution_policy Policy, std::random_access_iterator It, class Compare = std::less<>>
void sort(Policy&& policy, It first, It last, Compare comp = {}) {
  const std::size_t n = detail::checked_length(first, last, "fjord::sort");
  if constexpr (detail::is_sequenced_v<Policy>) {
    std::sort(first, last, comp);
  } else {
    detail::parallel_sort(policy, first, n, comp, false);
  }
}

/// As sort, and equal elements keep their order.
template <execution_policy Policy, std::random_access_iterator It, class Compare = std::less<>>
void stable_sort(Policy&& policy, It first, It last, Compare comp = {}) {
  const std::size_t n = detail::checked_length(first, last, "fjord::stable_sort");
  if constexpr (detail::is_sequenced_v<Policy>) {
    std::stable_sort(first, last, comp);
  } else {
    detail::parallel_sort(policy, first, n, comp, true);
  }
}

}  // namespace fjord
