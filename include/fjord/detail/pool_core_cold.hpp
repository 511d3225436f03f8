#pragma once

// pool_core's cold part: what only starting and stopping threads, parking,
// retiring and reporting touch (see pool_core::cold_state).

#include <pthread.h>

#include <cstddef>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <vector>

#include "fjord/detail/pool_core.hpp"
#include "fjord/detail/submission_lane.hpp"
#include "fjord/detail/worker.hpp"
#include "fjord/pool_options.hpp"

namespace fjord::detail {

struct pool_core::cold_state {
  explicit cold_state(const pool_options& options)
      : unhandled_handler(options.unhandled_exception_handler),
        cpus(options.cpus.value_or(std::vector<unsigned>{})),
        pin_each_worker(options.pin_each_worker),
        on_thread_start(options.on_thread_start),
        on_thread_stop(options.on_thread_stop) {}

  // What workers_ and shards_ point to.
  std::vector<std::unique_ptr<worker>> worker_storage;
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

  std::mutex threads_mutex;  // serialises starting threads; guards threads
  std::vector<pthread_t> threads;
  std::mutex shut_down_mutex;  // one shut_down() at a time
  bool joined = false;         // guarded by shut_down_mutex
};

}  // namespace fjord::detail
