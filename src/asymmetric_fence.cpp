#include "fjord/detail/asymmetric_fence.hpp"

#include <cstdlib>
#include <mutex>

#if defined(__linux__)
#include <linux/membarrier.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif

namespace fjord::detail {

namespace {

bool register_membarrier() noexcept {
#if defined(__linux__) && defined(SYS_membarrier)
  // FJORD_SYMMETRIC_FENCES=1 forces the fallback (for testing it, and for
  // machines where IPIs are costly).
  // NOLINTNEXTLINE(concurrency-mt-unsafe): read once, under call_once
  if (const char* env = std::getenv("FJORD_SYMMETRIC_FENCES"); env && env[0] == '1') {
    return false;
  }
  long supported = syscall(SYS_membarrier, MEMBARRIER_CMD_QUERY, 0, 0);
  if (supported < 0 || (supported & MEMBARRIER_CMD_PRIVATE_EXPEDITED) == 0) {
    return false;
  }
  return syscall(SYS_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED, 0, 0) == 0;
#else
  return false;
#endif
}

}  // namespace

void init_asymmetric_fences() noexcept {
  static std::once_flag once;
  std::call_once(once, [] {
    asymmetric_fences_enabled.store(register_membarrier(), std::memory_order_relaxed);
  });
}

void heavy_fence() noexcept {
#if defined(__linux__) && defined(SYS_membarrier)
  if (asymmetric_fences_enabled.load(std::memory_order_relaxed)) {
    // The call is itself a full barrier on this CPU, then an IPI-driven one on
    // every CPU running one of our threads. It cannot fail once registered.
    syscall(SYS_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0, 0);
    return;
  }
#endif
  full_fence();
}

}  // namespace fjord::detail
