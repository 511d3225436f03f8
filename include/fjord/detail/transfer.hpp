#pragma once

#include <coroutine>
#include <utility>

// Symmetric transfer (an await_suspend returning the next coroutine) only
// keeps the stack flat if the compiler turns the resumption into a tail call.
// Clang always does; GCC does when sibling-call optimisation is on (-O2, or
// -foptimize-sibling-calls, which the fjord CMake target adds for GCC) and
// never under its address or thread sanitizer. There, fjord transfers through
// a per-thread trampoline instead: await_suspend parks the next coroutine in
// a slot and returns, and the loop that resumed the current coroutine picks
// it up. Every place fjord resumes a coroutine goes through detail::resume()
// (the loop, in every build); every transfer through detail::transfer_to().
#ifndef FJORD_TRAMPOLINE_TRANSFER
#if defined(__GNUC__) && !defined(__clang__) && \
    (!defined(__OPTIMIZE__) || defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__))
#define FJORD_TRAMPOLINE_TRANSFER 1
#else
#define FJORD_TRAMPOLINE_TRANSFER 0
#endif
#endif

namespace fjord::detail {

// The coroutine the innermost resume() loop on this thread is running, and
// the one it is to run next.
struct transfer_slot {
  std::coroutine_handle<> current;
  std::coroutine_handle<> next;
};
inline constinit thread_local transfer_slot pending_transfer{};

// Resumes h, then whatever it transferred to through the slot, and so on.
// Re-entrant: a resumption nested inside a coroutine body drives its own
// chain and restores the outer one's state. The same code in every build, so
// translation units built with and without the trampoline can be mixed.
inline void resume(std::coroutine_handle<> h) {
  transfer_slot& s = pending_transfer;  // a body never changes threads mid-call
  const transfer_slot outer = std::exchange(s, {});
  while (h) {
    s.current = h;
    h.resume();
    h = std::exchange(s.next, {});
  }
  s = outer;
}

// Distinct names per mode (an inline namespace), so that builds mixing the
// two modes get two functions, not one function with two definitions.
#if FJORD_TRAMPOLINE_TRANSFER
inline namespace trampoline_transfer {

// `self` is the coroutine whose await_suspend is transferring. Only if it is
// the one the innermost loop resumed will that loop regain control when it
// suspends; otherwise (resumed by a plain resume() somewhere) transfer
// directly, which is correct and merely uses stack.
inline std::coroutine_handle<> transfer_to(std::coroutine_handle<> self,
                                           std::coroutine_handle<> next) noexcept {
  transfer_slot& s = pending_transfer;
  if (s.current == self) {
    s.current = {};  // self is suspended now: it cannot transfer again
    s.next = next;
    return std::noop_coroutine();
  }
  return next;
}

}  // namespace trampoline_transfer
#else
inline namespace direct_transfer {

inline std::coroutine_handle<> transfer_to(std::coroutine_handle<> /*self*/,
                                           std::coroutine_handle<> next) noexcept {
  return next;
}

}  // namespace direct_transfer
#endif

}  // namespace fjord::detail
