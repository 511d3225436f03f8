#pragma once

#include <type_traits>

#include "fjord/detail/callable.hpp"
#include "fjord/detail/join_on_worker.hpp"
#include "fjord/detail/pool_call.hpp"
#include "fjord/detail/pool_core.hpp"
#include "fjord/detail/worker.hpp"

namespace fjord {

class pool;

/// What join returns for a pair of closures returning A and B: void when both
/// return void, otherwise a pair (void becomes std::monostate, a
/// reference becomes std::reference_wrapper).
template <class A, class B>
using join_result_t = detail::join_result<A, B>;

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
