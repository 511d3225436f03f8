#pragma once

#include <concepts>
#include <exception>
#include <type_traits>
#include <utility>

#include "fjord/detail/assert.hpp"
#include "fjord/detail/callable.hpp"
#include "fjord/detail/config.hpp"
#include "fjord/detail/join_job.hpp"
#include "fjord/detail/pool_call.hpp"
#include "fjord/detail/pool_core.hpp"
#include "fjord/detail/result_slot.hpp"
#include "fjord/detail/sync_wait_loop.hpp"
#include "fjord/detail/worker.hpp"

namespace fjord {

class pool;

/// What join returns for a pair of closures returning A and B: void when both
/// return void, otherwise a pair (void becomes std::monostate, a
/// reference becomes std::reference_wrapper).
template <class A, class B>
using join_result_t = std::conditional_t<std::is_void_v<A> && std::is_void_v<B>, void,
                                         std::pair<detail::storable_t<A>, detail::storable_t<B>>>;

namespace detail {

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
auto join_finish(pool_core& p, result_slot<RA>& ra, result_slot<RB>& rb) -> join_result_t<RA, RB> {
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
    -> join_result_t<std::invoke_result_t<FA&>, std::invoke_result_t<FB&>> {
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
  w.pool->notify_local_push();
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
    -> join_result_t<std::invoke_result_t<FA&>, std::invoke_result_t<FB&>> {
  result_slot<std::invoke_result_t<FA&>> ra;
  result_slot<std::invoke_result_t<FB&>> rb;
  ra.run(a);
  rb.run(b);
  return join_finish(p, ra, rb);
}

}  // namespace detail

/// Runs a() and b(), potentially in parallel, and returns both results once
/// both have finished. b is offered to other workers from the caller's stack
/// frame (no allocation); if nobody takes it, the caller runs it right after
/// a(). If either throws, the exception reaches the caller after both finished;
/// if both throw, a's wins and b's is counted in pool_stats::suppressed_exceptions.
/// From a thread that is not a worker, the join runs on fjord::default_pool();
/// once that is shut down (static destruction) a() and b() run one after the
/// other on the calling thread.
template <detail::lvalue_callable FA, detail::lvalue_callable FB>
auto join(FA&& a, FB&& b) -> join_result_t<std::invoke_result_t<FA&>, std::invoke_result_t<FB&>> {
  detail::worker* w = detail::current_worker;
  if (w != nullptr) [[likely]] {
    return detail::join_on_worker(*w, a, b);
  }
  detail::pool_core& core = detail::default_pool_core();
  if (core.is_shut_down()) [[unlikely]] {
    return detail::join_inline(core, a, b);
  }
  auto on_worker = [&] { return detail::join_on_worker(*detail::current_worker, a, b); };
  return detail::call_on(core, on_worker);
}

/// As join, on a given pool (runs on that pool even when called from a worker
/// of another pool).
template <detail::lvalue_callable FA, detail::lvalue_callable FB>
auto join(pool& p, FA&& a, FB&& b)
    -> join_result_t<std::invoke_result_t<FA&>, std::invoke_result_t<FB&>> {
  auto on_worker = [&] { return detail::join_on_worker(*detail::current_worker, a, b); };
  return detail::call_on(detail::core_of(p), on_worker);
}

}  // namespace fjord
