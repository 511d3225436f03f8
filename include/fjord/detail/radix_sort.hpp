#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <functional>
#include <iterator>
#include <memory>
#include <type_traits>
#include <utility>
#include <vector>

#include "fjord/detail/range_split.hpp"

namespace fjord::detail {

// Integers ordered by std::less or std::greater: their order is their bits'
// order (after flipping the sign bit), so a radix sort gives exactly what
// the comparison sort would (equal integers cannot be told apart).
template <class T, class Compare>
inline constexpr bool radix_sortable =
    std::is_integral_v<T> && !std::is_same_v<T, bool> &&
    (std::is_same_v<Compare, std::less<>> || std::is_same_v<Compare, std::less<T>> ||
     std::is_same_v<Compare, std::greater<>> || std::is_same_v<Compare, std::greater<T>>);

template <class T, class Compare>
inline constexpr bool radix_descending =
    std::is_same_v<Compare, std::greater<>> || std::is_same_v<Compare, std::greater<T>>;

// A parallel least-significant-digit radix sort by key(element), an
// unsigned integer, 8 bits a pass: each pass counts the digits of every
// chunk in parallel, turns the counts into per-chunk write positions
// (digit-major, so the pass is stable), and scatters the chunks in
// parallel. A pass whose digit is the same in every element is skipped.
// Keys are read once a pass (key should be cheap: a load or a bit flip).
// Runs on a worker of the pool (join is direct).
template <class T, class Key>
void radix_sort_by(T* data, std::size_t n, std::size_t workers, Key key) {
  static_assert(std::is_trivially_copyable_v<T>);
  using key_t = std::invoke_result_t<Key&, const T&>;
  static_assert(std::is_unsigned_v<key_t>);
  constexpr int bits = static_cast<int>(sizeof(key_t)) * 8;
  auto buffer = std::make_unique_for_overwrite<T[]>(n);
  T* from = data;
  T* to = buffer.get();
  // A few chunks a worker so a slow one can be helped; each at least 64 KiB.
  const std::size_t chunks =
      std::clamp<std::size_t>(n / (std::size_t{65536} / sizeof(T)), 1, 4 * workers);
  const std::size_t chunk_length = (n + chunks - 1) / chunks;
  std::vector<std::array<std::size_t, 256>> count(chunks);
  auto bounds = [&](std::size_t c) {
    return std::pair{c * chunk_length, std::min(n, (c + 1) * chunk_length)};
  };
  // The first pass also finds which bits differ from the first key's:
  // later passes whose digit no key changes are skipped without counting
  // (strings that tie on a long prefix make many such passes).
  if (n == 0) {
    return;
  }
  const key_t first_key = key(data[0]);
  std::vector<key_t> chunk_differs(chunks, 0);
  key_t differs = 0;
  for (int shift = 0; shift < bits; shift += 8) {
    if (shift > 0 && ((differs >> shift) & 0xFFU) == 0) {
      continue;
    }
    auto histogram = [&](std::size_t cb, std::size_t ce) {
      for (std::size_t c = cb; c < ce; ++c) {
        auto& counts = count[c];
        counts.fill(0);
        const auto [b, e] = bounds(c);
        if (shift == 0) {
          key_t d = 0;
          for (std::size_t i = b; i < e; ++i) {
            const key_t k = key(from[i]);
            d |= static_cast<key_t>(k ^ first_key);
            ++counts[k & 0xFFU];
          }
          chunk_differs[c] = d;
        } else {
          for (std::size_t i = b; i < e; ++i) {
            ++counts[(key(from[i]) >> shift) & 0xFFU];
          }
        }
      }
    };
    fixed_for(0, chunks, 1, histogram);
    if (shift == 0) {
      for (const key_t d : chunk_differs) {
        differs |= d;
      }
    }
    std::size_t position = 0;
    bool one_digit = false;
    for (std::size_t d = 0; d < 256 && !one_digit; ++d) {
      std::size_t total = 0;
      for (std::size_t c = 0; c < chunks; ++c) {
        total += count[c][d];
      }
      one_digit = total == n;
    }
    if (one_digit) {
      continue;
    }
    for (std::size_t d = 0; d < 256; ++d) {
      for (std::size_t c = 0; c < chunks; ++c) {
        position += std::exchange(count[c][d], position);
      }
    }
    auto scatter = [&](std::size_t cb, std::size_t ce) {
      for (std::size_t c = cb; c < ce; ++c) {
        auto& next = count[c];
        const auto [b, e] = bounds(c);
        for (std::size_t i = b; i < e; ++i) {
          to[next[(key(from[i]) >> shift) & 0xFF]++] = from[i];
        }
      }
    };
    fixed_for(0, chunks, 1, scatter);
    std::swap(from, to);
  }
  if (from != data) {
    auto copy_back = [&](std::size_t cb, std::size_t ce) {
      for (std::size_t c = cb; c < ce; ++c) {
        const auto [b, e] = bounds(c);
        std::copy(from + b, from + e, data + b);
      }
    };
    fixed_for(0, chunks, 1, copy_back);
  }
}

// Integers by < or >: the key is the integer's bits with the sign bit
// flipped (so negatives come first), all bits flipped for >.
template <class T, bool Descending>
void radix_sort(T* data, std::size_t n, std::size_t workers) {
  using key_t = std::make_unsigned_t<T>;
  constexpr int bits = static_cast<int>(sizeof(T)) * 8;
  radix_sort_by(data, n, workers, [](T x) {
    auto k = static_cast<key_t>(x);
    if constexpr (std::is_signed_v<T>) {
      k = static_cast<key_t>(k ^ (key_t{1} << (bits - 1)));
    }
    if constexpr (Descending) {
      k = static_cast<key_t>(~k);
    }
    return k;
  });
}

}  // namespace fjord::detail
