#pragma once

#include <atomic>
#include <cstdint>

#include "fjord/detail/config.hpp"

// The scheduler's trace points: where the runtime records an event when
// tracing runs (docs/tracing.md). Off, a trace point is one relaxed load and
// a branch; with FJORD_NO_TRACE (CMake: -DFJORD_TRACING=OFF) it is nothing.

namespace fjord::detail {

// What happened. The numbers are part of the binary trace format: append,
// never renumber.
enum class trace_kind : std::uint32_t {
  job_begin = 1,     // a: the job's address
  job_end = 2,       // a: the job's address
  fork = 3,          // a: a job a worker put on its own deque (task_group::run, post, spawn)
  steal = 4,         // a: the job; small: the victim's worker index
  inject = 5,        // a: the job; b: the pool's id (any thread)
  search_begin = 6,  // looking for work
  search_end = 7,    //
  park_begin = 8,    // small: a park_reason
  park_end = 9,      //
  coroutine_suspend =
      10,                // a: the job that will resume it (waiting on a timer, primitive, channel)
  coroutine_wake = 11,   // a: that job, handed back to its pool (any thread); b: the pool's id
  timer_fire = 12,       // a: the timer entry
  channel_block = 13,    // a: the wait's parker; small: 0 a coroutine, 1 a thread (channel, select)
  channel_unblock = 14,  // a: that parker (on the thread that completed the wait)
  io_wait = 15,          // small: the fd
  io_ready = 16,         // the wait ended (as it resumes); small: the fd; b: the io_status
  span_begin = 17,       // a: the name (a string of static storage)
  span_end = 18,         // a: the name
  counter = 19,          // a: the name; b: the value (two's complement)
  instant = 20,          // a: the name
  thread_start = 21,     // a worker entered its main loop
};
inline constexpr std::uint32_t trace_kind_last = 21;

enum class park_reason : std::uint32_t {
  idle = 0,     // asleep with nothing to do
  polling = 1,  // asleep in the reactor, waiting for fds as well
  blocked = 2,  // a worker blocked inside a job (a spare may stand in)
};

// The mode word: bit 0 set while tracing runs; bits 32-63 number the
// session (trace::start() begins one).
inline constexpr std::uint64_t trace_running_bit = 1;

// Defined in src/trace.cpp. Read relaxed: a trace point that reads a stale
// mode records an event just before start() or just after stop(), which is
// harmless (the buffers belong to a session, see trace_record()).
extern std::atomic<std::uint64_t> trace_mode;

// The recording path, out of line: the calling thread's buffer, no lock, no
// allocation except a new chunk every few thousand events.
FJORD_COLD void trace_record(std::uint64_t mode, trace_kind kind, std::uint32_t small,
                             std::uint64_t a, std::uint64_t b) noexcept;

FJORD_ALWAYS_INLINE void trace_point(trace_kind kind, std::uint32_t small = 0, std::uint64_t a = 0,
                                     std::uint64_t b = 0) noexcept {
#ifndef FJORD_NO_TRACE
  const std::uint64_t mode = trace_mode.load(std::memory_order_relaxed);
  if ((mode & trace_running_bit) != 0) [[unlikely]] {
    trace_record(mode, kind, small, a, b);
  }
#else
  static_cast<void>(kind);
  static_cast<void>(small);
  static_cast<void>(a);
  static_cast<void>(b);
#endif
}

template <class T>
FJORD_ALWAYS_INLINE std::uint64_t trace_address(const T* p) noexcept {
  return reinterpret_cast<std::uintptr_t>(p);
}

}  // namespace fjord::detail
