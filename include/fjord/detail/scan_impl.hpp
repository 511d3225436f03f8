#pragma once

#include <cstddef>
#include <functional>
#include <iterator>
#include <memory>
#include <numeric>
#include <optional>
#include <type_traits>
#include <utility>

#include "fjord/detail/chunked_scan.hpp"
#include "fjord/detail/index_range.hpp"
#include "fjord/detail/streaming_scan.hpp"
#include "fjord/detail/unrolled_reduce.hpp"
#include "fjord/execution.hpp"

namespace fjord::detail {

// The scans without a transform: an element by reference when the iterator
// gives one, else by value (a reference to an iterator's temporary would
// dangle once element() returned).
inline constexpr auto identity_transform = [](auto&& x) -> decltype(auto) {
  if constexpr (std::is_lvalue_reference_v<decltype(x)>) {
    return (x);
  } else {
    return std::remove_cvref_t<decltype(x)>(std::forward<decltype(x)>(x));
  }
};

// An inclusive + scan of 4- or 8-byte integers from contiguous memory to
// contiguous memory of the same type, with no transform: large ones stream
// their output past the cache (streaming_scan.hpp).
template <class S, class In, class Out, class Op, class Transform>
constexpr bool scan_streams_plus() {
  if constexpr (!streamable_sum<S> || !std::contiguous_iterator<In> ||
                !std::contiguous_iterator<Out>) {
    return false;
  } else {
    // Plain memory only: not volatile, and out writable.
    using in_pointer = decltype(std::to_address(std::declval<const In&>()));
    using out_pointer = decltype(std::to_address(std::declval<const Out&>()));
    const bool plain_memory =
        std::is_convertible_v<in_pointer, const S*> && std::is_convertible_v<out_pointer, S*>;
    const bool plain_sum = std::is_same_v<Op, std::plus<>> || std::is_same_v<Op, std::plus<S>>;
    const bool no_transform =
        std::is_same_v<Transform, std::remove_const_t<decltype(identity_transform)>>;
    return plain_memory && plain_sum && no_transform && std::is_same_v<std::iter_value_t<In>, S> &&
           std::is_same_v<std::iter_value_t<Out>, S>;
  }
}
template <class S, class In, class Out, class Op, class Transform>
inline constexpr bool streams_plus_scan = scan_streams_plus<S, In, Out, Op, Transform>();

// out[i] = init op transform(first[0]) op ... op transform(first[i])
// (inclusive) or the same up to i - 1 (exclusive, init required). out may be
// first (in place).
template <class S, class In, class Out, class Op, class Transform>
Out parallel_scan(const parallel_policy& policy, In first, std::size_t n, Out out,
                  std::optional<S> init, Op& op, Transform& transform, bool inclusive) {
  auto element = [&](std::size_t i) -> decltype(auto) { return transform(*index_at(first, i)); };
  auto reduce = [&](std::size_t b, std::size_t e) { return unrolled_reduce<S>(b, e, element, op); };
  bool streaming = false;
  if constexpr (streams_plus_scan<S, In, Out, Op, Transform>) {
    streaming = inclusive && n >= streaming_store_threshold() / sizeof(S);
  }
  auto apply = [&](std::size_t b, std::size_t e, const std::optional<S>& exclusive) -> S {
    if constexpr (streams_plus_scan<S, In, Out, Op, Transform>) {
      if (streaming) {
        return streaming_inclusive_sum<S>(std::to_address(index_at(first, b)),
                                          std::to_address(index_at(out, b)), e - b,
                                          exclusive ? *exclusive : S{0});
      }
    }
    if (inclusive) {
      S running = exclusive ? as_sum<S>(op(*exclusive, element(b))) : as_sum<S>(element(b));
      *index_at(out, b) = running;
      for (std::size_t i = b + 1; i < e; ++i) {
        running = op(std::move(running), element(i));
        *index_at(out, i) = running;
      }
      return running;
    }
    S running = *exclusive;
    for (std::size_t i = b; i < e; ++i) {
      S next = as_sum<S>(op(running, element(i)));  // read element i before out[i] is written
      *index_at(out, i) = std::move(running);
      running = std::move(next);
    }
    return running;
  };
  auto combine = [&](const S& left, S right) -> S { return op(left, std::move(right)); };
  chunked_scan<S, decltype(reduce), decltype(apply), decltype(combine)> scan(
      n, scan_tile_size<S>(policy), policy.is_deterministic(), std::move(init), reduce, apply,
      combine);
  scan.run(policy);
  return index_at(out, n);
}

}  // namespace fjord::detail
