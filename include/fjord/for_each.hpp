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

/// Calls f(*it) for every it in [first, last); with fjord::par in parallel
/// (in no particular order, possibly concurrently). Throws
/// std::invalid_argument when last lies before first. An exception from f
/// reaches the caller once every piece already started has finished.
template <execution_policy Policy, std::random_access_iterator It, class F>
void for_each(Policy&& policy, It first, It last, F f) {
  const std::size_t n = detail::checked_length(first, last, "fjord::for_each");
  if constexpr (detail::is_sequenced_v<Policy>) {
    std::for_each(first, detail::index_at(first, n), f);
  } else {
    detail::for_each_piece(policy, n, [&](std::size_t b, std::size_t e) {
      std::for_each(detail::index_at(first, b), detail::index_at(first, e), std::ref(f));
    });
  }
}

/// for_each over [first, first + n); returns first + n. A negative n throws
/// std::invalid_argument naming it.
template <execution_policy Policy, std::random_access_iterator It, detail::count_like N, class F>
It for_each_n(Policy&& policy, It first, N n, F f) {
  const std::size_t count = detail::checked_count(n, "fjord::for_each_n");
  const It last = detail::index_at(first, count);
  fjord::for_each(policy, first, last, std::move(f));
  return last;
}

}  // namespace fjord
