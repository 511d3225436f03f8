#pragma once

#include <concepts>
#include <cstddef>
#include <iterator>
#include <stdexcept>
#include <string>
#include <type_traits>

namespace fjord::detail {

// The length of [first, last), or std::invalid_argument naming the
// algorithm and how far last lies before first.
template <std::random_access_iterator It>
std::size_t checked_length(It first, It last, const char* algorithm) {
  const auto length = last - first;
  if (length < 0) {
    // long long: iterators may use an integer-class difference type.
    throw std::invalid_argument(std::string(algorithm) + ": last is " +
                                std::to_string(static_cast<long long>(-length)) +
                                " elements before first");
  }
  return static_cast<std::size_t>(length);
}

// A count argument (for_each_n, generate_n, fill_n) as a length.
template <std::integral N>
std::size_t checked_count(N n, const char* algorithm) {
  if constexpr (std::signed_integral<N>) {
    if (n < 0) {
      throw std::invalid_argument(std::string(algorithm) + ": the count is negative (" +
                                  std::to_string(n) + ")");
    }
  }
  return static_cast<std::size_t>(n);
}

// An integer index or a random-access iterator: what parallel_for and
// parallel_reduce walk.
template <class I>
concept index_like = std::integral<I> || std::random_access_iterator<I>;

template <class I>
std::size_t index_length(I first, I last, const char* algorithm) {
  if constexpr (std::integral<I>) {
    if (last < first) {
      throw std::invalid_argument(std::string(algorithm) + ": last (" + std::to_string(last) +
                                  ") is before first (" + std::to_string(first) + ")");
    }
    // Modular arithmetic: exact for every pair of I values, signed or not.
    using unsigned_t = std::make_unsigned_t<I>;
    return static_cast<std::size_t>(static_cast<unsigned_t>(last) - static_cast<unsigned_t>(first));
  } else {
    return checked_length(first, last, algorithm);
  }
}

// first advanced by offset (offset is within the range's length).
template <class I>
I index_at(I first, std::size_t offset) {
  if constexpr (std::integral<I>) {
    using unsigned_t = std::make_unsigned_t<I>;
    return static_cast<I>(static_cast<unsigned_t>(first) + static_cast<unsigned_t>(offset));
  } else {
    return first + static_cast<std::iter_difference_t<I>>(offset);
  }
}

}  // namespace fjord::detail
