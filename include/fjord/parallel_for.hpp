#pragma once

#include <concepts>
#include <cstddef>
#include <iterator>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>

#include "fjord/detail/callable.hpp"
#include "fjord/detail/index_range.hpp"
#include "fjord/detail/range_split.hpp"
#include "fjord/execution.hpp"

namespace fjord {

/// Calls f(i) for every integer i in [first, last), in parallel, split
/// adaptively (or by policy.grain()). first and last may have different
/// integer types (parallel_for(0, v.size(), f)): i then has their common
/// type, and a value that type cannot hold (a negative first with an
/// unsigned last) throws std::invalid_argument naming it. Throws
/// std::invalid_argument, naming both values, when last < first. An exception
/// from f reaches the caller once every piece already started has finished.
template <std::integral I, std::integral J, detail::index_function<std::common_type_t<I, J>> F>
void parallel_for(const parallel_policy& policy, I first, J last, F&& f) {
  using index_t = std::common_type_t<I, J>;
  const index_t from = detail::checked_index<index_t>(first, "fjord::parallel_for", "first");
  const index_t to = detail::checked_index<index_t>(last, "fjord::parallel_for", "last");
  const std::size_t n = detail::index_length(from, to, "fjord::parallel_for");
  detail::for_each_piece(policy, n, [&](std::size_t b, std::size_t e) {
    for (std::size_t i = b; i < e; ++i) {
      f(detail::index_at(from, i));
    }
  });
}

/// parallel_for with fjord::par: on the calling worker's pool, else the
/// default pool, with adaptive splitting.
template <std::integral I, std::integral J, detail::index_function<std::common_type_t<I, J>> F>
void parallel_for(I first, J last, F&& f) {
  fjord::parallel_for(par, first, last, f);
}

/// TBB's functional parallel_reduce over integers or random-access
/// iterators: cuts [first, last) into pieces, computes
/// piece(piece_first, piece_last, identity) for each, and joins neighbouring
/// results with combine(left, right) in index order. identity must be a
/// neutral value of combine (it starts every piece); combine must be
/// associative, not commutative. An empty range gives identity.
template <detail::index_like I, class T, detail::piece_function<I, T> Piece,
          detail::combine_function<T> Combine>
T parallel_reduce(const parallel_policy& policy, I first, I last, T identity, Piece&& piece,
                  Combine&& combine) {
  const std::size_t n = detail::index_length(first, last, "fjord::parallel_reduce");
  if (n == 0) {
    return identity;
  }
  return detail::reduce_pieces<T>(
      policy, n,
      [&](std::size_t b, std::size_t e) -> T {
        return piece(detail::index_at(first, b), detail::index_at(first, e), T(identity));
      },
      [&](T left, T right) -> T { return combine(std::move(left), std::move(right)); });
}

/// parallel_reduce with fjord::par.
template <detail::index_like I, class T, detail::piece_function<I, T> Piece,
          detail::combine_function<T> Combine>
T parallel_reduce(I first, I last, T identity, Piece&& piece, Combine&& combine) {
  return fjord::parallel_reduce(par, first, last, std::move(identity), piece, combine);
}

}  // namespace fjord
