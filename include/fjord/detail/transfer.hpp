#pragma once

#include <coroutine>
#include <cstddef>
#include <utility>

// Symmetric transfer (an await_suspend returning the next coroutine) only
// keeps the stack flat if the compiler turns the resumption into a tail call.
// Clang always does, at every optimisation level and under the sanitizers.
// GCC does only with sibling-call optimisation (-O2 and up, unless
// -fno-optimize-sibling-calls) and never under its sanitizers, and no macro
// tells a header whether sibling calls are on. So with GCC fjord bounds the
// stack itself unless the build vouches for tail calls: every place fjord
// resumes a coroutine goes through detail::resume(), a loop that records
// where the stack stood; a transfer (detail::transfer_to()) that finds the
// stack more than bounce_stack_depth deeper parks the next coroutine in a
// per-thread slot and returns to that loop, which resumes it. With tail calls
// the stack never deepens and no transfer bounces; without, the stack stays
// within that depth plus one frame, at any -O level and however fjord is
// consumed. The check costs about 17% more instructions on a co_await chain
// (callgrind, g++ 12), so fjord's CMake target, which adds
// -foptimize-sibling-calls for GCC, also defines FJORD_SIBLING_CALLS, and an
// optimising, unsanitised GCC build with it transfers directly.
#ifndef FJORD_TRAMPOLINE_TRANSFER
#if defined(__GNUC__) && !defined(__clang__) &&                                                  \
    !(defined(FJORD_SIBLING_CALLS) && defined(__OPTIMIZE__) && !defined(__SANITIZE_ADDRESS__) && \
      !defined(__SANITIZE_THREAD__))
#define FJORD_TRAMPOLINE_TRANSFER 1
#else
#define FJORD_TRAMPOLINE_TRANSFER 0
#endif
#endif

namespace fjord::detail {

// The coroutine the innermost resume() loop on this thread is running (the
// one whose transfers may bounce), the one it is to run next, and the stack
// position of that loop.
struct transfer_slot {
  std::coroutine_handle<> current;
  std::coroutine_handle<> next;
  const char* stack_base = nullptr;
};
inline constinit thread_local transfer_slot pending_transfer{};

inline constexpr std::ptrdiff_t bounce_stack_depth = std::ptrdiff_t{16} << 10;

// Resumes h, then whatever it transferred to through the slot, and so on.
// Re-entrant: a resumption nested inside a coroutine body drives its own
// chain and restores the outer one's state. The same code in every build, so
// translation units built with and without bouncing transfers can be mixed.
inline void resume(std::coroutine_handle<> h) {
  transfer_slot& s = pending_transfer;  // a body never changes threads mid-call
  const transfer_slot outer = std::exchange(s, {});
  s.stack_base = static_cast<const char*>(__builtin_frame_address(0));
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
inline namespace bounded_transfer {

// `self` is the coroutine whose await_suspend is transferring. Only if the
// innermost loop will regain control when self suspends (self is the chain
// that loop runs) can it bounce; otherwise (resumed by a plain
// handle.resume() somewhere) it transfers directly, which is correct and
// merely uses stack.
inline std::coroutine_handle<> transfer_to(std::coroutine_handle<> self,
                                           std::coroutine_handle<> next) noexcept {
  transfer_slot& s = pending_transfer;
  if (s.current == self) {
    const auto* here = static_cast<const char*>(__builtin_frame_address(0));
    if (s.stack_base - here > bounce_stack_depth) {
      s.current = {};  // self is suspended now: it cannot transfer again
      s.next = next;
      return std::noop_coroutine();
    }
    // next runs on behalf of the loop now, tail-called or nested.
    s.current = next;
  }
  return next;
}

}  // namespace bounded_transfer
#else
inline namespace direct_transfer {

inline std::coroutine_handle<> transfer_to(std::coroutine_handle<> /*self*/,
                                           std::coroutine_handle<> next) noexcept {
  return next;
}

}  // namespace direct_transfer
#endif

}  // namespace fjord::detail
