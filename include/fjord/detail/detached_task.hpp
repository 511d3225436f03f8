#pragma once

#include "fjord/detail/task_promise.hpp"
#include "fjord/detail/transfer.hpp"
#include "fjord/pool.hpp"
#include "fjord/task.hpp"

namespace fjord::detail {

// Starts t on p as a job, detached: nobody awaits it, and when it ends it
// sends an escaping exception to p's unhandled_exception_handler and frees
// its own frame (task_promise.hpp, detached_mark). No root coroutine wraps
// it, so a process blocked on a channel costs its own frame alone. The job
// that starts it is a post's (a lane slot from outside, a job-heap block
// from a worker, freed once it runs); if the post throws (p is being
// destroyed), t is destroyed unrun.
template <class T>
void start_detached(pool& p, task<T> t) {
  const auto h = task_access::handle(t);
  h.promise().detach(&pool_access::core(p));
  p.post([h]() noexcept { resume(h); });
  task_access::release(t);
}

}  // namespace fjord::detail
