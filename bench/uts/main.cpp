// UTS, the Unbalanced Tree Search benchmark (Olivier et al., "UTS: An
// Unbalanced Tree Search Benchmark", LCPC 2006), binomial tree T3: the root
// has b0 = 2000 children, every other node has m = 8 children with
// probability q = 0.124875 and none otherwise, so subtree sizes vary wildly
// (expected 1/(1-qm) = 1000 nodes, depth up to ~1600). Nodes are named by
// SHA-1 digests as the reference code does, so the node count of T3 with
// seed 42 is the published 4,112,897 and every round is checked against it.
//   --impl sequential | fjord | fjord-task-group | onetbb   --size b0 (default 2000)
// fjord and rayon split a node's children in halves with join;
// fjord-task-group and oneTBB run one child per task, as BOTS-style UTS does.
#include <cstdlib>
#include <vector>

#include "common/harness.hpp"
#include "common/sha1.hpp"

#include "fjord/join.hpp"
#include "fjord/pool.hpp"
#include "fjord/task_group.hpp"

#ifdef BENCH_HAVE_TBB
#include <tbb/global_control.h>
#include <tbb/task_arena.h>
#include <tbb/task_group.h>
#endif

namespace {

constexpr double non_leaf_probability = 0.124875;
constexpr int non_leaf_children = 8;
constexpr std::uint32_t seed = 42;
int root_children = 2000;

struct node {
  bench::sha1_digest state;
  int height;
};

int child_count(const node& n) {
  if (n.height == 0) {
    return root_children;
  }
  return bench::uts_probability(n.state) < non_leaf_probability ? non_leaf_children : 0;
}

node child(const node& n, int i) {
  return {bench::uts_child_state(n.state, static_cast<std::uint32_t>(i)), n.height + 1};
}

long seq(const node& n) {
  long total = 1;
  const int k = child_count(n);
  for (int i = 0; i < k; ++i) {
    total += seq(child(n, i));
  }
  return total;
}

long fjord_node(const node& n);

long fjord_children(const node& n, int lo, int hi) {
  if (hi - lo == 1) {
    return fjord_node(child(n, lo));
  }
  const int mid = lo + (hi - lo) / 2;
  auto [x, y] = fjord::join([&] { return fjord_children(n, lo, mid); },
                            [&] { return fjord_children(n, mid, hi); });
  return x + y;
}

long fjord_node(const node& n) {
  const int k = child_count(n);
  return 1 + (k == 0 ? 0 : fjord_children(n, 0, k));
}

// One task per child; counts on the stack except at the root.
template <class Group>
long group_node(const node& n) {
  const int k = child_count(n);
  if (k == 0) {
    return 1;
  }
  long small[non_leaf_children] = {};
  std::vector<long> large(k > non_leaf_children ? k : 0);
  long* counts = k > non_leaf_children ? large.data() : small;
  {
    Group g;
    for (int i = 0; i < k; ++i) {
      g.run([&n, counts, i] { counts[i] = group_node<Group>(child(n, i)); });
    }
    g.wait();
  }
  long total = 1;
  for (int i = 0; i < k; ++i) {
    total += counts[i];
  }
  return total;
}

}  // namespace

int main(int argc, char** argv) {
  auto a = bench::args::parse(argc, argv);
  if (a.size > 0) {
    root_children = static_cast<int>(a.size);
  }
  const node root{bench::uts_root_state(seed), 0};
  // T3's published size; other root sizes are checked against the sequential count.
  const long expected = root_children == 2000 ? 4112897 : seq(root);
  auto timed = [&](auto&& compute) {
    return [&, compute] {
      const auto start = bench::clock::now();
      const long got = compute();
      const double ms = bench::since_ms(start);
      bench::check("uts", got, expected);
      return ms;
    };
  };
  const auto tasks = static_cast<double>(expected - 1);
  if (a.impl == "sequential") {
    bench::run_rounds(a, "ms", tasks, timed([&] { return seq(root); }));
  } else if (a.impl == "fjord" || a.impl == "fjord-task-group") {
    fjord::pool pool(
        fjord::pool_options{.workers = static_cast<std::size_t>(a.threads), .callers_join = false});
    if (a.impl == "fjord") {
      bench::run_rounds(a, "ms", tasks,
                        timed([&] { return pool.call([&] { return fjord_node(root); }); }));
    } else {
      bench::run_rounds(a, "ms", tasks, timed([&] {
                          return pool.call([&] { return group_node<fjord::task_group>(root); });
                        }));
    }
#ifdef BENCH_HAVE_TBB
  } else if (a.impl == "onetbb") {
    tbb::global_control gc(tbb::global_control::max_allowed_parallelism, a.threads);
    tbb::task_arena arena(a.threads);
    bench::run_rounds(a, "ms", tasks, timed([&] {
                        return arena.execute([&] { return group_node<tbb::task_group>(root); });
                      }));
#endif
  } else {
    bench::unknown_impl(a.impl);
  }
}
