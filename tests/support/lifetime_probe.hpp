#pragma once

#include <atomic>

namespace fjord_test {

// Counts live instances: put one in a coroutine body and the count says how
// many frames have not been destroyed yet.
struct lifetime_probe {
  static inline std::atomic<long> live{0};
  lifetime_probe() noexcept { live.fetch_add(1, std::memory_order_relaxed); }
  lifetime_probe(const lifetime_probe&) noexcept { live.fetch_add(1, std::memory_order_relaxed); }
  lifetime_probe& operator=(const lifetime_probe&) = default;
  ~lifetime_probe() { live.fetch_sub(1, std::memory_order_relaxed); }
};

}  // namespace fjord_test
