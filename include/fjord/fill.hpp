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

/// Assigns value to every element of [first, last).
template <execution_policy Policy, std::random_access_iterator It, class T>
void fill(Policy&& policy, It first, It last, const T& value) {
  const std::size_t n = detail::checked_length(first, last, "fjord::fill");
  if constexpr (detail::is_sequenced_v<Policy>) {
    std::fill(first, last, value);
  } else {
    detail::for_each_piece(policy, n, [&](std::size_t b, std::size_t e) {
      std::fill(detail::index_at(first, b), detail::index_at(first, e), value);
    });
  }
}

/// fill over [first, first + n); returns first + n.
template <execution_policy Policy, std::random_access_iterator It, detail::count_like N, class T>
It fill_n(Policy&& policy, It first, N n, const T& value) {
  const It last = detail::index_at(first, detail::checked_count(n, "fjord::fill_n"));
  fjord::fill(policy, first, last, value);
  return last;
}

/// Assigns gen() to every element of [first, last). With fjord::par, gen is
/// called concurrently from several workers, as with std::execution::par: a
/// generator with state must be safe to share (or keep its state per
/// thread, as the seeds' generate_randoms does).
template <execution_policy Policy, std::random_access_iterator It, class Generator>
void generate(Policy&& policy, It first, It last, Generator gen) {
  const std::size_t n = detail::checked_length(first, last, "fjord::generate");
  if constexpr (detail::is_sequenced_v<Policy>) {
    std::generate(first, last, gen);
  } else {
    detail::for_each_piece(policy, n, [&](std::size_t b, std::size_t e) {
      std::generate(detail::index_at(first, b), detail::index_at(first, e), std::ref(gen));
    });
  }
}

/// generate over [first, first + n); returns first + n.
template <execution_policy Policy, std::random_access_iterator It, detail::count_like N,
          class Generator>
It generate_n(Policy&& policy, It first, N n, Generator gen) {
  const It last = detail::index_at(first, detail::checked_count(n, "fjord::generate_n"));
  fjord::generate(policy, first, last, std::move(gen));
  return last;
}

}  // namespace fjord
