#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "fjord/detail/chrono.hpp"

namespace fjord {

/// The number of buckets of a job_duration_histogram.
inline constexpr std::size_t job_duration_buckets = 40;
/// Workers time one job in every this many they run (timing each would cost
/// a short job more than the job).
inline constexpr std::uint64_t job_duration_sample_interval = 64;
/// A histogram of job durations: bucket i counts jobs that ran for at least
/// 2^i and less than 2^(i+1) nanoseconds (bucket 0 also holds shorter ones,
/// the last also longer ones). Only sampled jobs are counted (one in
/// job_duration_sample_interval), so the counts estimate the distribution;
/// multiplied by the interval they estimate totals.
using job_duration_histogram = std::array<std::uint64_t, job_duration_buckets>;

/// A snapshot of one worker's counters. Counters are updated with relaxed
/// stores by their own worker and may be read at any time without stopping
/// the pool; a snapshot is consistent per counter, not across counters.
struct worker_stats {
  /// Jobs taken from a queue or stolen, then run (a join whose b the joiner
  /// ran itself is not counted).
  std::uint64_t jobs_run = 0;
  std::uint64_t steals = 0;  ///< jobs taken from another worker's deque
  std::uint64_t failed_steals =
      0;  ///< steal attempts that lost a race to another thief or the owner
  std::uint64_t injected_taken = 0;  ///< jobs taken from the injection queues
  std::uint64_t parks = 0;           ///< times the worker went to sleep
  std::uint64_t wakeups = 0;         ///< times it woke up again

  /// Time asleep since the thread started (parked, or retired as a spare).
  /// This and the two below say where the thread's time went; an interval
  /// in progress counts up to the snapshot.
  std::chrono::nanoseconds parked{0};
  /// Time spent looking for work (spinning, stealing) without running any.
  std::chrono::nanoseconds searching{0};
  /// The rest: running jobs, including time blocked inside one (life minus
  /// parked and searching).
  std::chrono::nanoseconds busy{0};
  /// Jobs on the worker's deque, and posted to its thread alone
  /// (pool::post_to) and not yet begun, when the snapshot was taken (0 for a sum).
  std::uint64_t queue_depth = 0;
  job_duration_histogram job_durations{};  ///< sampled, see above

  /// Of the steal attempts that found a job to take, the share that took it
  /// rather than losing the race (0 when none).
  double steal_success_rate() const noexcept {
    const std::uint64_t tries = steals + failed_steals;
    return tries == 0 ? 0.0 : static_cast<double>(steals) / static_cast<double>(tries);
  }
  /// busy / (busy + searching + parked), 0 before any time passed.
  double utilisation() const noexcept {
    const auto all = (busy + searching + parked).count();
    return all <= 0 ? 0.0 : static_cast<double>(busy.count()) / static_cast<double>(all);
  }

  /// Adds o's counters and times to these.
  worker_stats& operator+=(const worker_stats& o) noexcept {
    jobs_run += o.jobs_run;
    steals += o.steals;
    failed_steals += o.failed_steals;
    injected_taken += o.injected_taken;
    parks += o.parks;
    wakeups += o.wakeups;
    parked += o.parked;
    searching += o.searching;
    busy += o.busy;
    queue_depth += o.queue_depth;
    for (std::size_t i = 0; i < job_durations.size(); ++i) {
      job_durations[i] += o.job_durations[i];
    }
    return *this;
  }
};

/// A snapshot of a pool's counters (pool::stats()): one entry per worker thread, and pool-wide
/// figures.
struct pool_stats {
  /// One entry per thread the pool has made: its workers, then the spares
  /// that stood in for blocked workers (docs/scheduler.md, "Blocking").
  std::vector<worker_stats> workers;
  /// What callers that joined the pool for their calls did there
  /// (pool_options::callers_join): the jobs they ran and stole, their
  /// searches, and how often they parked (not for how long: parked is
  /// zero, and so is busy: they are not the pool's threads).
  worker_stats callers;
  /// Exceptions that lost to an earlier one in join/invoke/task_group/when_all
  /// (the first is rethrown; the others are counted here, never dropped unseen).
  std::uint64_t suppressed_exceptions = 0;
  /// Jobs submitted from outside the pool (and coroutines handed back to it)
  /// that wait on its injection path, priority queues included, when the
  /// snapshot was taken. With the workers' queue_depth it is all the work
  /// the pool holds and has not begun.
  std::uint64_t injection_depth = 0;
  /// Threads in the running set when the snapshot was taken: working,
  /// searching or parked idle, neither blocked (block_in_place, or presumed
  /// blocked by pool_options::replace_blocked_after) nor retired. It tends
  /// to the pool's size() (docs/scheduler.md, "Scaling").
  std::size_t running_threads = 0;
  /// Threads out of the running set and parked for reuse: spares whose
  /// blocked worker came back, and workers that left after idle_timeout or
  /// a resize() down.
  std::size_t retired_threads = 0;

  /// The sum over every worker, and the callers.
  worker_stats total() const noexcept {
    worker_stats sum = callers;
    for (const auto& w : workers) {
      sum += w;
    }
    return sum;
  }
};

/// The statistics in Prometheus' text exposition format (version 0.0.4), each
/// series labelled pool="<pool_name>" and, per worker, worker="<index>": what
/// a /metrics endpoint serves (the pool name is escaped as label values are).
std::string to_prometheus(const pool_stats& stats, std::string_view pool_name);

/// One line: jobs, steals and their success rate, utilisation, parks.
std::string summary_line(const pool_stats& stats, std::string_view pool_name);

}  // namespace fjord
