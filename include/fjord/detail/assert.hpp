#pragma once

#include "fjord/detail/config.hpp"

// FJORD_ASSERT(condition, message) states an internal invariant. It is
// checked in Debug builds and under ASan or TSan, and compiled out otherwise;
// -DFJORD_ASSERTIONS=1 or =0 forces either way. A failure prints the
// condition, the message and the place, then aborts: a scheduler whose
// invariant broke cannot go on safely, and an exception could not reach
// anyone from most of these places (noexcept paths, worker threads).
#ifndef FJORD_ASSERTIONS
#if !defined(NDEBUG) || FJORD_TSAN || FJORD_ASAN
#define FJORD_ASSERTIONS 1
#else
#define FJORD_ASSERTIONS 0
#endif
#endif

namespace fjord::detail {

[[noreturn]] FJORD_COLD void assertion_failed(const char* condition, const char* message,
                                              const char* file, int line) noexcept;

}  // namespace fjord::detail

#if FJORD_ASSERTIONS
#define FJORD_ASSERT(condition, message) \
  ((condition) ? static_cast<void>(0)    \
               : ::fjord::detail::assertion_failed(#condition, message, __FILE__, __LINE__))
#else
// Unevaluated, so variables used only in assertions do not warn.
#define FJORD_ASSERT(condition, message) static_cast<void>(sizeof(!(condition)))
#endif
