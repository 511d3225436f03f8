#pragma once

#include <coroutine>

#include "fjord/detail/job.hpp"
#include "fjord/detail/pool_core.hpp"
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

// A coroutine parked on a timer or an async primitive, and where it goes on
// when woken: back to the pool it was running on (as a job, on the waker's
// own deque when the waker is a worker of that pool). One that was not on a
// pool goes to `fallback` if given (timers: fjord::default_pool(), so user
// code never runs on the timer thread), else to the waker's pool if the waker
// is a worker (it must not wait behind the worker's current job), else it
// runs inline on the waking thread, through the trampoline.
// The pool a coroutine suspended on must outlive its parked state.
struct parked_coroutine : resume_job {
  pool_core* home = nullptr;

  void park(std::coroutine_handle<> h) noexcept {
    handle = h;
    const worker* w = current_worker;
    home = w != nullptr ? w->pool : nullptr;
  }

  void wake(pool_core* fallback = nullptr) noexcept {
    pool_core* target = home != nullptr ? home : fallback;
    if (target == nullptr && current_worker != nullptr) {
      target = current_worker->pool;
    }
    if (target != nullptr) {
      try {
        target->enqueue(this);
        return;
      } catch (...) {
        // The pool refuses work from outside once its destruction began;
        // rather than lose the coroutine, run it here.
      }
    }
    resume_inline(*this);
  }
};

}  // namespace fjord::detail
