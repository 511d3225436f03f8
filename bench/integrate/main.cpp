// Adaptive trapezoid quadrature of f(x) = (x*x + 1) * x over [0, size], the
// "integrate" kernel of the Cilk examples and the runtime-benchmarks
// collection (also in libfork's and Weave's suites): an interval whose two
// halves disagree with it by more than epsilon = 1e-9 forks both halves.
// Irregular: the tree is deep where f curves most (near x = size).
//   --impl sequential | fjord | fjord-task-group | onetbb   --size upper bound (default 1000)
// The round's answer is checked against the exact integral (relative 1e-9),
// and its task count (intervals split) against a sequential count.
#include <cmath>
#include <cstdlib>
#include <utility>

#include "common/harness.hpp"

#include "fjord/join.hpp"
#include "fjord/pool.hpp"
#include "fjord/task_group.hpp"

#ifdef BENCH_HAVE_TBB
#include <tbb/global_control.h>
#include <tbb/task_arena.h>
#include <tbb/task_group.h>
#endif

namespace {

constexpr double epsilon = 1.0e-9;

double f(double x) {
  return (x * x + 1.0) * x;
}

// The next level's estimate of [x1, x2], and whether it is close enough.
struct split {
  double mid, y_mid, left, right;
  bool done(double area) const { return std::fabs(left + right - area) < epsilon; }
};

split halve(double x1, double y1, double x2, double y2) {
  const double half = (x2 - x1) / 2;
  const double x0 = x1 + half;
  const double y0 = f(x0);
  return {x0, y0, (y1 + y0) / 2 * half, (y0 + y2) / 2 * half};
}

// (area, intervals split)
using result = std::pair<double, long>;

result seq(double x1, double y1, double x2, double y2, double area) {
  const split s = halve(x1, y1, x2, y2);
  if (s.done(area)) {
    return {s.left + s.right, 0};
  }
  const result l = seq(x1, y1, s.mid, s.y_mid, s.left);
  const result r = seq(s.mid, s.y_mid, x2, y2, s.right);
  return {l.first + r.first, l.second + r.second + 1};
}

result fjord_join(double x1, double y1, double x2, double y2, double area) {
  const split s = halve(x1, y1, x2, y2);
  if (s.done(area)) {
    return {s.left + s.right, 0};
  }
  auto [l, r] = fjord::join([&] { return fjord_join(x1, y1, s.mid, s.y_mid, s.left); },
                            [&] { return fjord_join(s.mid, s.y_mid, x2, y2, s.right); });
  return {l.first + r.first, l.second + r.second + 1};
}

// The left half as a child of a group, the right half inline, then wait.
template <class Group>
result grouped(double x1, double y1, double x2, double y2, double area) {
  const split s = halve(x1, y1, x2, y2);
  if (s.done(area)) {
    return {s.left + s.right, 0};
  }
  result l;
  Group g;
  g.run([&] { l = grouped<Group>(x1, y1, s.mid, s.y_mid, s.left); });
  const result r = grouped<Group>(s.mid, s.y_mid, x2, y2, s.right);
  g.wait();
  return {l.first + r.first, l.second + r.second + 1};
}

}  // namespace

int main(int argc, char** argv) {
  auto a = bench::args::parse(argc, argv);
  const double n = a.size > 0 ? static_cast<double>(a.size) : 1000.0;
  const double exact = n * n * n * n / 4 + n * n / 2;
  const long splits = seq(0, f(0), n, f(n), 0).second;
  auto timed = [&](auto&& compute) {
    return [&, compute] {
      const auto start = bench::clock::now();
      const result got = compute();
      const double ms = bench::since_ms(start);
      if (!(std::fabs(got.first - exact) <= 1e-9 * exact)) {
        std::fprintf(stderr, "WRONG RESULT in integrate: got %.17g, expected %.17g\n", got.first,
                     exact);
        std::exit(3);
      }
      bench::check("integrate (intervals split)", got.second, splits);
      return ms;
    };
  };
  const auto tasks = static_cast<double>(splits);
  const auto whole = [&](auto&& method) { return method(0, f(0), n, f(n), 0); };
  if (a.impl == "sequential") {
    bench::run_rounds(a, "ms", tasks, timed([&] { return whole(seq); }));
  } else if (a.impl == "fjord" || a.impl == "fjord-task-group") {
    fjord::pool pool(
        fjord::pool_options{.workers = static_cast<std::size_t>(a.threads), .callers_join = false});
    if (a.impl == "fjord") {
      bench::run_rounds(a, "ms", tasks,
                        timed([&] { return pool.call([&] { return whole(fjord_join); }); }));
    } else {
      bench::run_rounds(a, "ms", tasks, timed([&] {
                          return pool.call([&] { return whole(grouped<fjord::task_group>); });
                        }));
    }
#ifdef BENCH_HAVE_TBB
  } else if (a.impl == "onetbb") {
    tbb::global_control gc(tbb::global_control::max_allowed_parallelism, a.threads);
    tbb::task_arena arena(a.threads);
    bench::run_rounds(a, "ms", tasks, timed([&] {
                        return arena.execute([&] { return whole(grouped<tbb::task_group>); });
                      }));
#endif
  } else {
    bench::unknown_impl(a.impl);
  }
}
