// fib(n) with a fork at every call and no cutoff (fib(n-1) offered to other
// workers, fib(n-2) run inline, then join): 2*F(n+1)-1 calls.
#include "common/harness.hpp"

#include "fjord/join.hpp"
#include "fjord/pool.hpp"

#ifdef BENCH_HAVE_TBB
#include <tbb/global_control.h>
#include <tbb/task_arena.h>
#include <tbb/task_group.h>
#endif
#ifdef _OPENMP
#include <omp.h>
#endif

namespace {

__attribute__((noinline)) long fib_seq(int n) {
  return n < 2 ? n : fib_seq(n - 1) + fib_seq(n - 2);
}

long fib_fjord(int n) {
  if (n < 2) {
    return n;
  }
  auto [a, b] = fjord::join([=] { return fib_fjord(n - 1); }, [=] { return fib_fjord(n - 2); });
  return a + b;
}

#ifdef BENCH_HAVE_TBB
long fib_tbb(int n) {
  if (n < 2) {
    return n;
  }
  long a = 0;
  tbb::task_group g;
  g.run([&] { a = fib_tbb(n - 1); });
  const long b = fib_tbb(n - 2);
  g.wait();
  return a + b;
}
#endif

#ifdef _OPENMP
long fib_omp(int n) {
  if (n < 2) {
    return n;
  }
  long a = 0;
#pragma omp task shared(a) firstprivate(n)
  a = fib_omp(n - 1);
  const long b = fib_omp(n - 2);
#pragma omp taskwait
  return a + b;
}
#endif

long fib_value(int n) {
  long a = 0, b = 1;
  for (int i = 0; i < n; ++i) {
    const long c = a + b;
    a = b;
    b = c;
  }
  return a;
}

}  // namespace

int main(int argc, char** argv) {
  auto a = bench::args::parse(argc, argv);
  const int n = a.size > 0 ? static_cast<int>(a.size) : 30;
  const long expected = fib_value(n);
  const double calls = 2.0 * static_cast<double>(fib_value(n + 1)) - 1;
  auto timed = [&](auto&& compute) {
    return [&, compute] {
      const auto start = bench::clock::now();
      const long got = compute();
      const double ms = bench::since_ms(start);
      bench::check("fib", got, expected);
      return ms;
    };
  };
  if (a.impl == "sequential") {
    bench::run_rounds(a, "ms", calls, timed([&] { return fib_seq(n); }));
  } else if (a.impl == "fjord") {
    fjord::pool pool(
        fjord::pool_options{.workers = static_cast<std::size_t>(a.threads), .callers_join = false});
    bench::run_rounds(a, "ms", calls,
                      timed([&] { return pool.call([&] { return fib_fjord(n); }); }));
#ifdef BENCH_HAVE_TBB
  } else if (a.impl == "onetbb") {
    tbb::global_control gc(tbb::global_control::max_allowed_parallelism, a.threads);
    tbb::task_arena arena(a.threads);
    bench::run_rounds(a, "ms", calls,
                      timed([&] { return arena.execute([&] { return fib_tbb(n); }); }));
#endif
#ifdef _OPENMP
  } else if (a.impl == "openmp") {
    bench::run_rounds(a, "ms", calls, timed([&] {
                        long r = 0;
#pragma omp parallel num_threads(a.threads)
#pragma omp single
                        r = fib_omp(n);
                        return r;
                      }));
#endif
  } else {
    bench::unknown_impl(a.impl);
  }
}
