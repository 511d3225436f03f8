#pragma once

#include <cstddef>
#include <functional>
#include <iterator>
#include <numeric>
#include <optional>
#include <type_traits>
#include <utility>

#include "fjord/detail/chunked_scan.hpp"
#include "fjord/detail/index_range.hpp"
#include "fjord/detail/scan_impl.hpp"
#include "fjord/detail/unrolled_reduce.hpp"
#include "fjord/execution.hpp"

namespace fjord {

/// std::inclusive_scan: out[i] = first[0] op ... op first[i] (op must be
/// associative; default +). Returns the end of the output.
template <execution_policy Policy, std::random_access_iterator In, std::random_access_iterator Out,
          class Op = std::plus<>>
Out inclusive_scan(Policy&& policy, In first, In last, Out out, Op op = {}) {
  const std::size_t n = detail::checked_length(first, last, "fjord::inclusive_scan");
  if constexpr (detail::is_sequenced_v<Policy>) {
    return std::inclusive_scan(first, last, out, op);
  } else {
    auto transform = detail::identity_transform;
    return detail::parallel_scan<std::iter_value_t<In>>(policy, first, n, out, std::nullopt, op,
                                                        transform, true);
  }
}

/// With init: out[i] = init op first[0] op ... op first[i].
template <execution_policy Policy, std::random_access_iterator In, std::random_access_iterator Out,
          class Op, class T>
Out inclusive_scan(Policy&& policy, In first, In last, Out out, Op op, T init) {
  const std::size_t n = detail::checked_length(first, last, "fjord::inclusive_scan");
  if constexpr (detail::is_sequenced_v<Policy>) {
    return std::inclusive_scan(first, last, out, op, std::move(init));
  } else {
    auto transform = detail::identity_transform;
    return detail::parallel_scan<T>(policy, first, n, out, std::optional<T>(std::move(init)), op,
                                    transform, true);
  }
}

/// std::exclusive_scan: out[0] = init, out[i] = init op first[0] op ... op first[i - 1].
template <execution_policy Policy, std::random_access_iterator In, std::random_access_iterator Out,
          class T, class Op = std::plus<>>
Out exclusive_scan(Policy&& policy, In first, In last, Out out, T init, Op op = {}) {
  const std::size_t n = detail::checked_length(first, last, "fjord::exclusive_scan");
  if constexpr (detail::is_sequenced_v<Policy>) {
    return std::exclusive_scan(first, last, out, std::move(init), op);
  } else {
    auto transform = detail::identity_transform;
    return detail::parallel_scan<T>(policy, first, n, out, std::optional<T>(std::move(init)), op,
                                    transform, false);
  }
}

/// std::transform_inclusive_scan: the inclusive scan of transform(first[i]).
template <execution_policy Policy, std::random_access_iterator In, std::random_access_iterator Out,
          class Op, class Transform>
Out transform_inclusive_scan(Policy&& policy, In first, In last, Out out, Op op,
                             Transform transform) {
  const std::size_t n = detail::checked_length(first, last, "fjord::transform_inclusive_scan");
  if constexpr (detail::is_sequenced_v<Policy>) {
    return std::transform_inclusive_scan(first, last, out, op, transform);
  } else {
    using value_t = std::decay_t<std::invoke_result_t<Transform&, std::iter_reference_t<In>>>;
    return detail::parallel_scan<value_t>(policy, first, n, out, std::nullopt, op, transform, true);
  }
}

/// transform_inclusive_scan starting from init (init op t(first[0]) ...).
template <execution_policy Policy, std::random_access_iterator In, std::random_access_iterator Out,
          class Op, class Transform, class T>
Out transform_inclusive_scan(Policy&& policy, In first, In last, Out out, Op op,
                             Transform transform, T init) {
  const std::size_t n = detail::checked_length(first, last, "fjord::transform_inclusive_scan");
  if constexpr (detail::is_sequenced_v<Policy>) {
    return std::transform_inclusive_scan(first, last, out, op, transform, std::move(init));
  } else {
    return detail::parallel_scan<T>(policy, first, n, out, std::optional<T>(std::move(init)), op,
                                    transform, true);
  }
}

/// std::transform_exclusive_scan.
template <execution_policy Policy, std::random_access_iterator In, std::random_access_iterator Out,
          class T, class Op, class Transform>
Out transform_exclusive_scan(Policy&& policy, In first, In last, Out out, T init, Op op,
                             Transform transform) {
  const std::size_t n = detail::checked_length(first, last, "fjord::transform_exclusive_scan");
  if constexpr (detail::is_sequenced_v<Policy>) {
    return std::transform_exclusive_scan(first, last, out, std::move(init), op, transform);
  } else {
    return detail::parallel_scan<T>(policy, first, n, out, std::optional<T>(std::move(init)), op,
                                    transform, false);
  }
}

}  // namespace fjord
