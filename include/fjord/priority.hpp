#pragma once

#include <cstdint>

namespace fjord {

/// Where a job waits to start (pool::post, submit, task_group, schedule).
/// A worker takes a waiting high-priority job at its next job boundary,
/// before anything else; low-priority jobs run when nothing else waits, and
/// never starve: each worker takes one at least every 244 jobs it runs while
/// any waits, and normal work at least every 61 (docs/scheduler.md,
/// "Priorities"). Priority orders jobs waiting to start, not jobs running:
/// nothing is preempted, and the jobs a running job forks run as part of it.
enum class priority : std::uint8_t { high, normal, low };

namespace detail {
[[noreturn]] void throw_bad_priority(priority p);
// Throws std::invalid_argument naming a value that is none of the three
// (inline: it sits on every submission at a priority).
inline void check_priority(priority p) {
  if (static_cast<unsigned>(p) > static_cast<unsigned>(priority::low)) [[unlikely]] {
    throw_bad_priority(p);
  }
}
}  // namespace detail

}  // namespace fjord
