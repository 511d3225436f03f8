// The async_simple seed's two coroutine benchmarks:
//   chain:       co_return n + co_await chain(n - 1), depth 1000 (1,001 frames)
//   collect_all: 5000 chains of depth 50 awaited together (255,000 frames)
// --impl reference: the plain lazy task with malloc'd frames
// (reference_task.hpp), run inline on one thread. The compiler matters as
// much as the library here, so bench/run builds this with g++ and clang.
// Figures: microseconds per whole chain; milliseconds per collect_all.
#include <vector>

#include "common/harness.hpp"
#include "coro/reference_task.hpp"

namespace {

using task = bench::reference_task<long>;

task chain(int n) {
  if (n == 0) {
    co_return 1;
  }
  co_return n + co_await chain(n - 1);
}

task collect_all(int chains, int depth) {
  std::vector<task> tasks;
  tasks.reserve(static_cast<std::size_t>(chains));
  for (int i = 0; i < chains; ++i) {
    tasks.push_back(chain(depth));
  }
  long sum = 0;
  for (auto& t : tasks) {
    sum += co_await t;
  }
  co_return sum;
}

long chain_value(int n) {
  return 1 + static_cast<long>(n) * (n + 1) / 2;
}

}  // namespace

int main(int argc, char** argv) {
  auto a = bench::args::parse(argc, argv);
  const bool is_collect = a.grain > 0;  // --grain = chains in collect_all mode
  if (a.impl != "reference") {
    bench::unknown_impl(a.impl);
  }
  if (!is_collect) {
    const int depth = a.size > 0 ? static_cast<int>(a.size) : 1000;
    constexpr int per_round = 1000;
    bench::run_rounds(a, "us/chain", depth + 1, [&] {
      const auto start = bench::clock::now();
      long sum = 0;
      for (int i = 0; i < per_round; ++i) {
        sum += chain(depth).run();
      }
      const double us = bench::since_ms(start) * 1000.0 / per_round;
      bench::check("coro_chain", sum, per_round * chain_value(depth));
      return us;
    });
  } else {
    const int depth = a.size > 0 ? static_cast<int>(a.size) : 50;
    const int chains = static_cast<int>(a.grain);
    bench::run_rounds(a, "ms/collect", static_cast<double>(chains) * (depth + 1), [&] {
      const auto start = bench::clock::now();
      const long sum = collect_all(chains, depth).run();
      const double ms = bench::since_ms(start);
      bench::check("coro_collect_all", sum, chains * chain_value(depth));
      return ms;
    });
  }
}
