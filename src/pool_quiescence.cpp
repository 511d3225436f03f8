// Waiting for a pool to go idle, and pausing it: docs/scheduler.md,
// "Waiting for idle" and "Pause".

#include <mutex>
#include <stdexcept>

#include "fjord/detail/blocking_section.hpp"
#include "fjord/detail/futex.hpp"
#include "fjord/detail/pool_core.hpp"
#include "fjord/detail/pool_core_cold.hpp"

namespace fjord::detail {

bool pool_core::quiescent_locked() const noexcept {
  // The waiting count before the queues, as in try_end_locked(): a resumption is
  // queued before its count drops.
  // A guest's call is work in the pool until the guest leaves (leave_guest()
  // announces then).
  return cold_->idle_main_loop + cold_->retired.size() == cold_->reserved && waiting_count() == 0 &&
         guest_state_.load(std::memory_order_seq_cst) != guest_busy && !any_work_visible() &&
         !any_pinned_work();
}

void pool_core::announce_if_quiescent_locked() noexcept {
  if (quiescent_locked()) {
    idle_epoch_.fetch_add(1, std::memory_order_release);
    futex_wake_all(&idle_epoch_);
  }
}

void pool_core::wait_idle() {
  if (current_worker_of(this) != nullptr) {
    throw std::logic_error(
        "fjord::pool::wait_idle: called on one of the pool's own threads, which would wait for "
        "itself");
  }
  // A worker of another pool hands its place to a spare meanwhile.
  const blocking_section blocking;
  std::uint32_t epoch = 0;
  {
    std::lock_guard lock(cold_->idle_mutex);
    // Registered under the lock a thread takes to go idle: either it sees
    // us (and announces) or we see it idle below. A leaving guest takes no
    // lock first, so for it the registration comes before the look, both
    // seq_cst, against its store of guest_state_ and its look at the count
    // (leave_guest()).
    idle_waiters_.fetch_add(1, std::memory_order_seq_cst);
    if (exit_.load(std::memory_order_relaxed) || quiescent_locked()) {
      idle_waiters_.fetch_sub(1, std::memory_order_relaxed);
      return;  // ended (everything ran), or nothing to wait for
    }
    epoch = idle_epoch_.load(std::memory_order_relaxed);
  }
  // Any change of the epoch after our registration is a quiescent moment
  // that came after everything we submitted. The wait ends too when the
  // pool ends (its last thread going idle announces first).
  while (idle_epoch_.load(std::memory_order_acquire) == epoch) {
    futex_wait(&idle_epoch_, epoch);
  }
  // Taking the lock also orders the jobs' effects before our return: each
  // ran before its thread went idle under this mutex.
  std::lock_guard lock(cold_->idle_mutex);
  idle_waiters_.fetch_sub(1, std::memory_order_relaxed);
}

void pool_core::resume() noexcept {
  if (paused_.exchange(0, std::memory_order_seq_cst) != 0) {
    futex_wake_all(&paused_);
  }
}

void pool_core::hold_while_paused(worker& w, job* j) noexcept {
  // Back where its owner runs it first after resume(); nobody is woken for
  // it (they would only pause too).
  if (!w.deque.push(j)) {
    shards_[w.index & shard_mask_]->queue.push(j);
  }
  while (paused_.load(std::memory_order_acquire) != 0) {
    futex_wait(&paused_, 1);
  }
}

}  // namespace fjord::detail
