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
#include "fjord/detail/reduce_impl.hpp"
#include "fjord/detail/unrolled_reduce.hpp"
#include "fjord/execution.hpp"

namespace fjord {

/// std::reduce: init combined with every element by op, in any grouping
/// (op must be associative; fjord keeps index order, so it need not be
/// commutative). Throws std::invalid_argument when last lies before first.
template <execution_policy Policy, std::random_access_iterator It, class T, class Op>
T reduce(Policy&& policy, It first, It last, T init, Op op) {
  const std::size_t n = detail::checked_length(first, last, "fjord::reduce");
  if constexpr (detail::is_sequenced_v<Policy>) {
    return std::reduce(first, last, std::move(init), op);
  } else {
    auto element = [&](std::size_t i) -> decltype(auto) { return *detail::index_at(first, i); };
    return detail::parallel_generalized_sum(policy, n, std::move(init), element, op);
  }
}

/// reduce with std::plus.
template <execution_policy Policy, std::random_access_iterator It, class T>
T reduce(Policy&& policy, It first, It last, T init) {
  return fjord::reduce(policy, first, last, std::move(init), std::plus<>());
}

/// reduce with std::plus from a value-initialized element.
template <execution_policy Policy, std::random_access_iterator It>
std::iter_value_t<It> reduce(Policy&& policy, It first, It last) {
  return fjord::reduce(policy, first, last, std::iter_value_t<It>{}, std::plus<>());
}

/// std::transform_reduce, unary form: init op transform(e) for every element.
template <execution_policy Policy, std::random_access_iterator It, class T, class Reduce,
          class Transform>
T transform_reduce(Policy&& policy, It first, It last, T init, Reduce reduce, Transform transform) {
  const std::size_t n = detail::checked_length(first, last, "fjord::transform_reduce");
  if constexpr (detail::is_sequenced_v<Policy>) {
    return std::transform_reduce(first, last, std::move(init), reduce, transform);
  } else {
    auto element = [&](std::size_t i) { return transform(*detail::index_at(first, i)); };
    return detail::parallel_generalized_sum(policy, n, std::move(init), element, reduce);
  }
}

/// std::transform_reduce, binary form: init reduce transform(a[i], b[i]).
template <execution_policy Policy, std::random_access_iterator It1, std::random_access_iterator It2,
          class T, class Reduce, class Transform>
T transform_reduce(Policy&& policy, It1 first1, It1 last1, It2 first2, T init, Reduce reduce,
                   Transform transform) {
  const std::size_t n = detail::checked_length(first1, last1, "fjord::transform_reduce");
  if constexpr (detail::is_sequenced_v<Policy>) {
    return std::transform_reduce(first1, last1, first2, std::move(init), reduce, transform);
  } else {
    auto element = [&](std::size_t i) {
      return transform(*detail::index_at(first1, i), *detail::index_at(first2, i));
    };
    return detail::parallel_generalized_sum(policy, n, std::move(init), element, reduce);
  }
}

/// The inner product: init + sum of a[i] * b[i].
template <execution_policy Policy, std::random_access_iterator It1, std::random_access_iterator It2,
          class T>
T transform_reduce(Policy&& policy, It1 first1, It1 last1, It2 first2, T init) {
  return fjord::transform_reduce(policy, first1, last1, first2, std::move(init), std::plus<>(),
                                 std::multiplies<>());
}

}  // namespace fjord
