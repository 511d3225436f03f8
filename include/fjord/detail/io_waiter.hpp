#pragma once

#include <atomic>
#include <cstdint>

#include "fjord/detail/timer_service.hpp"

namespace fjord::detail {

// A coroutine waiting for one direction of a registered fd. Its timer entry
// (used when the wait has a deadline) carries the waiting coroutine.
//
// Two holds keep it from being resumed too early: the suspending thread's,
// dropped when await_suspend has finished setting up (timer, stop
// callback), and the completer's, dropped once it has written the outcome.
// Whoever drops the last one resumes the coroutine (the suspending thread
// by not suspending), so nothing can resume it while await_suspend still
// touches it (docs/io.md, "Waiting for an fd").
struct io_waiter : timer_service::entry {
  std::atomic<std::uintptr_t>* slot = nullptr;
  std::atomic<int> holds{2};
  int outcome = 0;  // an io_status, written by the completer before its release

  // acq_rel: the completer's outcome is visible to whoever drops last, and
  // the setup is visible to the completer that wakes the coroutine.
  bool drop_hold() noexcept { return holds.fetch_sub(1, std::memory_order_acq_rel) == 1; }

  // The completer's release: the waiter may be gone once it returns.
  void finish(int result) noexcept {
    outcome = result;
    if (drop_hold()) {
      waiter.wake();
    }
  }

  std::uintptr_t as_slot_value() noexcept { return reinterpret_cast<std::uintptr_t>(this); }
  // The waiter a slot value above io_registration::closed names. A slot is
  // one word holding either a state or a pointer, so the cast is the point.
  static io_waiter* from_slot_value(std::uintptr_t v) noexcept {
    return reinterpret_cast<io_waiter*>(v);  // NOLINT(performance-no-int-to-ptr)
  }
};

}  // namespace fjord::detail
