// A small fork-join tree entered from outside the pool, again and again: the
// calling thread is not a worker, each call hands fib(size) (2*F(size+1)-1
// nodes, a fork at each, ~2-3 us of sequential work at size 15) to the pool
// and waits for it. This is where waking, stealing and parking dominate: a
// pool whose second worker parks after every tree pays a wake per call.
//   --impl sequential | fjord | fjord-handed-over | joined-over-handed-over | fjord-task-group |
//          fjord-inside | onetbb
//   --size n (default 15)
// The figure is microseconds per tree (median over rounds of 2000 trees).
// fjord's caller joins the pool for each call (pool_options::callers_join,
// as oneTBB's arena.execute: its caller works too); fjord-handed-over hands
// each call to a worker and waits, as fjord did before; joined-over-handed-over
// runs a round of each back to back in one process and gives their ratio.
// fjord-inside is the floor for entering: the same trees run from a worker
// (one pool.call around the whole round), so it costs the joins, the steals
// and the second worker's searches, but no entry or wake-up.
#include <cstdlib>

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

constexpr int trees_per_round = 2000;

__attribute__((noinline)) long fib_seq(int n) {
  return n < 2 ? n : fib_seq(n - 1) + fib_seq(n - 2);
}

long fib_join(int n) {
  if (n < 2) {
    return n;
  }
  auto [x, y] = fjord::join([=] { return fib_join(n - 1); }, [=] { return fib_join(n - 2); });
  return x + y;
}

template <class Group>
long fib_group(int n) {
  if (n < 2) {
    return n;
  }
  long x = 0;
  Group g;
  g.run([&x, n] { x = fib_group<Group>(n - 1); });
  const long y = fib_group<Group>(n - 2);
  g.wait();
  return x + y;
}

long fib_value(int n) {
  long x = 0, y = 1;
  for (int i = 0; i < n; ++i) {
    const long z = x + y;
    x = y;
    y = z;
  }
  return x;
}

}  // namespace

int main(int argc, char** argv) {
  auto a = bench::args::parse(argc, argv);
  const int n = a.size > 0 ? static_cast<int>(a.size) : 15;
  const long expected = fib_value(n);
  const double nodes = 2.0 * static_cast<double>(fib_value(n + 1)) - 1;
  // One round: trees_per_round calls from this (non-worker) thread.
  auto timed = [&](auto&& one_tree) {
    return [&, one_tree] {
      const auto start = bench::clock::now();
      for (int i = 0; i < trees_per_round; ++i) {
        bench::check("small_tree", one_tree(), expected);
      }
      return bench::since_ms(start) * 1000.0 / trees_per_round;
    };
  };
  if (a.impl == "sequential") {
    bench::run_rounds(a, "us", nodes, timed([&] { return fib_seq(n); }));
  } else if (a.impl == "fjord-inside") {
    // The round's call handed to a worker: the trees run from inside.
    fjord::pool pool(
        fjord::pool_options{.workers = static_cast<std::size_t>(a.threads), .callers_join = false});
    bench::run_rounds(a, "us", nodes, [&] {
      return pool.call([&] {
        const auto start = bench::clock::now();
        for (int i = 0; i < trees_per_round; ++i) {
          bench::check("small_tree", fib_join(n), expected);
        }
        return bench::since_ms(start) * 1000.0 / trees_per_round;
      });
    });
  } else if (a.impl == "joined-over-handed-over") {
    // The two entries' ratio from rounds run back to back in one process,
    // in turn first, so that both halves of a pair see the machine in the
    // same state (it swings 1.5x between processes).
    const auto workers = static_cast<std::size_t>(a.threads);
    fjord::pool joined(fjord::pool_options{.workers = workers});
    fjord::pool handed(fjord::pool_options{.workers = workers, .callers_join = false});
    auto on = [&](fjord::pool& p) {
      return timed([&] { return p.call([&] { return fib_join(n); }); });
    };
    auto joined_round = on(joined);
    auto handed_round = on(handed);
    bool joined_first = true;
    bench::run_rounds(a, "x handed over", nodes, [&] {
      double j = 0;
      double h = 0;
      if (joined_first) {
        j = joined_round();
        h = handed_round();
      } else {
        h = handed_round();
        j = joined_round();
      }
      joined_first = !joined_first;
      return j / h;
    });
  } else if (a.impl == "fjord" || a.impl == "fjord-task-group" || a.impl == "fjord-handed-over") {
    // fjord-handed-over: the caller hands each call to a worker and waits
    // (pool_options::callers_join = false), as before callers joined.
    fjord::pool pool(fjord::pool_options{.workers = static_cast<std::size_t>(a.threads),
                                         .callers_join = a.impl != "fjord-handed-over"});
    if (a.impl != "fjord-task-group") {
      bench::run_rounds(a, "us", nodes,
                        timed([&] { return pool.call([&] { return fib_join(n); }); }));
    } else {
      bench::run_rounds(a, "us", nodes, timed([&] {
                          return pool.call([&] { return fib_group<fjord::task_group>(n); });
                        }));
    }
#ifdef BENCH_HAVE_TBB
  } else if (a.impl == "onetbb") {
    tbb::global_control gc(tbb::global_control::max_allowed_parallelism, a.threads);
    tbb::task_arena arena(a.threads);
    bench::run_rounds(a, "us", nodes, timed([&] {
                        return arena.execute([&] { return fib_group<tbb::task_group>(n); });
                      }));
#endif
  } else {
    bench::unknown_impl(a.impl);
  }
}
