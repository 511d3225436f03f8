#pragma once

#include <cstdint>

#if defined(__x86_64__) || defined(__i386__)
#include <x86intrin.h>
#endif

#include "fjord/detail/chrono.hpp"

namespace fjord::detail {

// A cheap, monotonic tick count for sizing work, not for telling time: the
// TSC on x86 (about 12 ns a read here, against 32 ns for steady_clock), whose
// rate is the CPU's nominal frequency; nanoseconds elsewhere.
struct cycle_clock {
  static std::uint64_t now() noexcept {
#if defined(__x86_64__) || defined(__i386__)
    return __rdtsc();
#else
    return static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                          std::chrono::steady_clock::now().time_since_epoch())
                                          .count());
#endif
  }
};

}  // namespace fjord::detail
