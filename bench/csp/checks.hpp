#pragma once
// What every implementation of the CSP suite checks and reports, shared by
// main.cpp (fjord) and its peers written in C++ (boost_fiber.cpp).

#include <cstdio>

namespace csp_bench {

// 0 + 1 + ... + n.
inline long long expected_sum(long n) {
  return static_cast<long long>(n) * (n + 1) / 2;
}

// The n-th prime (prime_sieve's expected last prime), by trial division.
inline int nth_prime(int n) {
  int last = 0;
  for (int c = 2, found = 0; found < n; ++c) {
    bool prime = true;
    for (int d = 2; d * d <= c; ++d) {
      if (c % d == 0) {
        prime = false;
        break;
      }
    }
    if (prime) {
      ++found;
      last = c;
    }
  }
  return last;
}

// This process's resident set now, in KiB (processes_idle's bytes per
// blocked process are the growth of it).
inline long rss_kib() {
  std::FILE* f = std::fopen("/proc/self/statm", "r");
  long pages = 0;
  long resident = 0;
  if (f != nullptr) {
    if (std::fscanf(f, "%ld %ld", &pages, &resident) != 2) {
      resident = 0;
    }
    std::fclose(f);
  }
  return resident * 4;
}

}  // namespace csp_bench
