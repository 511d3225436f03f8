#pragma once
// The compute task of the Eff_ThreadPool seed's IO/compute benchmark: the
// primes below 1,000, into a vector (168 of them). bench/pool's
// mixed_io_compute and bench/io's blocking_offload both run it.

#include <vector>

namespace bench {

inline int primes_below_1000() {
  std::vector<int> primes;
  for (int n = 2; n < 1000; ++n) {
    bool prime = true;
    for (int d = 2; d * d <= n; ++d) {
      if (n % d == 0) {
        prime = false;
        break;
      }
    }
    if (prime) {
      primes.push_back(n);
    }
  }
  return static_cast<int>(primes.size());
}

}  // namespace bench
