#pragma once

#include <exception>
#include <functional>
#include <new>
#include <utility>

#include "fjord/detail/future_state.hpp"
#include "fjord/detail/job.hpp"
#include "fjord/detail/job_heap.hpp"
#include "fjord/detail/lane_ring.hpp"
#include "fjord/detail/pool_core.hpp"
#include "fjord/detail/worker.hpp"
#include "fjord/scalable_memory.hpp"

namespace fjord::detail {

// A fire-and-forget job: the callable lives in a block from the submitting
// worker's job heap (operator new from other threads).
template <class F>
struct posted_job final : job {
  template <class G>
  posted_job(G&& g, pool_core* p) : job(&execute), fn(std::forward<G>(g)), pool(p) {}

  static void execute(job* j) noexcept {
    auto* self = static_cast<posted_job*>(j);
    pool_core* p = self->pool;
    try {
      std::invoke(self->fn);
    } catch (...) {
      p->report_unhandled(std::current_exception());
    }
    self->~posted_job();
    job_heap::deallocate(self);
  }

  F fn;
  pool_core* pool;
};

// A fire-and-forget job built in a slot of a submission lane: runs and is
// destroyed in place, then frees the slot. Slots run only on workers of the
// pool they were posted to.
template <class F>
void run_in_slot(job* j) noexcept {
  auto* s = static_cast<lane_ring::slot*>(j);
  F* fn = std::launder(reinterpret_cast<F*>(s->storage));
  try {
    std::invoke(*fn);
  } catch (...) {
    current_worker->pool->report_unhandled(std::current_exception());
  }
  fn->~F();
  s->release();
}

template <class F, class T>
struct submitted_job final : future_state<T> {
  template <class G>
  submitted_job(G&& g, pool_core* p)
      : future_state<T>(&execute, &destroy, p), fn(std::forward<G>(g)) {}

  static void execute(job* j) noexcept {
    auto* self = static_cast<submitted_job*>(j);
    self->result.run(self->fn);
    self->pool->count_down(self->latch);
    self->release();
  }
  // From the scalable allocator, with no job_heap header: the state may
  // outlive the pool (the allocator's heaps live as long as the process),
  // and a state is the unit a submit-heavy program holds millions of (16
  // bytes fewer is a size class fewer). The submitter's heap, unlocked,
  // rather than malloc: the eff_commit benchmark spent 30% of its time in
  // glibc's malloc and free.
  static submitted_job* make(auto&& g, pool_core* p) {
    void* mem = alignof(submitted_job) > __STDCPP_DEFAULT_NEW_ALIGNMENT__
                    ? scalable_allocate(sizeof(submitted_job), alignof(submitted_job))
                    : scalable_allocate(sizeof(submitted_job));
    try {
      return ::new (mem) submitted_job(std::forward<decltype(g)>(g), p);
    } catch (...) {
      scalable_deallocate(mem);
      throw;
    }
  }
  static void destroy(future_state<T>* s) noexcept {
    auto* self = static_cast<submitted_job*>(s);
    self->~submitted_job();
    scalable_deallocate(self);
  }

  F fn;
};

// Builds a T in memory from job_heap::allocate or pool_core::allocate_job,
// giving the memory back if the constructor throws.
template <class T, class... Args>
T* construct_job(void* mem, Args&&... args) {
  try {
    return ::new (mem) T(std::forward<Args>(args)...);
  } catch (...) {
    job_heap::deallocate(mem);
    throw;
  }
}

}  // namespace fjord::detail
