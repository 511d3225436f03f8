// CPU affinity of a pool's threads (pool_options::cpus).

#include "fjord/detail/worker_placement.hpp"

#include <pthread.h>
#include <sched.h>

#include <stdexcept>
#include <string>

namespace fjord::detail {

void validate_cpus(const std::vector<unsigned>& cpus) {
  if (cpus.empty()) {
    throw std::invalid_argument(
        "fjord::pool_options::cpus is an empty set; leave it unset to run anywhere");
  }
  cpu_set_t allowed;
  CPU_ZERO(&allowed);
  if (sched_getaffinity(0, sizeof(allowed), &allowed) != 0) {
    CPU_ZERO(&allowed);
  }
  cpu_set_t seen;
  CPU_ZERO(&seen);
  for (const unsigned cpu : cpus) {
    if (cpu >= CPU_SETSIZE) {
      throw std::invalid_argument("fjord::pool_options::cpus: CPU " + std::to_string(cpu) +
                                  " is beyond the largest CPU number supported (" +
                                  std::to_string(CPU_SETSIZE - 1) + ")");
    }
    if (CPU_ISSET(cpu, &seen)) {
      throw std::invalid_argument("fjord::pool_options::cpus: CPU " + std::to_string(cpu) +
                                  " is listed twice");
    }
    CPU_SET(cpu, &seen);
    if (!CPU_ISSET(cpu, &allowed)) {
      throw std::invalid_argument("fjord::pool_options::cpus: CPU " + std::to_string(cpu) +
                                  " is not in this process's affinity mask (" +
                                  std::to_string(CPU_COUNT(&allowed)) + " CPUs allowed)");
    }
  }
}

int place_this_thread(const std::vector<unsigned>& cpus, bool pin_each, std::size_t index,
                      std::size_t workers) noexcept {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (pin_each && index < workers) {
    CPU_SET(cpus[index % cpus.size()], &set);
  } else {
    for (const unsigned cpu : cpus) {
      CPU_SET(cpu, &set);
    }
  }
  return pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
}

}  // namespace fjord::detail
