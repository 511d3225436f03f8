#pragma once

#include <exception>
#include <type_traits>
#include <utility>

#include "fjord/detail/assert.hpp"
#include "fjord/detail/config.hpp"
#include "fjord/detail/join_job.hpp"
#include "fjord/detail/pool_core.hpp"
#include "fjord/detail/result_slot.hpp"
#include "fjord/detail/sync_wait_loop.hpp"
#include "fjord/detail/trace_point.hpp"
#include "fjord/detail/worker.hpp"

namespace fjord::detail {

// fjord::join_result_t: void when both return void, otherwise a pair of
// their storable forms.
template <class A, class B>
using join_result = std::conditional_t<std::is_void_v<A> && std::is_void_v<B>, void,
                                       std::pair<storable_t<A>, storable_t<B>>>;

// Calls f and returns its result in storable form (void as std::monostate).
// (Here and below f() rather than std::invoke(f): the same with no
// arguments, without <functional>.)
template <class F>
FJORD_ALWAYS_INLINE storable_t<std::invoke_result_t<F&>> invoke_storable(F& f) {
  if constexpr (std::is_void_v<std::invoke_result_t<F&>>) {
    f();
    return {};
  } else {
    return f();
  }
}

// Both sides have run (each result holds a value or an exception): rethrow
// a's exception, else b's, else return both values.
template <class RA, class RB>
auto join_finish(pool_core& p, result_slot<RA>& ra, result_slot<RB>& rb) -> join_result<RA, RB> {
  if (ra.has_error()) {
    if (rb.has_error()) {
      p.count_suppressed();
    }
    std::rethrow_exception(ra.error());
  }
  if (rb.has_error()) {
    std::rethrow_exception(rb.error());
  }
  if constexpr (std::is_void_v<RA> && std::is_void_v<RB>) {
    return;
  } else {
    return {ra.take_storable(), rb.take_storable()};
  }
}

// Inlined into the caller, so a join costs no call and no frame of its own
// (callgrind, fib(27): 96 instructions per join before, 76 after).
template <class FA, class FB>
FJORD_ALWAYS_INLINE auto join_on_worker(worker& w, FA& a, FB& b)
    -> join_result<std::invoke_result_t<FA&>, std::invoke_result_t<FB&>> {
  using ra_t = std::invoke_result_t<FA&>;
  using rb_t = std::invoke_result_t<FB&>;
  FJORD_ASSERT(&w == current_worker, "join: only a deque's owner may push and pop it");
  join_job<FB, rb_t> jb(b, w);
  result_slot<ra_t> ra;
  if (!w.deque.push(&jb)) [[unlikely]] {
    // Deque full: this deep, running sequentially loses nothing.
    ra.run(a);
    jb.result.run(b);
    return join_finish(*w.pool, ra, jb.result);
  }
  w.pool->notify_local_push(w);
  ra.run(a);
  job* j = nullptr;
  while ((j = w.deque.pop()) != &jb) {
    if (j == nullptr) {
      // Stolen: help until the thief is done with it.
      w.pool->help_until(w, jb.latch);
      return join_finish(*w.pool, ra, jb.result);
    }
    // Work that a pushed without waiting for (task_group children, posts,
    // coroutines woken here): other computations, which must not take a
    // sync_wait running on this thread for their own (cold path).
    w.counters.jobs_run.bump();
    trace_point(trace_kind::job_begin, 0, trace_address(j));
    run_unrelated_job(j);
    trace_point(trace_kind::job_end, 0, trace_address(j));
  }
  // Not stolen (the common case): call b directly.
  if (ra.has_error()) [[unlikely]] {
    jb.result.run(b);
    return join_finish(*w.pool, ra, jb.result);
  }
  // a finished cleanly, so an exception from b may simply propagate. b runs
  // before a's result is moved out: that move may throw, and both closures
  // must have run before any exception reaches the joiner.
  if constexpr (std::is_void_v<ra_t> && std::is_void_v<rb_t>) {
    b();
    return;
  } else {
    auto second = invoke_storable(b);
    return {ra.take_storable(), std::move(second)};
  }
}

// Both closures one after the other on the calling thread, with join's
// exception rules: what join does once fjord::default_pool() is shut down
// (during static destruction).
template <class FA, class FB>
auto join_inline(pool_core& p, FA& a, FB& b)
    -> join_result<std::invoke_result_t<FA&>, std::invoke_result_t<FB&>> {
  result_slot<std::invoke_result_t<FA&>> ra;
  result_slot<std::invoke_result_t<FB&>> rb;
  ra.run(a);
  rb.run(b);
  return join_finish(p, ra, rb);
}

}  // namespace fjord::detail
