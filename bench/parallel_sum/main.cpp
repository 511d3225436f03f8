// The cfsched seed: sum of 10,000,000 ints (uniform 0..10, mt19937 seed 42)
// with a grain size. One round = one sum, in milliseconds.
#include <atomic>
#include <future>
#include <numeric>
#include <random>
#include <span>
#include <thread>
#include <vector>

#include "common/harness.hpp"
#include "fjord/join.hpp"
#include "fjord/parallel_for.hpp"
#include "fjord/reduce.hpp"

#ifdef BENCH_HAVE_TBB
#include <tbb/blocked_range.h>
#include <tbb/global_control.h>
#include <tbb/parallel_reduce.h>
#include <tbb/partitioner.h>
#include <tbb/task_arena.h>
#endif

namespace {

long long sum_fjord(std::span<const int> d, std::size_t grain) {
  if (d.size() <= grain) {
    return std::accumulate(d.begin(), d.end(), 0LL);
  }
  const std::size_t mid = d.size() / 2;
  auto [l, r] = fjord::join([&] { return sum_fjord(d.first(mid), grain); },
                            [&] { return sum_fjord(d.subspan(mid), grain); });
  return l + r;
}

// cppreference's std::async example: the upper half on a new thread.
long long sum_async(const int* b, const int* e, std::size_t grain) {
  const auto len = static_cast<std::size_t>(e - b);
  if (len < grain) {
    return std::accumulate(b, e, 0LL);
  }
  const int* mid = b + len / 2;
  auto handle = std::async(std::launch::async, sum_async, mid, e, grain);
  const long long sum = sum_async(b, mid, grain);
  return sum + handle.get();
}

#ifdef BENCH_HAVE_TBB
struct tbb_body {
  long long sum = 0;
  tbb_body() = default;
  tbb_body(tbb_body&, tbb::split) {}
  void operator()(const tbb::blocked_range<const int*>& r) {
    sum = std::accumulate(r.begin(), r.end(), sum);
  }
  void join(const tbb_body& o) { sum += o.sum; }
};
#endif

}  // namespace

int main(int argc, char** argv) {
  auto a = bench::args::parse(argc, argv);
  const long n = a.size > 0 ? a.size : 10'000'000;
  const auto grain = static_cast<std::size_t>(a.grain > 0 ? a.grain : 10000);
  std::vector<int> data(static_cast<std::size_t>(n));
  std::mt19937 rng(42);
  std::uniform_int_distribution<int> dist(0, 10);
  for (int& x : data) {
    x = dist(rng);
  }
  const long long expected = std::accumulate(data.begin(), data.end(), 0LL);
  const double leaves = static_cast<double>((static_cast<std::size_t>(n) + grain - 1) / grain);
  auto timed = [&](auto&& compute) {
    return [&, compute] {
      const auto start = bench::clock::now();
      const long long got = compute();
      const double ms = bench::since_ms(start);
      bench::check("parallel_sum", got, expected);
      return ms;
    };
  };
  if (a.impl == "accumulate") {
    bench::run_rounds(a, "ms", 1,
                      timed([&] { return std::accumulate(data.begin(), data.end(), 0LL); }));
  } else if (a.impl == "accumulate-on-worker") {
    // The floor for any pool at one worker: the same loop, run by the pool's
    // worker while the caller waits (as every pool-run row does).
    fjord::pool pool(fjord::pool_options{.workers = 1});
    bench::run_rounds(
        a, "ms", 1, timed([&] {
          return pool.call([&] { return std::accumulate(data.begin(), data.end(), 0LL); });
        }));
  } else if (a.impl == "halves") {
    // The ceiling for two workers: std::accumulate over each half on two
    // threads that are already running (they spin on a round counter, so
    // no wake-up is timed).
    const auto mid = data.begin() + n / 2;
    std::atomic<int> round{0};
    std::atomic<int> finished{0};
    long long second_half = 0;
    std::thread helper([&] {
      for (int seen = 0;;) {
        int r = round.load(std::memory_order_acquire);
        while (r == seen) {
          r = round.load(std::memory_order_acquire);
        }
        if (r < 0) {
          return;
        }
        seen = r;
        second_half = std::accumulate(mid, data.end(), 0LL);
        finished.store(r, std::memory_order_release);
      }
    });
    int r = 0;
    bench::run_rounds(a, "ms", 1, timed([&] {
                        round.store(++r, std::memory_order_release);
                        const long long first_half = std::accumulate(data.begin(), mid, 0LL);
                        while (finished.load(std::memory_order_acquire) != r) {
                        }
                        return first_half + second_half;
                      }));
    round.store(-1, std::memory_order_release);
    helper.join();
  } else if (a.impl == "fjord") {
    fjord::pool pool(
        fjord::pool_options{.workers = static_cast<std::size_t>(a.threads), .callers_join = false});
    bench::run_rounds(a, "ms", leaves,
                      timed([&] { return pool.call([&] { return sum_fjord(data, grain); }); }));
  } else if (a.impl == "fjord-reduce" || a.impl == "fjord-parallel_reduce") {
    // The algorithms: with --grain 0 (no grain) they split adaptively.
    fjord::pool pool(
        fjord::pool_options{.workers = static_cast<std::size_t>(a.threads), .callers_join = false});
    const auto policy = a.grain > 0 ? fjord::par.on(pool).with_grain(grain) : fjord::par.on(pool);
    if (a.impl == "fjord-reduce") {
      bench::run_rounds(a, "ms", leaves, timed([&] {
                          return fjord::reduce(policy, data.begin(), data.end(), 0LL);
                        }));
    } else {
      bench::run_rounds(
          a, "ms", leaves, timed([&] {
            return fjord::parallel_reduce(
                policy, data.cbegin(), data.cend(), 0LL,
                [](auto b, auto e, long long acc) { return std::accumulate(b, e, acc); },
                std::plus<>());
          }));
    }
  } else if (a.impl == "std-async") {
    bench::run_rounds(a, "ms", leaves,
                      timed([&] { return sum_async(data.data(), data.data() + n, grain); }));
#ifdef BENCH_HAVE_TBB
  } else if (a.impl == "onetbb-simple" || a.impl == "onetbb-auto") {
    tbb::global_control gc(tbb::global_control::max_allowed_parallelism, a.threads);
    tbb::task_arena arena(a.threads);
    const bool simple = a.impl == "onetbb-simple";
    bench::run_rounds(a, "ms", leaves, timed([&] {
                        return arena.execute([&] {
                          tbb_body body;
                          tbb::blocked_range<const int*> range(data.data(), data.data() + n, grain);
                          if (simple) {
                            tbb::parallel_reduce(range, body, tbb::simple_partitioner());
                          } else {
                            tbb::parallel_reduce(range, body, tbb::auto_partitioner());
                          }
                          return body.sum;
                        });
                      }));
#endif
  } else {
    bench::unknown_impl(a.impl);
  }
}
