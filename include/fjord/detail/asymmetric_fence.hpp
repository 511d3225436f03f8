#pragma once

#include <atomic>

#include "fjord/detail/config.hpp"

namespace fjord::detail {

// Asymmetric fences (Dice, Lev and Moir's asymmetric Dekker synchronisation;
// Ladan-Mozes, Lee and Vyukov, "Location-based memory fences", SPAA 2011,
// which applies the idea to the THE work-stealing protocol). The frequent
// side of a Dekker-style handshake (a deque owner popping, a worker pushing
// and checking for sleepers) executes light_fence(), a compiler barrier only.
// The rare side (a thread that starts stealing, or is about to sleep) executes
// heavy_fence(), which runs membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED): the
// kernel makes every running thread of the process execute a full barrier
// before the call returns. So for any light side L and heavy side H, either L's
// preceding stores are visible to H's following loads, or L's following loads
// see H's preceding stores: exactly what a seq_cst fence on both sides gives.
//
// Where membarrier is unavailable (old kernels, seccomp, valgrind), both
// functions fall back to real seq_cst fences.

// Registers the process for expedited membarrier once; idempotent.
void init_asymmetric_fences() noexcept;

// True when light_fence() is only a compiler barrier.
inline constinit std::atomic<bool> asymmetric_fences_enabled{false};

// A full two-way fence. TSan does not model atomic_thread_fence (and GCC warns
// about it), so under TSan a seq_cst read-modify-write stands in; it is a full
// barrier on the hardware as well.
inline void full_fence() noexcept {
#if FJORD_TSAN
  static constinit std::atomic<int> fence_word{0};
  fence_word.fetch_add(0, std::memory_order_seq_cst);
#else
  std::atomic_thread_fence(std::memory_order_seq_cst);
#endif
}

inline void light_fence() noexcept {
  if (asymmetric_fences_enabled.load(std::memory_order_relaxed)) {
    std::atomic_signal_fence(std::memory_order_seq_cst);
  } else {
    full_fence();
  }
}

void heavy_fence() noexcept;

}  // namespace fjord::detail
