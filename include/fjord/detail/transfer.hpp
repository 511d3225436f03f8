#pragma once

#include <coroutine>
#include <utility>

// Symmetric transfer (an await_suspend returning the next coroutine) only
// keeps the stack flat if the compiler turns the resumption into a tail call.
// Clang always does; GCC does when sibling-call optimisation is on (-O2, or
// -foptimize-sibling-calls, which the fjord CMake target adds for GCC) and
// never under its address or thread sanitizer. There, fjord transfers through
// a per-thread trampoline instead: await_suspend parks the next coroutine in
// a slot and returns, and the loop that resumed the current one picks it up.
// Every place fjord resumes a coroutine goes through detail::resume() (the
// loop); every transfer through detail::transfer_to().
#ifndef FJORD_TRAMPOLINE_TRANSFER
#if defined(__GNUC__) && !defined(__clang__) && \
    (!defined(__OPTIMIZE__) || defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__))
#define FJORD_TRAMPOLINE_TRANSFER 1
#else
#define FJORD_TRAMPOLINE_TRANSFER 0
#endif
#endif

namespace fjord::detail {

#if FJORD_TRAMPOLINE_TRANSFER

struct transfer_slot {
  std::coroutine_handle<> next;
  bool driving = false;
};
inline constinit thread_local transfer_slot pending_transfer{};

inline std::coroutine_handle<> transfer_to(std::coroutine_handle<> h) noexcept {
  transfer_slot& s = pending_transfer;
  if (s.driving) {
    s.next = h;
    return std::noop_coroutine();
  }
  return h;
}

// Resumes h, then whatever it transferred to, and so on. Re-entrant: a
// resumption nested inside a coroutine body drives its own chain.
inline void resume(std::coroutine_handle<> h) {
  transfer_slot& s = pending_transfer;  // a body never changes threads mid-call
  const bool outer = std::exchange(s.driving, true);
  const std::coroutine_handle<> saved = std::exchange(s.next, {});
  while (h) {
    h.resume();
    h = std::exchange(s.next, {});
  }
  s.next = saved;
  s.driving = outer;
}

#else

inline std::coroutine_handle<> transfer_to(std::coroutine_handle<> h) noexcept {
  return h;
}
inline void resume(std::coroutine_handle<> h) {
  h.resume();
}

#endif

}  // namespace fjord::detail
