#pragma once

#include <functional>
#include <type_traits>
#include <utility>

#include "fjord/detail/blocking_section.hpp"

namespace fjord {

/// Runs f() on the calling thread and returns its result. Called on a pool's
/// worker, it first gives up the worker's place: as soon as there is work
/// for it, a spare thread runs in its stead, so a blocking call in f (a
/// lock, a syscall, a std::latch, a wait on something outside fjord) leaves
/// the pool with its full number of running threads and cannot starve or
/// deadlock it, within pool_options::max_spare_threads spares at once (256;
/// 0 turns this off) and while the system grants threads: beyond those the
/// worker blocks without a stand-in. Once f returns the pool goes back to
/// its size: one of the two threads (the spare, or this one at its next
/// idle job boundary) retires and is kept for reuse. Jobs
/// the worker had pushed stay available to the others. Inside a call its
/// caller joined (pool_options::callers_join), it gives back the caller's
/// place among the pool's threads, so that a worker takes the call's forks
/// meanwhile. On any other thread it simply calls f(). (fjord's own blocking
/// waits, sync_wait and waits on another pool's work, do this by themselves.)
template <class F>
decltype(auto) block_in_place(F&& f) {
  const detail::blocking_section blocking;
  return std::invoke(std::forward<F>(f));
}

}  // namespace fjord
