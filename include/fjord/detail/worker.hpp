#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "fjord/detail/config.hpp"
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
  void add(std::uint64_t n) noexcept {
    value_.store(value_.load(std::memory_order_relaxed) + n, std::memory_order_relaxed);
  }
  std::uint64_t read() const noexcept { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<std::uint64_t> value_{0};
};

struct worker_counters {
  owned_counter jobs_run, steals, failed_steals, injected_taken, parks, wakeups;

  worker_stats snapshot() const noexcept {
    return {jobs_run.read(),       steals.read(), failed_steals.read(),
            injected_taken.read(), parks.read(),  wakeups.read()};
  }
};

// One worker thread's state. Fields under "idle" are guarded by the pool's
// idle mutex; the rest belong to the worker's own thread.
struct alignas(false_sharing_range) worker {
  worker(pool_core& owner, std::uint32_t idx, std::size_t deque_capacity,
         const std::atomic<std::uint64_t>& census, std::uint64_t thief_mask)
      : deque(deque_capacity, census, thief_mask),
        pool(&owner),
        index(idx),
        join_latch_word(((std::uint64_t{idx} + 1) << 32) | 1),
        rng(idx * 2654435761u + 1) {}

  work_stealing_deque deque;
  pool_core* const pool;
  const std::uint32_t index;
  // A join's completion_latch word (count 1, this worker waiting), ready-made.
  const std::uint64_t join_latch_word;
  job_heap heap;
  parker sleeper;
  worker_counters counters;
  std::uint64_t rng;
  bool searching = false;            // counted as a searcher in the census
  bool stealing = false;             // counted as a thief too (registered with a heavy fence)
  std::uint32_t ticks = 0;           // jobs run since the injection queues were last checked
  bool lanes_first = false;          // which injection path take_injected tries first
  std::size_t lane_cursor = 0;       // the submission lane take_injected tries first
  std::uint32_t fair_turns = 0;      // take_injected_fairly calls (low goes first every fourth)
  std::uint32_t blocking_depth = 0;  // nested blocking sections (begin_blocking)

  // idle: guarded by pool_core::idle_mutex_
  std::size_t idle_position = ~std::size_t{0};
  bool idle_in_main_loop = false;
  bool woken_as_searcher = false;
  bool retired = false;  // a surplus thread out of the running set
};

// The worker running on this thread, or nullptr. initial-exec: one
// fs-relative load, no __tls_get_addr, also when fjord is a shared library
// loaded at start-up.
__attribute__((tls_model("initial-exec"))) inline constinit thread_local worker* current_worker =
    nullptr;

}  // namespace fjord::detail
