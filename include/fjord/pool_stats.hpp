#pragma once

#include <cstdint>
#include <vector>

namespace fjord {

// A snapshot of one worker's counters. Counters are updated with relaxed
// stores by their own worker and may be read at any time without stopping
// the pool; a snapshot is consistent per counter, not across counters.
struct worker_stats {
  std::uint64_t jobs_run = 0;  // jobs taken from a queue or stolen, then run (a join whose b the
                               // joiner ran itself is not counted)
  std::uint64_t steals = 0;    // jobs taken from another worker's deque
  std::uint64_t failed_steals = 0;   // steal attempts that found nothing or lost a race
  std::uint64_t injected_taken = 0;  // jobs taken from the injection queues
  std::uint64_t parks = 0;           // times the worker went to sleep
  std::uint64_t wakeups = 0;         // times it woke up again

  worker_stats& operator+=(const worker_stats& o) noexcept {
    jobs_run += o.jobs_run;
    steals += o.steals;
    failed_steals += o.failed_steals;
    injected_taken += o.injected_taken;
    parks += o.parks;
    wakeups += o.wakeups;
    return *this;
  }
};

struct pool_stats {
  // One entry per thread the pool has made: its workers, then the spares
  // that stood in for blocked workers (docs/scheduler.md, "Blocking").
  std::vector<worker_stats> workers;
  // Exceptions that lost to an earlier one in join/invoke/task_group/when_all
  // (the first is rethrown; the others are counted here, never dropped unseen).
  std::uint64_t suppressed_exceptions = 0;

  worker_stats total() const noexcept {
    worker_stats sum;
    for (const auto& w : workers) {
      sum += w;
    }
    return sum;
  }
};

}  // namespace fjord
