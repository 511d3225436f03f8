// Callers that join a pool for one call (pool_options::callers_join):
// docs/scheduler.md, "Callers that join".

#include <chrono>
#include <mutex>

#include "fjord/detail/assert.hpp"
#include "fjord/detail/fork_generation.hpp"
#include "fjord/detail/pool_core.hpp"
#include "fjord/detail/pool_core_cold.hpp"
#include "fjord/detail/worker_thread.hpp"

namespace fjord::detail {

bool pool_core::call_as_guest(void (*fn)(void*) noexcept, void* arg) noexcept {
  worker* g = guest_;
  // A worker (of any pool) keeps its own identity: it waits with
  // compensation instead.
  if (g == nullptr || current_worker != nullptr) {
    return false;
  }
  // The relaxed look spares a line another caller holds; the CAS is
  // seq_cst against shut_down(), which stores stopping_ and then looks at
  // guest_state_: either we see stopping_ below, or it waits for us to leave.
  std::uint32_t expected = guest_free;
  if (guest_state_.load(std::memory_order_relaxed) != guest_free ||
      !guest_state_.compare_exchange_strong(expected, guest_busy, std::memory_order_seq_cst)) {
    return false;
  }
  // A paused pool starts no job, so the call waits for resume() as a job;
  // a closing one refuses it (the caller's inject() throws); a pool made
  // before a fork() has no threads here.
  if (stopping_.load(std::memory_order_seq_cst) || paused_.load(std::memory_order_relaxed) != 0 ||
      fork_generation_ != fork_generation() || !cold_->guest_stack.ready()) {
    leave_guest(*g);
    return false;
  }
  const borrowed_stack& stack = cold_->guest_stack;
  // As a worker's: helping (running other jobs on top of a wait) stops at
  // half the stack, and the rest is for the call's own depth.
  g->stack_half = stack.low() + (stack.high() - stack.low()) / 2;
  set_current_worker(g);
  guest_takes_place();
  trace_point(trace_kind::job_begin, 0, trace_address(arg));
  {
    const borrowed_stack_scope overflow_report(stack.low(), stack.high(), cold_->guest_stack_name);
    cold_->guest_stack.run(fn, arg);
  }
  trace_point(trace_kind::job_end, 0, trace_address(arg));
  g->counters.jobs_run.bump();
  leave_guest(*g);
  return true;
}

void pool_core::leave_guest(worker& g) noexcept {
  if (fork_generation_ != fork_generation()) {
    // A fork() child that went on with the call: the pool's threads and
    // locks are the parent's. Leave the slot taken (the pool refuses work
    // here anyway).
    return;
  }
  if (current_worker == &g) {
    FJORD_ASSERT(!g.searching && g.blocking_depth == 0,
                 "call_as_guest: the guest leaves searching or blocked");
    // The call's own forks were all joined; what is left was pushed by jobs
    // it ran (a post, a coroutine it woke) and is work in progress, which
    // even a closing pool takes: shut_down() waits for us to leave first.
    job_chain left;
    if (job* j = g.runnext.exchange(nullptr, std::memory_order_acquire)) {
      left.push_back(j);
    }
    while (job* j = g.deque.pop()) {
      left.push_back(j);
    }
    if (left.count != 0) {
      shards_[g.index & shard_mask_]->queue.push_chain(left.first, left.last, left.count);
      notify_injected();
    }
    set_current_worker(nullptr);
    guest_gives_place();
  }
  // seq_cst: against wait_idle(), which counts itself in idle_waiters_ and
  // then looks at guest_state_ (quiescent_locked()): either it sees us no
  // longer busy, or we see it and announce. Leaving, not yet free: the pool
  // cannot end under the announcement (shut_down() waits for free).
  guest_state_.store(guest_leaving, std::memory_order_seq_cst);
  if (idle_waiters_.load(std::memory_order_seq_cst) != 0) {
    std::lock_guard lock(cold_->idle_mutex);
    announce_if_quiescent_locked();
  }
  // Our last touch of the pool.
  guest_state_.store(guest_free, std::memory_order_release);
}

}  // namespace fjord::detail
