#pragma once

#include <cstddef>

// Compiler and platform knobs shared by fjord's internals.

#if defined(__GNUC__) || defined(__clang__)
#define FJORD_ALWAYS_INLINE inline __attribute__((always_inline))
#define FJORD_NOINLINE __attribute__((noinline))
#define FJORD_COLD __attribute__((cold, noinline))
#else
#define FJORD_ALWAYS_INLINE inline
#define FJORD_NOINLINE
#define FJORD_COLD
#endif

#if defined(__SANITIZE_THREAD__)
#define FJORD_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define FJORD_TSAN 1
#endif
#endif
#ifndef FJORD_TSAN
#define FJORD_TSAN 0
#endif

#if defined(__SANITIZE_ADDRESS__)
#define FJORD_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define FJORD_ASAN 1
#endif
#endif
#ifndef FJORD_ASAN
#define FJORD_ASAN 0
#endif

namespace fjord::detail {

// Two lines: Intel's adjacent-line prefetcher pulls lines in pairs, so truly
// shared atomics are padded to 128 bytes to keep neighbours off them.
inline constexpr std::size_t false_sharing_range = 128;

// A hint inside spin loops (PAUSE on x86, YIELD on ARM).
inline void cpu_relax() noexcept {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield" ::: "memory");
#endif
}

}  // namespace fjord::detail
