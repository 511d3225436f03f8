// The libcsp seed's divide-and-conquer sum: sum(lo, hi) = lo if lo == hi,
// else sum(lo, mid) + sum(mid + 1, hi), both halves forked at every internal
// node (20,000,000 tasks for 0..10,000,000). One round = one sum.
#include "common/harness.hpp"

#include "fjord/join.hpp"
#include "fjord/pool.hpp"

#ifdef BENCH_HAVE_TBB
#include <tbb/global_control.h>
#include <tbb/task_arena.h>
#include <tbb/task_group.h>
#endif

namespace {

__attribute__((noinline)) long long sum_seq(long lo, long hi) {
  if (lo == hi) {
    return lo;
  }
  const long mid = lo + (hi - lo) / 2;
  return sum_seq(lo, mid) + sum_seq(mid + 1, hi);
}

long long sum_fjord(long lo, long hi) {
  if (lo == hi) {
    return lo;
  }
  const long mid = lo + (hi - lo) / 2;
  auto [a, b] =
      fjord::join([=] { return sum_fjord(lo, mid); }, [=] { return sum_fjord(mid + 1, hi); });
  return a + b;
}

#ifdef BENCH_HAVE_TBB
// The seed's form: both halves run() as tasks, then wait().
long long sum_tbb(long lo, long hi) {
  if (lo == hi) {
    return lo;
  }
  const long mid = lo + (hi - lo) / 2;
  long long a = 0, b = 0;
  tbb::task_group g;
  g.run([&] { a = sum_tbb(lo, mid); });
  g.run([&] { b = sum_tbb(mid + 1, hi); });
  g.wait();
  return a + b;
}
#endif

#ifdef _OPENMP
long long sum_omp(long lo, long hi) {
  if (lo == hi) {
    return lo;
  }
  const long mid = lo + (hi - lo) / 2;
  long long a = 0, b = 0;
#pragma omp task shared(a)
  a = sum_omp(lo, mid);
#pragma omp task shared(b)
  b = sum_omp(mid + 1, hi);
#pragma omp taskwait
  return a + b;
}
#endif

}  // namespace

int main(int argc, char** argv) {
  auto a = bench::args::parse(argc, argv);
  const long n = a.size > 0 ? a.size : 10'000'000;
  const long long expected = static_cast<long long>(n) * (n + 1) / 2;
  const double tasks = 2.0 * static_cast<double>(n);
  auto timed = [&](auto&& compute) {
    return [&, compute] {
      const auto start = bench::clock::now();
      const long long got = compute();
      const double s = bench::since_ms(start) / 1000.0;
      bench::check("fork_sum", got, expected);
      return s;
    };
  };
  if (a.impl == "sequential") {
    bench::run_rounds(a, "s/round", tasks, timed([&] { return sum_seq(0, n); }));
  } else if (a.impl == "fjord") {
    fjord::pool pool(
        fjord::pool_options{.workers = static_cast<std::size_t>(a.threads), .callers_join = false});
    bench::run_rounds(a, "s/round", tasks,
                      timed([&] { return pool.call([&] { return sum_fjord(0, n); }); }));
#ifdef BENCH_HAVE_TBB
  } else if (a.impl == "onetbb") {
    tbb::global_control gc(tbb::global_control::max_allowed_parallelism, a.threads);
    tbb::task_arena arena(a.threads);
    bench::run_rounds(a, "s/round", tasks,
                      timed([&] { return arena.execute([&] { return sum_tbb(0, n); }); }));
#endif
#ifdef _OPENMP
  } else if (a.impl == "openmp") {
    bench::run_rounds(a, "s/round", tasks, timed([&] {
                        long long r = 0;
#pragma omp parallel num_threads(a.threads)
#pragma omp single
                        r = sum_omp(0, n);
                        return r;
                      }));
#endif
  } else {
    bench::unknown_impl(a.impl);
  }
}
