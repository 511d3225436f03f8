#pragma once

// pool_core's cold part: what only starting and stopping threads, parking,
// retiring and reporting touch (see pool_core::cold_state).

#include <pthread.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <vector>

#include "fjord/detail/borrowed_stack.hpp"
#include "fjord/detail/pool_core.hpp"
#include "fjord/detail/submission_lane.hpp"
#include "fjord/detail/worker.hpp"
#include "fjord/pool_options.hpp"

namespace fjord::detail {

struct pool_core::cold_state {
  cold_state(const pool_options& options, const worker_counts& counts)
      : unhandled_handler(options.unhandled_exception_handler),
        cpus(options.cpus.value_or(std::vector<unsigned>{})),
        pin_each_worker(options.pin_each_worker),
        on_thread_start(options.on_thread_start),
        on_thread_stop(options.on_thread_stop),
        min_workers(counts.min),
        max_workers(counts.max),
        follow_cpus(counts.follow_cpus),
        idle_timeout(options.idle_timeout),
        replace_blocked_after(options.replace_blocked_after),
        guest_stack(options.stack_size),
        callers_join(options.callers_join && borrowed_stack::supported && !options.cpus &&
                     !options.on_thread_start && !options.on_thread_stop) {}

  // What workers_ and shards_ point to.
  std::vector<std::unique_ptr<worker>> worker_storage;
  std::unique_ptr<worker> guest;  // guest_ (pool_core::call_as_guest)
  std::vector<std::unique_ptr<shard>> shard_storage;

  const std::function<void(std::exception_ptr)> unhandled_handler;
  const std::vector<unsigned> cpus;  // empty: no placement
  const bool pin_each_worker;
  const std::function<void(std::size_t)> on_thread_start;
  const std::function<void(std::size_t)> on_thread_stop;

  std::mutex lanes_mutex;
  std::vector<std::shared_ptr<submission_lane>> lane_owners;  // guarded by lanes_mutex

  std::mutex idle_mutex;
  std::vector<worker*> idle;       // parked workers, most recent last
  std::size_t idle_main_loop = 0;  // of which are idle in the main loop
  std::vector<worker*> retired;    // spares out of the running set
  std::size_t running = 0;         // threads neither blocked nor retired
  std::size_t deficit = 0;         // phantom sleepers in the census (begin_blocking)
  std::size_t reserved = 0;        // threads made or being made
  // Scaling (docs/scheduler.md, "Scaling"): written under idle_mutex, the
  // bounds read anywhere (relaxed).
  std::atomic<std::size_t> min_workers;
  std::atomic<std::size_t> max_workers;
  bool follow_cpus;  // resize to available_cpus() when it changes
  const std::chrono::nanoseconds idle_timeout;
  const std::chrono::nanoseconds replace_blocked_after;  // 0: off

  // The stack a guest's call runs on (pool_core::call_as_guest), mapped on
  // first use; and whether callers may join at all.
  borrowed_stack guest_stack;
  const bool callers_join;
  char guest_stack_name[16] = {};  // "<name>-guest", as a thread name is cut

  // The monitor thread (pool_scaling.cpp): parked on monitor_wake while
  // every thread is idle or there is nothing to watch.
  std::mutex monitor_mutex;  // serialises starting and stopping it
  pthread_t monitor_thread{};
  bool monitor_started = false;  // guarded by monitor_mutex
  bool monitor_closed = false;   // guarded by monitor_mutex: never again
  bool monitor_parked = false;   // guarded by idle_mutex
  bool monitor_stop = false;     // guarded by idle_mutex
  std::condition_variable monitor_wake;
  // The monitor's own: what it saw of each thread at its last look.
  struct thread_sample {
    int schedstat_fd = -1;       // /proc/self/task/<tid>/schedstat, kept open
    std::uint64_t progress = 0;  // jobs begun + wake-ups
    bool window_open = false;    // since and wanted_at_since hold a window
    std::chrono::steady_clock::time_point since;
    // CPU time plus time spent runnable on a run queue: what the thread
    // wanted of a CPU, whether or not it got one.
    std::chrono::nanoseconds wanted_at_since{0};
  };
  std::vector<thread_sample> samples;
  bool starved_last_look = false;
  unsigned quiet_looks = 0;  // looks in a row with no work waiting (back-off)
  std::chrono::steady_clock::time_point last_cpu_check;

  std::mutex threads_mutex;  // serialises starting threads; guards threads
  std::vector<pthread_t> threads;
  std::mutex shut_down_mutex;  // one shut_down() at a time
  bool joined = false;         // guarded by shut_down_mutex
};

}  // namespace fjord::detail
