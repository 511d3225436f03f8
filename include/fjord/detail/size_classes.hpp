#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>

namespace fjord::detail {

// The scalable allocator's size classes: 16-byte steps up to 128 bytes,
// then four classes per power of two up to 512 KiB (mimalloc's and
// jemalloc's spacing: at most 25% of a block is rounding). Every power of
// two from 16 up is a class, so a block of a power-of-two class is aligned
// to its size within its span; the allocator relies on that for alignment
// requests. Every class from 32 KiB up is a multiple of 4 KiB, so such
// blocks start at the same offset in a page as every large block (see
// docs/allocator.md on 4 KiB aliasing).
inline constexpr std::size_t size_class_count = 56;
inline constexpr std::size_t max_class_size = std::size_t{512} * 1024;
inline constexpr std::size_t min_block_alignment = 16;

// The class of a request of n bytes, 1 <= n <= max_class_size.
constexpr unsigned size_class_of(std::size_t n) noexcept {
  if (n <= 128) {
    return static_cast<unsigned>((n + 15) / 16) - 1;
  }
  // 2^(b-1) < n <= 2^b with b >= 8; the two bits below the top one of
  // n - 1 pick one of the four classes in (2^(b-1), 2^b].
  const auto b = static_cast<unsigned>(std::bit_width(n - 1));
  return 8 + (b - 8) * 4 + static_cast<unsigned>((n - 1) >> (b - 3)) - 4;
}

// The block size of class c.
constexpr std::size_t class_block_size(unsigned c) noexcept {
  if (c < 8) {
    return std::size_t{16} * (c + 1);
  }
  const unsigned b = 8 + (c - 8) / 4;
  const std::size_t k = (c - 8) % 4 + 5;
  return k << (b - 3);
}

}  // namespace fjord::detail
