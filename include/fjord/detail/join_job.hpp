#pragma once

#include "fjord/detail/completion_latch.hpp"
#include "fjord/detail/job.hpp"
#include "fjord/detail/pool_core.hpp"
#include "fjord/detail/result_slot.hpp"
#include "fjord/detail/worker.hpp"

namespace fjord::detail {

// The second closure of a join, as a job that lives in the joiner's stack
// frame. The joiner pushes it, runs the first closure, and then usually pops
// it back and calls the closure directly; only a thief goes through execute().
template <class F, class T>
struct join_job final : job {
  join_job(F& f, worker& owner) noexcept
      : job(&execute), fn(f), pool(owner.pool), latch(1, owner.index + 1) {}

  static void execute(job* j) noexcept {
    auto* self = static_cast<join_job*>(j);
    self->result.run(self->fn);
    // The joiner may return (destroying *self) as soon as the count drops.
    self->pool->count_down(self->latch);
  }

  F& fn;
  pool_core* pool;
  completion_latch latch;
  result_slot<T> result;
};

}  // namespace fjord::detail
