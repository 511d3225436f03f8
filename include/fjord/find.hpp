#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <functional>
#include <iterator>

#include "fjord/detail/find_first.hpp"
#include "fjord/detail/index_range.hpp"
#include "fjord/detail/range_split.hpp"
#include "fjord/execution.hpp"

namespace fjord {

/// The first it in [first, last) with pred(*it), or last. With fjord::par the
/// pieces after a match stop early, and the first match by position wins.
template <execution_policy Policy, std::random_access_iterator It, class Pred>
It find_if(Policy&& policy, It first, It last, Pred pred) {
  const std::size_t n = detail::checked_length(first, last, "fjord::find_if");
  if constexpr (detail::is_sequenced_v<Policy>) {
    return std::find_if(first, last, pred);
  } else {
    auto match = [&](std::size_t i) -> bool { return pred(*detail::index_at(first, i)); };
    return detail::index_at(first,
                            detail::parallel_find(policy, n, match, detail::find_mode::lowest));
  }
}

namespace detail {

// Whether pred holds for some element of [first, last). With fjord::par the
// pieces stop at the first match found anywhere, not only below their own
// position: any match answers the question.
template <class Policy, class It, class Pred>
bool holds_for_some(Policy&& policy, It first, It last, Pred& pred, const char* algorithm) {
  const std::size_t n = checked_length(first, last, algorithm);
  if constexpr (is_sequenced_v<Policy>) {
    return std::find_if(first, last, std::ref(pred)) != last;
  } else {
    auto match = [&](std::size_t i) -> bool { return pred(*index_at(first, i)); };
    return parallel_find(policy, n, match, find_mode::any) != n;
  }
}

}  // namespace detail

/// The first element for which pred does not hold, or last.
template <execution_policy Policy, std::random_access_iterator It, class Pred>
It find_if_not(Policy&& policy, It first, It last, Pred pred) {
  return fjord::find_if(policy, first, last, [&](auto&& x) -> bool { return !pred(x); });
}

/// The first element equal to value, or last.
template <execution_policy Policy, std::random_access_iterator It, class T>
It find(Policy&& policy, It first, It last, const T& value) {
  return fjord::find_if(policy, first, last, [&](const auto& x) -> bool { return x == value; });
}

/// True if pred holds for some element; with fjord::par every piece stops
/// once a match is found anywhere.
template <execution_policy Policy, std::random_access_iterator It, class Pred>
bool any_of(Policy&& policy, It first, It last, Pred pred) {
  return detail::holds_for_some(policy, first, last, pred, "fjord::any_of");
}

/// True if pred holds for every element (and for an empty range); stops
/// once an element where it does not hold is found anywhere.
template <execution_policy Policy, std::random_access_iterator It, class Pred>
bool all_of(Policy&& policy, It first, It last, Pred pred) {
  auto fails = [&](auto&& x) -> bool { return !pred(x); };
  return !detail::holds_for_some(policy, first, last, fails, "fjord::all_of");
}

/// True if pred holds for no element (and for an empty range); stops once
/// a match is found anywhere.
template <execution_policy Policy, std::random_access_iterator It, class Pred>
bool none_of(Policy&& policy, It first, It last, Pred pred) {
  return !detail::holds_for_some(policy, first, last, pred, "fjord::none_of");
}

}  // namespace fjord
