#pragma once

#include <coroutine>

#include "fjord/detail/job.hpp"
#include "fjord/detail/pool_core.hpp"
#include "fjord/detail/sync_wait_loop.hpp"
#include "fjord/detail/transfer.hpp"
#include "fjord/detail/worker.hpp"

namespace fjord::detail {

// A job that resumes a suspended coroutine. It lives in the awaiter, that is
// inside the suspended frame, so handing a coroutine to the scheduler never
// allocates. execute() must not touch the job after resume(): the frame, and
// the job with it, may be gone by then.
struct resume_job : job {
  resume_job() noexcept : job(&execute) {}

  static void execute(job* j) noexcept { resume(static_cast<resume_job*>(j)->handle); }

  std::coroutine_handle<> handle;
};

// Resumes h on this thread, through a per-thread trampoline: if the thread is
// already inside such a resumption, h is queued and resumed when the outer
// one returns, so a cascade of wake-ups (each unlock resuming the next
// waiter, which unlocks...) never grows the stack.
void resume_inline(resume_job& j) noexcept;

class resume_batch;

// A coroutine waiting on a timer or an async primitive, and where it goes on
// when woken: back to the thread blocked in sync_wait that it was running
// on (its task's), or else back to the pool it was running on (as a job, on
// the waker's own deque when the waker is a worker of that pool; also while
// that pool is being destroyed, which waits for it). A coroutine that was on neither (driven
// by some other library) goes to the waker's pool if the waker is a worker,
// else to fjord::default_pool(), else (static destruction) runs inline on
// the waking thread, through the trampoline.
struct waiting_coroutine : resume_job {
  pool_core* home = nullptr;
  sync_wait_loop* loop = nullptr;

  void begin_wait(std::coroutine_handle<> h) noexcept {
    handle = h;
    worker* w = current_worker;
    if (sync_wait_loop* waiting = sync_wait_loop::current(); waiting != nullptr || w == nullptr) {
      // Part of the task a sync_wait on this thread runs (on a worker too:
      // the worker is blocked in that sync_wait, and must not depend on
      // other threads of its pool, which may all be blocked likewise).
      home = nullptr;
      loop = waiting;
      job::execute = &resume_job::execute;
    } else {
      home = w->pool;
      loop = nullptr;
      job::execute = &resume_at_home;
      pool_core::note_waiting(*w);
      trace_point(trace_kind::coroutine_suspend, 0, trace_address(static_cast<job*>(this)));
    }
  }

  // The coroutine did not suspend after all (a sleep canceled before its
  // timer was armed): undo begin_wait().
  void undo_begin_wait() noexcept {
    if (home != nullptr) {
      home->note_resumed();
    }
  }

  // Sends the coroutine on (see above). *this may be gone once it returns.
  void wake() noexcept;

  // A worker that takes j from a linked queue, where jobs are reached one
  // cache miss after another: if j resumes a coroutine of a pool, asks for
  // the first lines of its frame now, so that fetching them overlaps the
  // misses on the jobs behind it instead of following them.
  static void prefetch_frame(job* j) noexcept {
    if (j->execute == &resume_at_home) {
      const auto* frame =
          static_cast<const char*>(static_cast<waiting_coroutine*>(j)->handle.address());
      __builtin_prefetch(frame);
      __builtin_prefetch(frame + 64);
    }
  }

  // Instead of wake(): joins `batch` if this coroutine waits on a pool the
  // calling thread does not work for (false: not taken, wake() it). It is
  // resumed, and may be gone, once the batch hands it over.
  bool join(resume_batch& batch) noexcept;

 private:
  static void resume_at_home(job* j) noexcept {
    auto* self = static_cast<waiting_coroutine*>(j);
    self->home->note_resumed();  // on a worker of home, before it can go idle
    resume(self->handle);
  }
};

// Coroutines woken together (the waiters a close() claimed, woken after it
// released the channel's lock), handed to their pool as chains linked
// through their jobs: one push onto its injection path and one wake-up
// check per chain instead of one each. A chain holds one pool's coroutines
// and at most flush_at of them, so the workers start on the first ones
// while the rest are being linked.
class resume_batch {
 public:
  resume_batch() noexcept = default;
  resume_batch(const resume_batch&) = delete;
  resume_batch& operator=(const resume_batch&) = delete;
  ~resume_batch() { flush(); }

  void add(pool_core* home, job* j) noexcept {
    if (home != home_) {
      flush();
      home_ = home;
    }
    if (count_ == 0) {
      first_ = j;
    } else {
      last_->next().store(j, std::memory_order_relaxed);  // published by the push
    }
    last_ = j;
    if (++count_ == flush_at) {
      flush();
    }
  }

  void flush() noexcept {
    if (count_ != 0) {
      home_->resume_waiting_chain(first_, last_, count_);
      count_ = 0;
    }
  }

 private:
  static constexpr std::uint64_t flush_at = 256;

  pool_core* home_ = nullptr;
  job* first_ = nullptr;
  job* last_ = nullptr;
  std::uint64_t count_ = 0;
};

}  // namespace fjord::detail
