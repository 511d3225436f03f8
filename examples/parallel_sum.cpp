// Divide-and-conquer sum with a grain size (the cfsched seed's parallel_sum),
// written with fjord::join: split until a range is smaller than the grain.
// Then the same sum with the algorithms, which need no grain.
#include <cstdio>
#include <exception>
#include <numeric>
#include <random>
#include <span>
#include <vector>

#include "fjord/join.hpp"
#include "fjord/parallel_for.hpp"
#include "fjord/reduce.hpp"

long long parallel_sum(std::span<const int> data, std::size_t grain) {
  if (data.size() <= grain) {
    return std::accumulate(data.begin(), data.end(), 0LL);
  }
  const std::size_t mid = data.size() / 2;
  auto [left, right] = fjord::join([&] { return parallel_sum(data.first(mid), grain); },
                                   [&] { return parallel_sum(data.subspan(mid), grain); });
  return left + right;
}

int main() try {
  std::vector<int> data(10'000'000);
  std::mt19937 rng(42);
  std::uniform_int_distribution<int> dist(0, 10);
  for (int& x : data) {
    x = dist(rng);
  }
  const long long expected = std::accumulate(data.begin(), data.end(), 0LL);
  const long long got = parallel_sum(data, 10'000);
  std::printf("join:            sum = %lld (%s)\n", got, got == expected ? "correct" : "WRONG");
  const long long reduced = fjord::reduce(fjord::par, data.begin(), data.end(), 0LL);
  std::printf("fjord::reduce:   sum = %lld (%s)\n", reduced,
              reduced == expected ? "correct" : "WRONG");
  const long long pieces = fjord::parallel_reduce(
      data.cbegin(), data.cend(), 0LL,
      [](auto first, auto last, long long acc) { return std::accumulate(first, last, acc); },
      [](long long a, long long b) { return a + b; });
  std::printf("parallel_reduce: sum = %lld (%s)\n", pieces,
              pieces == expected ? "correct" : "WRONG");
  return got == expected && reduced == expected && pieces == expected ? 0 : 1;
} catch (const std::exception& e) {
  std::fprintf(stderr, "parallel_sum: %s\n", e.what());
  return 1;
} catch (...) {
  std::fprintf(stderr, "parallel_sum: an exception that is not a std::exception\n");
  return 1;
}
