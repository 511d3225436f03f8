// Jobs that run on one given thread of a pool (pool::post_to, submit_to,
// schedule_on): docs/scheduler.md, "Pinned jobs".

#include <algorithm>
#include <mutex>
#include <new>
#include <stdexcept>
#include <string>

#include "fjord/detail/pool_core.hpp"
#include "fjord/detail/pool_core_cold.hpp"

namespace fjord::detail {

namespace {

// Carries a job to its thread's inbox. Whoever runs it first checks the
// thread: a node that reached another one (a pause puts the job a worker
// took back on its deque, where a helper may steal it) goes back to the
// inbox, so no path can run the job elsewhere.
struct pinned_node final : job {
  pinned_node(job* what, worker* where) noexcept : job(&execute), inner(what), target(where) {}

  static void execute(job* j) noexcept {
    auto* self = static_cast<pinned_node*>(j);
    worker* target = self->target;
    if (current_worker != target) {
      // On a worker of the same pool (only its queues held the node):
      // inside a job of that pool, so no shutdown handshake is needed.
      target->inbox.push(self);
      target->sleeper.unpark();
      return;
    }
    job* inner = self->inner;
    self->~pinned_node();
    job_heap::deallocate(self);
    run_job(inner);
  }

  job* inner;
  worker* target;
};

}  // namespace

void pool_core::inject_to_thread(std::size_t index, job* j) {
  // Not a slot whose start is under way: that start may fail, and its jobs
  // would wait in an inbox nobody empties. A thread's own start hook sees
  // itself started.
  const std::size_t made = started_thread_count();
  const worker* self = current_worker_of(this);
  if (index >= made) {
    throw std::out_of_range("fjord::pool: no thread " + std::to_string(index) +
                            " to run a job on: the pool has made " + std::to_string(made) +
                            " threads, numbered from 0");
  }
  worker& target = *workers_[index];
  const bool own = self != nullptr;
  if (!own) {
    if (fork_generation_ != fork_generation()) [[unlikely]] {
      throw_forked();
    }
    // As push_to_shard(): either we see stopping_, or shut_down() waits
    // for us before it lets the pool end.
    pinned_submitters_.fetch_add(1, std::memory_order_seq_cst);
    if (stopping_.load(std::memory_order_seq_cst)) {
      pinned_submitters_.fetch_sub(1, std::memory_order_release);
      throw_shutdown();
    }
  }
  void* memory = nullptr;
  try {
    memory = allocate_job(sizeof(pinned_node), alignof(pinned_node));
  } catch (...) {
    if (!own) {
      pinned_submitters_.fetch_sub(1, std::memory_order_release);
    }
    throw;
  }
  auto* node = ::new (memory) pinned_node(j, &target);
  trace_point(trace_kind::inject, 0, trace_address(j), id_);
  // No census, no Dekker handshake: the target alone may take the job, so
  // it alone is woken, and its parker's token covers every moment (a token
  // left before it parks makes the park return at once; it then finds the
  // job, since it looks at its inbox before each park: sleep(),
  // park_retired()). An unpark of a busy thread leaves a stale token,
  // which every park loop tolerates.
  target.inbox.push(node);
  target.sleeper.unpark();
  if (!own) {
    pinned_submitters_.fetch_sub(1, std::memory_order_release);
  }
}

job* pool_core::take_pinned(worker& w) noexcept {
  // Not the tail-only hint: after a pop that raced a push, the tail can
  // be the sentinel while a job still waits behind the head, and the hint
  // would then miss it for good (a livelock: the end rule sees the job, so
  // the pool never ends, and its thread never takes it).
  if (!w.inbox.maybe_nonempty()) {
    return nullptr;
  }
  // The owner is the inbox's only consumer: the lock never fails here.
  if (!w.inbox.try_lock_consumer()) {
    return nullptr;
  }
  job* j = w.inbox.pop();
  w.inbox.unlock_consumer();
  if (j != nullptr) {
    w.counters.injected_taken.bump();
  }
  return j;
}

bool pool_core::any_pinned_work() const noexcept {
  const std::size_t n = thread_count();
  for (std::size_t i = 0; i < n; ++i) {
    if (workers_[i]->inbox.maybe_nonempty()) {
      return true;
    }
  }
  return false;
}

void pool_core::rejoin_for_pinned_work_locked(worker& w) noexcept {
  std::erase(cold_->retired, &w);
  w.retired = false;
  // As a thread back from blocking: it may settle a phantom sleeper, and it
  // is the one to retire again. It was one of the stand-ins the phantoms
  // counted on: one the others can no longer have goes.
  rejoin_running_locked(w);
  drop_unanswerable_phantoms_locked();
  wake_monitor_locked();
}

}  // namespace fjord::detail
