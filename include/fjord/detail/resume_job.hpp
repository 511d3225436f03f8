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

 private:
  static void resume_at_home(job* j) noexcept {
    auto* self = static_cast<waiting_coroutine*>(j);
    self->home->note_resumed();  // on a worker of home, before it can go idle
    resume(self->handle);
  }
};

}  // namespace fjord::detail
