#pragma once

#include <sched.h>

#include <array>
#include <atomic>
#include <bit>
#include <cstddef>
#include <cstdint>

#include "fjord/detail/chrono.hpp"
#include "fjord/detail/config.hpp"
#include "fjord/detail/injection_queue.hpp"
#include "fjord/detail/job_heap.hpp"
#include "fjord/detail/parker.hpp"
#include "fjord/detail/work_stealing_deque.hpp"
#include "fjord/pool_stats.hpp"

namespace fjord::detail {

class pool_core;

// A counter written only by its worker: a relaxed load and store instead of a
// read-modify-write, readable from any thread at any time.
class owned_counter {
 public:
  void bump() noexcept { add(1); }
  // Bumps and returns the new count.
  std::uint64_t bump_and_read() noexcept {
    const std::uint64_t n = value_.load(std::memory_order_relaxed) + 1;
    value_.store(n, std::memory_order_relaxed);
    return n;
  }
  void add(std::uint64_t n) noexcept {
    value_.store(value_.load(std::memory_order_relaxed) + n, std::memory_order_relaxed);
  }
  std::uint64_t read() const noexcept { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<std::uint64_t> value_{0};
};

// Nanoseconds on the steady clock, as one integer an atomic can hold.
inline std::uint64_t steady_ns() noexcept {
  return static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                        std::chrono::steady_clock::now().time_since_epoch())
                                        .count());
}

struct worker_counters {
  owned_counter jobs_run, steals, failed_steals, injected_taken, parks, wakeups;
  // Time accounts (pool_stats.hpp): closed intervals, plus the open one's
  // start (0: none). Busy time is what is left of the thread's life.
  owned_counter parked_ns, searching_ns;
  std::atomic<std::uint64_t> started_ns{0};
  std::atomic<std::uint64_t> ended_ns{0};  // the thread left its main loop
  std::atomic<std::uint64_t> parked_since{0};
  std::atomic<std::uint64_t> searching_since{0};
  std::array<owned_counter, job_duration_buckets> job_durations;

  // Owner only: open and close an interval of one account.
  static void open(std::atomic<std::uint64_t>& since, std::uint64_t now) noexcept {
    since.store(now, std::memory_order_relaxed);
  }
  static void close(std::atomic<std::uint64_t>& since, owned_counter& total,
                    std::uint64_t now) noexcept {
    const std::uint64_t from = since.load(std::memory_order_relaxed);
    if (from != 0) {
      total.add(now - from);
      since.store(0, std::memory_order_relaxed);
    }
  }

  void record_job_duration(std::uint64_t ns) noexcept {
    constexpr std::size_t last = job_duration_buckets - 1;
    const std::size_t log2 = ns < 2 ? 0 : std::bit_width(ns) - 1;
    const std::size_t bucket = log2 < last ? log2 : last;
    job_durations[bucket].bump();
  }

  worker_stats snapshot() const noexcept {
    worker_stats s{jobs_run.read(),       steals.read(), failed_steals.read(),
                   injected_taken.read(), parks.read(),  wakeups.read()};
    const std::uint64_t now = steady_ns();
    auto account = [now](const owned_counter& total, const std::atomic<std::uint64_t>& since) {
      const std::uint64_t from = since.load(std::memory_order_relaxed);
      return total.read() + (from != 0 && now > from ? now - from : 0);
    };
    const std::uint64_t parked = account(parked_ns, parked_since);
    const std::uint64_t searching = account(searching_ns, searching_since);
    const std::uint64_t start = started_ns.load(std::memory_order_relaxed);
    const std::uint64_t end = ended_ns.load(std::memory_order_relaxed);
    const std::uint64_t until = end != 0 ? end : now;
    const std::uint64_t life = start != 0 && until > start ? until - start : 0;
    s.parked = std::chrono::nanoseconds(parked);
    s.searching = std::chrono::nanoseconds(searching);
    // The accounts are read one by one: clamp what a race could overdraw.
    s.busy = std::chrono::nanoseconds(life > parked + searching ? life - parked - searching : 0);
    for (std::size_t i = 0; i < job_durations.size(); ++i) {
      s.job_durations[i] = job_durations[i].read();
    }
    return s;
  }
};

// One worker thread's state. Fields under "idle" are guarded by the pool's
// idle mutex; the rest belong to the worker's own thread.
struct alignas(false_sharing_range) worker {
  worker(pool_core& owner, std::uint32_t idx, std::size_t deque_capacity, census& thieves)
      : deque(deque_capacity, thieves),
        pool(&owner),
        index(idx),
        join_latch_word(((std::uint64_t{idx} + 1) << 32) | 1),
        rng(idx * 2654435761u + 1) {}

  work_stealing_deque deque;
  // The coroutine this worker woke last (resume_waiting), which it runs
  // next, before its deque (Go's runnext). Other workers take it only once
  // they have seen it there for runnext_grace ticks, so two processes that
  // wake each other stay on one worker instead of bouncing between two
  // (docs/scheduler.md, "The runnext slot").
  std::atomic<job*> runnext{nullptr};
  // This worker as a thief (steal_runnext): the job it is timing in another
  // worker's runnext slot, and since when (cycle_clock ticks). The thief
  // keeps the clock, not the owner, so that a wake costs no clock read.
  job* runnext_watched = nullptr;
  std::uint64_t runnext_watched_since = 0;
  std::uint64_t runnext_watch_progress = 0;  // jobs run + parks: a change restarts the watch
  std::uint32_t runnext_scan = 0;            // where the next look for one starts
  // Jobs posted to this thread alone (pool::post_to), which no other
  // worker may take. Consumed only by its owner, at the points
  // docs/scheduler.md lists ("Pinned jobs").
  injection_queue inbox;
  pool_core* const pool;
  const std::uint32_t index;
  // A join's completion_latch word (count 1, this worker waiting), ready-made.
  const std::uint64_t join_latch_word;
  job_heap heap;
  parker sleeper;
  worker_counters counters;
  // Coroutines that began waiting on this worker minus those resumed on it
  // (pool_core::note_waiting): counts modulo 2^64, summed by the pool.
  owned_counter waiting;
  std::uint64_t rng;
  bool searching = false;  // counted as a searcher in the census
  // Its search ended because the guest took its place (pool_core::search):
  // it sleeps without waiting for forked work (own thread only).
  bool standing_aside = false;
  // The slot a caller from outside takes for one call (pool_core::call_as_guest):
  // no thread of its own, never idle-listed, never blocked or retired.
  bool guest = false;
  std::uint32_t ticks = 0;  // jobs run since the injection queues were last checked
  // The job the main loop runs now, until that job asks (pool_core::
  // runs_at_loop_level): a job run by a wait that helps inside another is
  // not it, nor is any job a guest runs.
  const job* loop_job = nullptr;
  bool lanes_first = false;          // which injection path take_injected tries first
  std::size_t lane_cursor = 0;       // the submission lane take_injected tries first
  std::uint32_t fair_turns = 0;      // take_injected_fairly calls (low goes first every fourth)
  std::uint32_t blocking_depth = 0;  // nested blocking sections (begin_blocking)
  // An owner whose private jobs this worker waits for it to share, as seen
  // first (pool_core::steal_from_stalled_owner); kept across searches, so
  // that a worker that keeps searching and sleeping still sees the stall.
  std::size_t stall_victim = ~std::size_t{0};
  std::uint32_t stall_bottom = 0;
  std::chrono::steady_clock::time_point stall_since;
  // Frames below this address are in the deeper half of the thread's
  // stack, where waits block instead of running other jobs on top
  // (pool_core::may_run_jobs_on_this_stack). 0 until the thread starts.
  std::uintptr_t stack_half = 0;

  // idle: guarded by pool_core::idle_mutex_
  std::size_t idle_position = ~std::size_t{0};
  bool idle_in_main_loop = false;
  bool woken_as_searcher = false;
  bool retired = false;  // a surplus thread out of the running set
  bool blocked = false;  // in a blocking section, out of the running set
  // The monitor took this worker for blocked inside a job and let a
  // stand-in take its place; written under the idle mutex, read by the
  // worker after each job (docs/scheduler.md, "Scaling").
  std::atomic<bool> presumed_blocked{false};
  // Back from blocking into a running set already full: this thread, not
  // another, retires at its next job boundary, if that comes within
  // pool_core::retire_preference_ns (the worker's own; advisory).
  bool preferred_to_retire = false;
  // The kernel's id of this worker's thread (0 until it started), for the
  // monitor's look at its scheduler statistics.
  std::atomic<int> tid{0};
  // Its thread was started (set by the starter once pthread_create
  // succeeded, and by the thread itself, whichever comes first): a slot is
  // counted before that, and only a thread that exists may be given pinned
  // jobs (pool_core::inject_to_thread()).
  std::atomic<bool> has_thread{false};
  // Whether a worker about to block lent this thread its CPU (pinned it
  // there before waking it), and the CPUs it had then, which it restores
  // when it wakes (both guarded by the idle mutex).
  cpu_set_t home_cpus{};
  bool lent_cpu = false;
};

// The worker running on this thread, or nullptr. initial-exec: one
// fs-relative load, no __tls_get_addr, also when fjord is a shared library
// loaded at start-up.
__attribute__((tls_model("initial-exec"))) inline constinit thread_local worker* current_worker =
    nullptr;

// Makes w (or nobody) this thread's worker, and its heap this thread's job heap.
inline void set_current_worker(worker* w) noexcept {
  current_worker = w;
  this_thread_job_heap = w != nullptr ? &w->heap : nullptr;
}

// The calling thread's worker if it is one of p's, else nullptr: the one
// test every "from our own worker, or from outside?" decision makes.
inline worker* current_worker_of(const pool_core* p) noexcept {
  worker* w = current_worker;
  return w != nullptr && w->pool == p ? w : nullptr;
}

}  // namespace fjord::detail
