#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "fjord/execution.hpp"
#include "fjord/pool.hpp"

namespace test_support {

// Input lengths of every class the algorithms treat apart: empty, one
// element, a few, around the prefix and leaf sizes, around a grain of 1000
// and a scan tile (1,024 .. 16,384), and large.
inline const std::vector<std::size_t>& algorithm_sizes() {
  static const std::vector<std::size_t> sizes{
      0, 1, 2, 3, 7, 64, 999, 1000, 1001, 4095, 4096, 4097, 16383, 16384, 16385, 50000, 131073};
  return sizes;
}

inline std::vector<std::int64_t> random_ints(std::size_t n, std::uint64_t seed,
                                             std::int64_t low = -1000, std::int64_t high = 1000) {
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<std::int64_t> dist(low, high);
  std::vector<std::int64_t> v(n);
  for (auto& x : v) {
    x = dist(rng);
  }
  return v;
}

inline std::vector<double> random_doubles(std::size_t n, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> dist(-1.0, 1.0);
  std::vector<double> v(n);
  for (auto& x : v) {
    x = dist(rng);
  }
  return v;
}

inline std::vector<std::string> random_strings(std::size_t n, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<int> length(0, 24);
  std::uniform_int_distribution<int> letter('a', 'e');
  std::vector<std::string> v(n);
  for (auto& s : v) {
    s.resize(static_cast<std::size_t>(length(rng)));
    for (char& c : s) {
      c = static_cast<char>(letter(rng));
    }
  }
  return v;
}

// Work that takes about `d` (a busy wait: sleeping would hand the CPU over).
inline void busy_for(std::chrono::nanoseconds d) {
  const auto end = std::chrono::steady_clock::now() + d;
  while (std::chrono::steady_clock::now() < end) {
  }
}

// Two workers whatever the machine, so splitting and stealing happen.
inline fjord::pool& two_workers() {
  static fjord::pool p(fjord::pool_options{.workers = 2});
  return p;
}

inline fjord::pool& one_worker() {
  static fjord::pool p(fjord::pool_options{.workers = 1});
  return p;
}

// The policies every algorithm is checked under: adaptive on the default
// pool and on two workers, fine and coarse grains, deterministic.
inline std::vector<fjord::parallel_policy> algorithm_policies() {
  return {fjord::par,
          fjord::par.on(two_workers()),
          fjord::par.on(two_workers()).with_grain(1),
          fjord::par.on(two_workers()).with_grain(1000),
          fjord::par.on(one_worker()),
          fjord::par.deterministic(),
          fjord::par.on(two_workers()).deterministic().with_grain(333)};
}

}  // namespace test_support
