#pragma once

#include <concepts>
#include <exception>
#include <type_traits>
#include <utility>

#include "fjord/detail/join_job.hpp"
#include "fjord/detail/result_slot.hpp"
#include "fjord/detail/worker.hpp"
#include "fjord/pool.hpp"

namespace fjord {

// What join returns for a pair of closures returning A and B: void when both
// return void, otherwise a pair (void becomes detail::void_result, a
// reference becomes std::reference_wrapper).
template <class A, class B>
using join_result_t = std::conditional_t<std::is_void_v<A> && std::is_void_v<B>, void,
                                         std::pair<detail::storable_t<A>, detail::storable_t<B>>>;

namespace detail {

template <class FA, class FB>
auto join_on_worker(worker& w, FA& a, FB& b)
    -> join_result_t<std::invoke_result_t<FA&>, std::invoke_result_t<FB&>> {
  using ra_t = std::invoke_result_t<FA&>;
  using rb_t = std::invoke_result_t<FB&>;
  join_job<FB, rb_t> jb(b, w);
  result_slot<ra_t> ra;
  if (w.deque.push(&jb)) [[likely]] {
    w.pool->notify_local_push();
    ra.run(a);
    while (true) {
      job* j = w.deque.pop();
      if (j == &jb) [[likely]] {
        // Not stolen (the common case): call b directly.
        w.counters.jobs_run.bump();
        jb.result.run(b);
        break;
      }
      if (j == nullptr) {
        // Stolen: help until the thief is done with it.
        w.pool->wait_until(w, jb.latch);
        break;
      }
      // Work that a pushed without waiting for (task_group children, posts).
      w.counters.jobs_run.bump();
      run_job(j);
    }
  } else {
    // Deque full: this deep, running sequentially loses nothing.
    ra.run(a);
    jb.result.run(b);
  }
  if (ra.has_error()) {
    if (jb.result.has_error()) {
      w.pool->count_suppressed();
    }
    std::rethrow_exception(ra.error());
  }
  if (jb.result.has_error()) {
    std::rethrow_exception(jb.result.error());
  }
  if constexpr (std::is_void_v<ra_t> && std::is_void_v<rb_t>) {
    return;
  } else {
    return {ra.take_storable(), jb.result.take_storable()};
  }
}

}  // namespace detail

// Runs a() and b(), potentially in parallel, and returns both results once
// both have finished. b is offered to other workers from the caller's stack
// frame (no allocation); if nobody takes it, the caller runs it right after
// a(). If either throws, the exception reaches the caller after both finished;
// if both throw, a's wins and b's is counted in pool_stats::suppressed_exceptions.
// From a thread that is not a worker, the join runs on fjord::default_pool().
template <class FA, class FB>
requires std::invocable<FA&> && std::invocable<FB&>
auto join(FA&& a, FB&& b) -> join_result_t<std::invoke_result_t<FA&>, std::invoke_result_t<FB&>> {
  detail::worker* w = detail::current_worker;
  if (w != nullptr) [[likely]] {
    return detail::join_on_worker(*w, a, b);
  }
  return default_pool().invoke(
      [&] { return detail::join_on_worker(*detail::current_worker, a, b); });
}

// As join, on a given pool (runs on that pool even when called from a worker
// of another pool).
template <class FA, class FB>
requires std::invocable<FA&> && std::invocable<FB&>
auto join(pool& p, FA&& a, FB&& b)
    -> join_result_t<std::invoke_result_t<FA&>, std::invoke_result_t<FB&>> {
  return p.invoke([&] { return detail::join_on_worker(*detail::current_worker, a, b); });
}

}  // namespace fjord
