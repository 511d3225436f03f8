#pragma once

#include "fjord/detail/assert.hpp"
#include "fjord/detail/pool_core.hpp"
#include "fjord/detail/task_promise.hpp"
#include "fjord/detail/transfer.hpp"
#include "fjord/detail/worker.hpp"
#include "fjord/pool.hpp"
#include "fjord/task.hpp"

namespace fjord::detail {

// The job a detached task's promise holds while it waits to start on a
// worker of its pool (promise_base::make_start_job): on that worker, it
// makes the task detached on the worker's pool and runs it.
template <class Promise>
void start_detached_job(job* j) noexcept {
  FJORD_ASSERT(current_worker != nullptr, "a detached task's start job run off its pool");
  promise_base& promise = promise_base::of_start_job(j);
  promise.detach(current_worker->pool);
  resume(std::coroutine_handle<Promise>::from_promise(static_cast<Promise&>(promise)));
}

// Starts t on p as a job, detached: nobody awaits it, and when it ends it
// sends an escaping exception to p's unhandled_exception_handler and frees
// its own frame (task_promise.hpp, detached_mark). No root coroutine wraps
// it, so a process blocked on a channel costs its own frame alone. From a
// worker of p the job that starts it is in its own promise, pushed on the
// worker's deque (the job runs only on p's workers, which is how it finds
// p again). From elsewhere it is a post's (a lane slot from outside, a
// job-heap block from another pool's worker, freed once it runs); if the
// post throws (p is being destroyed), t is destroyed unrun.
template <class T>
void start_detached(pool& p, task<T> t) {
  const auto h = task_access::handle(t);
  pool_core& core = pool_access::core(p);
  if (worker* w = current_worker_of(&core); w != nullptr) {
    core.push_or_inject(w, h.promise().make_start_job(&start_detached_job<task_promise<T>>));
    task_access::release(t);  // pushed (a worker of p is never refused)
    return;
  }
  h.promise().detach(&core);
  p.post([h]() noexcept { resume(h); });
  task_access::release(t);
}

}  // namespace fjord::detail
