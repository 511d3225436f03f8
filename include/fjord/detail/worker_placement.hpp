#pragma once

#include <cstddef>
#include <vector>

namespace fjord::detail {

// pool_options::cpus: throws std::invalid_argument naming the first bad
// value (an empty set, a repeated CPU, or one the calling thread's affinity
// mask excludes, so the process may not use it).
void validate_cpus(const std::vector<unsigned>& cpus);

// Restricts the calling thread, thread `index` of a pool of `workers`
// workers, to its CPUs: cpus[index] alone when pin_each and index is a
// worker's (spares stand in for any worker, so they get the whole set),
// else the whole set. Returns the error of pthread_setaffinity_np (0 on
// success); the thread then runs where it was allowed before.
int place_this_thread(const std::vector<unsigned>& cpus, bool pin_each, std::size_t index,
                      std::size_t workers) noexcept;

}  // namespace fjord::detail
