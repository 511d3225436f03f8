#pragma once

#include <cstddef>
#include <cstdint>
#include <type_traits>

#if defined(__x86_64__)
#include <emmintrin.h>
#endif

// A running integer sum written with non-temporal stores: for scans whose
// output is far larger than the cache, where a plain store first reads the
// line it writes (a read for ownership), so writing costs two transfers
// where a streaming store costs one. glibc's memcpy switches to such stores
// past about three quarters of the shared cache for the same reason.

namespace fjord::detail {

// Output bytes from which a scan streams its output past the cache: three
// quarters of the last-level cache (sysconf), at least 4 MiB; computed once.
std::size_t streaming_store_threshold() noexcept;

// The integer sums the streaming scan takes: 4- or 8-byte integers, summed
// in unsigned arithmetic (wrapping as a left-to-right sum of the same
// values would, without signed overflow).
template <class T>
inline constexpr bool streamable_sum =
    std::is_integral_v<T> && !std::is_same_v<T, bool> && (sizeof(T) == 4 || sizeof(T) == 8);

#if defined(__x86_64__)
// Four (int32) or two (int64) running sums of one 16-byte vector, carry
// added: the in-register scan (shift and add), then the new carry is the
// last lane broadcast. Built in registers, not through memory, so the
// stream store does not wait on a store-to-load forward per vector.
template <class T>
__m128i scan_vector(__m128i x, __m128i& carry) noexcept {
  if constexpr (sizeof(T) == 4) {
    x = _mm_add_epi32(x, _mm_slli_si128(x, 4));
    x = _mm_add_epi32(x, _mm_slli_si128(x, 8));
    x = _mm_add_epi32(x, carry);
    carry = _mm_shuffle_epi32(x, 0xFF);
  } else {
    x = _mm_add_epi64(x, _mm_slli_si128(x, 8));
    x = _mm_add_epi64(x, carry);
    carry = _mm_unpackhi_epi64(x, x);
  }
  return x;
}
#endif

// out[i] = running + in[0] + ... + in[i] for i < count; returns the last sum
// (running when count is 0). Whole 64-byte lines of out are written with
// non-temporal stores, fenced before the return, so they are ordered before
// every later store of this thread, the join that ends the scan included
// (no tile reads another's output). in may equal out: each line is read
// before it is written. Integer addition is associative (in unsigned
// arithmetic), so summing in vectors gives the sequential scan's values.
template <class T>
T streaming_inclusive_sum(const T* in, T* out, std::size_t count, T running) noexcept {
  static_assert(streamable_sum<T>);
  using word = std::make_unsigned_t<T>;
  auto sum = static_cast<word>(running);
  std::size_t i = 0;
#if defined(__x86_64__)
  constexpr std::size_t per_vector = 16 / sizeof(T);
  constexpr std::size_t per_line = 64 / sizeof(T);
  for (; i < count && (reinterpret_cast<std::uintptr_t>(out + i) & 63) != 0; ++i) {
    sum += static_cast<word>(in[i]);
    out[i] = static_cast<T>(sum);
  }
  if (count - i >= per_line) {
    __m128i carry = sizeof(T) == 4 ? _mm_set1_epi32(static_cast<int>(sum))
                                   : _mm_set1_epi64x(static_cast<long long>(sum));
    for (; count - i >= per_line; i += per_line) {
      const auto* from = reinterpret_cast<const __m128i*>(in + i);
      auto* to = reinterpret_cast<__m128i*>(out + i);
      const __m128i x0 = _mm_loadu_si128(from);
      const __m128i x1 = _mm_loadu_si128(from + 1);
      const __m128i x2 = _mm_loadu_si128(from + 2);
      const __m128i x3 = _mm_loadu_si128(from + 3);
      _mm_stream_si128(to, scan_vector<T>(x0, carry));
      _mm_stream_si128(to + 1, scan_vector<T>(x1, carry));
      _mm_stream_si128(to + 2, scan_vector<T>(x2, carry));
      _mm_stream_si128(to + 3, scan_vector<T>(x3, carry));
    }
    static_assert(per_vector * 4 == per_line);
    if constexpr (sizeof(T) == 4) {
      sum = static_cast<word>(static_cast<std::uint32_t>(_mm_cvtsi128_si32(carry)));
    } else {
      sum = static_cast<word>(_mm_cvtsi128_si64(carry));
    }
  }
#endif
  for (; i < count; ++i) {
    sum += static_cast<word>(in[i]);
    out[i] = static_cast<T>(sum);
  }
#if defined(__x86_64__)
  _mm_sfence();
#endif
  return static_cast<T>(sum);
}

}  // namespace fjord::detail
