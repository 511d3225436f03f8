// N-queens as BOTS publishes it (nqueens.c, Duran et al., "Barcelona OpenMP
// Tasks Suite", ICPP 2009): every safe placement of the next queen is a task
// that gets its own copy of the board; the leaves count solutions. Irregular:
// a subtree's size depends on the placements above it. No cutoff.
//   --impl sequential | fjord | fjord-task-group | onetbb   --size N (queens)
// fjord and rayon collect a row's safe columns, then split them in halves
// with join; fjord-task-group and oneTBB run one child per safe column, as
// BOTS does.
#include <array>
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

using board = std::array<signed char, 32>;

// Whether the queen in row `row` is safe from the queens above it.
bool safe(const board& b, int row) {
  const int col = b[row];
  for (int i = 0; i < row; ++i) {
    const int d = row - i;
    if (b[i] == col || b[i] == col - d || b[i] == col + d) {
      return false;
    }
  }
  return true;
}

long seq(int n, int row, board b) {
  if (row == n) {
    return 1;
  }
  long total = 0;
  for (int col = 0; col < n; ++col) {
    board next = b;
    next[row] = static_cast<signed char>(col);
    if (safe(next, row)) {
      total += seq(n, row + 1, next);
    }
  }
  return total;
}

// The safe columns of row `row`: the children BOTS would spawn.
struct children {
  std::array<board, 32> boards;
  int count = 0;
};

children safe_children(int n, int row, const board& b) {
  children c;
  for (int col = 0; col < n; ++col) {
    board next = b;
    next[row] = static_cast<signed char>(col);
    if (safe(next, row)) {
      c.boards[c.count++] = next;
    }
  }
  return c;
}

long fjord_row(int n, int row, const board& b);

// Children [lo, hi), split in halves.
long fjord_children(int n, int row, const children& c, int lo, int hi) {
  if (hi - lo == 1) {
    return fjord_row(n, row + 1, c.boards[lo]);
  }
  const int mid = lo + (hi - lo) / 2;
  auto [x, y] = fjord::join([&] { return fjord_children(n, row, c, lo, mid); },
                            [&] { return fjord_children(n, row, c, mid, hi); });
  return x + y;
}

long fjord_row(int n, int row, const board& b) {
  if (row == n) {
    return 1;
  }
  const children c = safe_children(n, row, b);
  return c.count == 0 ? 0 : fjord_children(n, row, c, 0, c.count);
}

// One child per safe placement, as BOTS spawns them (fjord or oneTBB group).
template <class Group>
long group_row(int n, int row, const board& b) {
  if (row == n) {
    return 1;
  }
  std::array<long, 32> counts{};
  Group g;
  for (int col = 0; col < n; ++col) {
    board next = b;
    next[row] = static_cast<signed char>(col);
    if (safe(next, row)) {
      g.run([&counts, next, n, row, col] { counts[col] = group_row<Group>(n, row + 1, next); });
    }
  }
  g.wait();
  long total = 0;
  for (int col = 0; col < n; ++col) {
    total += counts[col];
  }
  return total;
}

// Solutions for n = 1..16 (OEIS A000170), to check every round.
long known_solutions(int n) {
  static constexpr long table[] = {1,   0,   0,    2,     10,    4,      40,      92,
                                   352, 724, 2680, 14200, 73712, 365596, 2279184, 14772512};
  if (n < 1 || n > 16) {
    std::fprintf(stderr, "--size must be 1..16 queens, got %d\n", n);
    std::exit(2);
  }
  return table[n - 1];
}

// The number of tasks BOTS would create: safe placements, the root excluded.
long safe_placements(int n, int row, board b) {
  if (row == n) {
    return 0;
  }
  long total = 0;
  for (int col = 0; col < n; ++col) {
    b[row] = static_cast<signed char>(col);
    if (safe(b, row)) {
      total += 1 + safe_placements(n, row + 1, b);
    }
  }
  return total;
}

}  // namespace

int main(int argc, char** argv) {
  auto a = bench::args::parse(argc, argv);
  const int n = a.size > 0 ? static_cast<int>(a.size) : 12;
  const long expected = known_solutions(n);
  const double tasks = static_cast<double>(safe_placements(n, 0, board{}));
  auto timed = [&](auto&& compute) {
    return [&, compute] {
      const auto start = bench::clock::now();
      const long got = compute();
      const double ms = bench::since_ms(start);
      bench::check("nqueens", got, expected);
      return ms;
    };
  };
  if (a.impl == "sequential") {
    bench::run_rounds(a, "ms", tasks, timed([&] { return seq(n, 0, board{}); }));
  } else if (a.impl == "fjord" || a.impl == "fjord-task-group") {
    fjord::pool pool(
        fjord::pool_options{.workers = static_cast<std::size_t>(a.threads), .callers_join = false});
    if (a.impl == "fjord") {
      bench::run_rounds(a, "ms", tasks,
                        timed([&] { return pool.call([&] { return fjord_row(n, 0, board{}); }); }));
    } else {
      bench::run_rounds(
          a, "ms", tasks, timed([&] {
            return pool.call([&] { return group_row<fjord::task_group>(n, 0, board{}); });
          }));
    }
#ifdef BENCH_HAVE_TBB
  } else if (a.impl == "onetbb") {
    tbb::global_control gc(tbb::global_control::max_allowed_parallelism, a.threads);
    tbb::task_arena arena(a.threads);
    bench::run_rounds(
        a, "ms", tasks, timed([&] {
          return arena.execute([&] { return group_row<tbb::task_group>(n, 0, board{}); });
        }));
#endif
  } else {
    bench::unknown_impl(a.impl);
  }
}
