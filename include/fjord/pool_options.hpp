#pragma once

#include <chrono>
#include <cstddef>
#include <exception>
#include <functional>
#include <optional>
#include <string>

namespace fjord {

// How a pool is built. Every field has a sensible default; invalid values make
// the pool constructor throw std::invalid_argument naming the field and value.
struct pool_options {
  // Worker threads. Unset: the CPUs this process may use (affinity mask and
  // cgroup CPU quota), see fjord::available_cpus().
  std::optional<std::size_t> workers;

  // How long an idle worker keeps looking for work before it parks. Longer
  // means lower wake-up latency, shorter means less CPU burnt when idle.
  std::chrono::microseconds spin_budget{50};

  // Thread names are "<name>-<index>" (Linux keeps the first 15 bytes).
  std::string name = "fjord";

  // Slots in each worker's deque (a power of two, at least 64). Only touched
  // pages cost memory; a full deque degrades to running children inline.
  std::size_t deque_capacity = std::size_t{1} << 16;

  // Called on a worker with the exception of a posted (fire-and-forget) job.
  // Unset: print it and std::terminate, as an exception leaving std::thread does.
  std::function<void(std::exception_ptr)> unhandled_exception_handler;
};

// The number of CPUs this process may run on: the affinity mask, further
// limited by a cgroup (v2 cpu.max or v1 cfs quota) CPU quota; at least 1.
std::size_t available_cpus() noexcept;

}  // namespace fjord
