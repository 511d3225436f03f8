#pragma once

#include <concepts>
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <limits>
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

// What the standard's for_each_n, fill_n and generate_n take as a count: an
// integer, or any type convertible to one (a class with a conversion
// operator, an unscoped enumeration).
template <class N>
concept count_like = std::integral<N> || std::convertible_to<N, long long>;

// A count argument (for_each_n, generate_n, fill_n) as a length.
template <count_like N>
std::size_t checked_count(N n, const char* algorithm) {
  if constexpr (!std::integral<N>) {
    // Through a signed type, so that a negative count is caught (a count
    // past LLONG_MAX, which no range has, reads as negative too).
    const auto count = static_cast<long long>(n);
    if (count < 0) {
      throw std::invalid_argument(std::string(algorithm) + ": the count converts to " +
                                  std::to_string(count) + ", which is negative");
    }
    return static_cast<std::size_t>(count);
  } else if constexpr (std::signed_integral<N>) {
    if (n < 0) {
      throw std::invalid_argument(std::string(algorithm) + ": the count is negative (" +
                                  std::to_string(n) + ")");
    }
  }
  return static_cast<std::size_t>(n);
}

// Whether Index can hold value. By hand, not std::in_range, which rejects
// bool and the character types that std::integral admits.
template <std::integral Index, std::integral V>
constexpr bool index_holds(V value) noexcept {
  using limits = std::numeric_limits<Index>;
  if constexpr (std::is_signed_v<V>) {
    // A char bound is a number here, so its sign is meant.
    const auto v = static_cast<std::intmax_t>(value);  // NOLINT(bugprone-signed-char-misuse)
    if (v < 0) {
      return std::is_signed_v<Index> && v >= static_cast<std::intmax_t>(limits::min());
    }
  }
  return static_cast<std::uintmax_t>(value) <= static_cast<std::uintmax_t>(limits::max());
}

// value as an Index, or std::invalid_argument naming the value when Index
// cannot hold it (parallel_for's bounds of two integer types).
template <std::integral Index, std::integral V>
Index checked_index(V value, const char* algorithm, const char* which) {
  if (!index_holds<Index>(value)) {
    const std::string shown = std::is_signed_v<V>
                                  // NOLINTNEXTLINE(bugprone-signed-char-misuse): as above
                                  ? std::to_string(static_cast<std::intmax_t>(value))
                                  : std::to_string(static_cast<std::uintmax_t>(value));
    throw std::invalid_argument(std::string(algorithm) + ": " + which + " (" + shown +
                                ") does not fit the common index type");
  }
  return static_cast<Index>(value);
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
