#pragma once

#include <atomic>
#include <cstdint>

#include "fjord/detail/completion_latch.hpp"
#include "fjord/detail/job.hpp"
#include "fjord/detail/pool_core.hpp"
#include "fjord/detail/result_slot.hpp"

namespace fjord::detail {

// The state a submitted job shares with its future: one allocation holds the
// job, the callable and the result. Two references (job, future); the last
// one to let go frees it, so the future may outlive the pool.
template <class T>
struct future_state : job {
  using destroy_fn = void (*)(future_state*) noexcept;

  future_state(job::execute_fn exec, destroy_fn destroy, pool_core* p) noexcept
      : job(exec), destroyer(destroy), pool(p) {}

  void release() noexcept {
    if (refs.fetch_sub(1, std::memory_order_acq_rel) == 1) {
      destroyer(this);
    }
  }

  destroy_fn destroyer;
  std::atomic<std::uint32_t> refs{2};
  pool_core* pool;
  completion_latch latch{1};
  result_slot<T> result;
};

}  // namespace fjord::detail
