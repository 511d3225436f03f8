// Recursive Fibonacci with a fork at every call: the classic test of how
// cheap a fork-join is. Usage: example_fib [n]
#include <chrono>
#include <cstdio>
#include <cstdlib>

#include "fjord/join.hpp"
#include "fjord/pool.hpp"

long fib(int n) {
  if (n < 2) {
    return n;
  }
  auto [a, b] = fjord::join([=] { return fib(n - 1); }, [=] { return fib(n - 2); });
  return a + b;
}

int main(int argc, char** argv) {
  const int n = argc > 1 ? std::atoi(argv[1]) : 30;
  const auto start = std::chrono::steady_clock::now();
  const long result = fjord::default_pool().call([n] { return fib(n); });
  const std::chrono::duration<double, std::milli> took = std::chrono::steady_clock::now() - start;
  std::printf("fib(%d) = %ld in %.2f ms on %zu workers\n", n, result, took.count(),
              fjord::default_pool().size());
  const auto total = fjord::default_pool().stats().total();
  std::printf(
      "jobs run %llu, steals %llu, parks %llu\n", static_cast<unsigned long long>(total.jobs_run),
      static_cast<unsigned long long>(total.steals), static_cast<unsigned long long>(total.parks));
  long a = 0;  // the same number, one addition at a time
  long b = 1;
  for (int i = 0; i < n; ++i) {
    b = a + b;
    a = b - a;
  }
  return result == a ? 0 : 1;
}
