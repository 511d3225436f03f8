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
      : job(&execute), fn(f), latch(completion_latch::raw_word{owner.join_latch_word}) {}

  // Only thieves get here, and a thief is a worker of the joiner's pool.
  static void execute(job* j) noexcept {
    auto* self = static_cast<join_job*>(j);
    self->result.run(self->fn);
    // The joiner may return (destroying *self) as soon as the count drops.
    current_worker->pool->count_down(self->latch);
  }

  F& fn;
  completion_latch latch;
  result_slot<T> result;
};

}  // namespace fjord::detail
