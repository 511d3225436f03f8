// The async_simple seed's two coroutine benchmarks:
//   chain:       co_return n + co_await chain(n - 1), depth 1000 (1,001 frames)
//   collect_all: 5000 chains of depth 50 awaited together (255,000 frames)
// --impl reference: the plain lazy task with malloc'd frames
// (reference_task.hpp), run inline on one thread. --impl cppcoro and
// --impl async_simple exist when those header libraries were found at build
// time (FJORD_BENCH_CPPCORO_INCLUDE, FJORD_BENCH_ASYNC_SIMPLE_INCLUDE); they
// run as the seed ran them: sync_wait / syncAwait, when_all / collectAllPara
// with no executor (children in place). The compiler matters as much as the
// library here, so bench/run builds this with g++ and clang.
// Figures: microseconds per whole chain; milliseconds per collect_all.
//
// Two shapes of each. The recursive form (one coroutine function calling
// itself, depth from --size) is the suite's first one. The seed's own form
// (--impl NAME-seed) is the code seed 004 publishes: lazy_fn<Task, N>, a
// distinct coroutine type per level, a starter coroutine around the chain,
// and collectAll of 5000 lazy_fn<Task, 50> chains; its depths are fixed at
// compile time (1000 and 50), as in the seed. The forms differ in what the
// compiler can do: 1,001 distinct coroutines do not stay in the instruction
// cache as one function does, and clang can elide the frames of distinct
// inlined levels.
#include <atomic>
#include <functional>
#include <memory>
#include <thread>
#include <vector>

#include "common/harness.hpp"
#include "coro/reference_task.hpp"
#include "fjord/pool.hpp"
#include "fjord/sync_wait.hpp"
#include "fjord/task.hpp"
#include "fjord/when_all.hpp"

#if defined(BENCH_HAVE_CPPCORO) && __has_include(<cppcoro/task.hpp>)
#include <cppcoro/sync_wait.hpp>
#include <cppcoro/task.hpp>
#include <cppcoro/when_all.hpp>
#define BENCH_CPPCORO 1
#endif
#if defined(BENCH_HAVE_ASYNC_SIMPLE) && __has_include(<async_simple/coro/Lazy.h>)
#include <async_simple/coro/Collect.h>
#include <async_simple/coro/Lazy.h>
#include <async_simple/coro/SyncAwait.h>
#define BENCH_ASYNC_SIMPLE 1
#endif

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

// fjord: the same two programs with fjord::task. "fjord" runs them as the
// seed did (sync_wait on the calling thread, when_all's children in turn);
// "fjord-pool" runs them on a pool of --threads workers, where when_all
// offers its children to the other workers.
fjord::task<long> fjord_chain(int n) {
  if (n == 0) {
    co_return 1;
  }
  co_return n + co_await fjord_chain(n - 1);
}

fjord::task<long> fjord_collect_all(int chains, int depth) {
  std::vector<fjord::task<long>> tasks;
  tasks.reserve(static_cast<std::size_t>(chains));
  for (int i = 0; i < chains; ++i) {
    tasks.push_back(fjord_chain(depth));
  }
  long sum = 0;
  for (long v : co_await fjord::when_all(std::move(tasks))) {
    sum += v;
  }
  co_return sum;
}

fjord::task<long> fjord_chains_on(fjord::pool& p, int count, int depth) {
  co_await p.schedule();
  long sum = 0;
  for (int i = 0; i < count; ++i) {
    sum += co_await fjord_chain(depth);
  }
  co_return sum;
}

fjord::task<long> fjord_collect_on(fjord::pool& p, int chains, int depth) {
  co_await p.schedule();
  co_return co_await fjord_collect_all(chains, depth);
}

#ifdef BENCH_CPPCORO
cppcoro::task<long> cppcoro_chain(int n) {
  if (n == 0) {
    co_return 1;
  }
  co_return n + co_await cppcoro_chain(n - 1);
}

long cppcoro_collect(int chains, int depth) {
  std::vector<cppcoro::task<long>> tasks;
  for (int i = 0; i < chains; ++i) {
    tasks.push_back(cppcoro_chain(depth));
  }
  long sum = 0;
  for (long v : cppcoro::sync_wait(cppcoro::when_all(std::move(tasks)))) {
    sum += v;
  }
  return sum;
}
#endif

#ifdef BENCH_ASYNC_SIMPLE
async_simple::coro::Lazy<long> async_simple_chain(int n) {
  if (n == 0) {
    co_return 1;
  }
  co_return n + co_await async_simple_chain(n - 1);
}

long async_simple_collect(int chains, int depth) {
  std::vector<async_simple::coro::Lazy<long>> tasks;
  for (int i = 0; i < chains; ++i) {
    tasks.push_back(async_simple_chain(depth));
  }
  long sum = 0;
  for (auto& t : async_simple::coro::syncAwait(async_simple::coro::collectAll(std::move(tasks)))) {
    sum += t.value();
  }
  return sum;
}
#endif

// The seed's form (seed 004, "Call Chain" and "CollectAll", as published:
// LazyType<int>, N + co_await of the next level).
template <template <class> class Task, int N>
struct lazy_fn {
  Task<int> operator()() { co_return N + co_await lazy_fn<Task, N - 1>()(); }
};

template <template <class> class Task>
struct lazy_fn<Task, 0> {
  Task<int> operator()() { co_return 1; }
};

constexpr int seed_chain_depth = 1000;
constexpr int seed_collect_chains = 5000;
constexpr int seed_collect_depth = 50;

// The seed's chain_starter.
template <template <class> class Task>
Task<int> seed_chain_starter() {
  co_return co_await lazy_fn<Task, seed_chain_depth>()();
}

// The seed's collectAllStarter's vector of lazies.
template <template <class> class Task>
std::vector<Task<int>> seed_lazies() {
  std::vector<Task<int>> lazies;
  for (int i = 0; i < seed_collect_chains; i++) {
    lazies.push_back(lazy_fn<Task, seed_collect_depth>()());
  }
  return lazies;
}

// The plain lazy task has no collectAll: its children in turn.
bench::reference_task<long> reference_seed_collect() {
  std::vector<bench::reference_task<int>> lazies = seed_lazies<bench::reference_task>();
  long sum = 0;
  for (auto& t : lazies) {
    sum += co_await t;
  }
  co_return sum;
}

fjord::task<long> fjord_seed_collect() {
  long sum = 0;
  for (int v : co_await fjord::when_all(seed_lazies<fjord::task>())) {
    sum += v;
  }
  co_return sum;
}

fjord::task<long> fjord_seed_chains_on(fjord::pool& p, int count) {
  co_await p.schedule();
  long sum = 0;
  for (int i = 0; i < count; ++i) {
    sum += co_await seed_chain_starter<fjord::task>();
  }
  co_return sum;
}

fjord::task<long> fjord_seed_collect_on(fjord::pool& p) {
  co_await p.schedule();
  co_return co_await fjord_seed_collect();
}

#ifdef BENCH_CPPCORO
long cppcoro_seed_collect() {
  long sum = 0;
  for (int v : cppcoro::sync_wait(cppcoro::when_all(seed_lazies<cppcoro::task>()))) {
    sum += v;
  }
  return sum;
}
#endif

#ifdef BENCH_ASYNC_SIMPLE
long async_simple_seed_collect() {
  long sum = 0;
  for (auto& t : async_simple::coro::syncAwait(
           async_simple::coro::collectAllPara(seed_lazies<async_simple::coro::Lazy>()))) {
    sum += t.value();
  }
  return sum;
}
#endif

// A thread that runs one function when asked and hands back its result.
class second_thread {
 public:
  second_thread() : thread_([this] { loop(); }) {}
  second_thread(const second_thread&) = delete;
  second_thread& operator=(const second_thread&) = delete;
  ~second_thread() {
    start({});
    thread_.join();
  }
  void start(std::function<long()> f) {
    fn_ = std::move(f);
    state_.store(1, std::memory_order_release);
  }
  long finish() {
    while (state_.load(std::memory_order_acquire) != 2) {
      std::this_thread::yield();
    }
    state_.store(0, std::memory_order_relaxed);
    return result_;
  }

 private:
  void loop() {
    while (true) {
      while (state_.load(std::memory_order_acquire) != 1) {
        std::this_thread::yield();
      }
      if (!fn_) {
        return;
      }
      result_ = fn_();
      state_.store(2, std::memory_order_release);
    }
  }

  std::atomic<int> state_{0};  // 0 idle, 1 asked, 2 done
  std::function<long()> fn_;
  long result_ = 0;
  std::thread thread_;
};

long chain_value(int n) {
  return 1 + static_cast<long>(n) * (n + 1) / 2;
}

}  // namespace

int main(int argc, char** argv) {
  auto a = bench::args::parse(argc, argv);
  const bool is_collect = a.grain > 0;  // --grain = chains in collect_all mode
  constexpr int per_round = 1000;       // chains per timed round in chain mode
  // run_chain runs per_round chains and returns the sum of their values.
  std::function<long(int)> run_chain;
  std::function<long(int, int)> run_collect;
  std::unique_ptr<fjord::pool> pool;
  std::unique_ptr<second_thread> helper;
  if (a.impl == "reference") {
    run_chain = [](int d) {
      long sum = 0;
      for (int i = 0; i < per_round; ++i) {
        sum += chain(d).run();
      }
      return sum;
    };
    run_collect = [](int c, int d) { return collect_all(c, d).run(); };
  } else if (a.impl == "fjord") {
    run_chain = [](int d) {
      long sum = 0;
      for (int i = 0; i < per_round; ++i) {
        sum += fjord::sync_wait(fjord_chain(d));
      }
      return sum;
    };
    run_collect = [](int c, int d) { return fjord::sync_wait(fjord_collect_all(c, d)); };
  } else if (a.impl == "fjord-twice") {
    // The machine's ceiling for two workers: two inline runs at once on two
    // plain threads, no scheduler, nothing shared; each does half the work,
    // so a round is one collect's (or chain batch's) work. The helper thread
    // lives across rounds so its frame cache is as warm as a worker's.
    // fjord-pool on 2 workers can at best match this figure.
    helper = std::make_unique<second_thread>();
    second_thread& h = *helper;
    auto twice = [&h](std::function<long()> run) {
      h.start(run);
      const long mine = run();
      const long other = h.finish();
      return mine == other ? mine * 2 : -1;  // -1 fails the caller's check
    };
    run_chain = [twice](int d) {
      return twice([d] {
        long sum = 0;
        for (int i = 0; i < per_round / 2; ++i) {
          sum += fjord::sync_wait(fjord_chain(d));
        }
        return sum;
      });
    };
    run_collect = [twice](int c, int d) {
      return twice([c, d] { return fjord::sync_wait(fjord_collect_all(c / 2, d)); });
    };
  } else if (a.impl == "fjord-pool") {
    fjord::pool_options options;
    options.workers = static_cast<std::size_t>(a.threads);
    pool = std::make_unique<fjord::pool>(options);
    fjord::pool& p = *pool;
    run_chain = [&p](int d) { return fjord::sync_wait(fjord_chains_on(p, per_round, d)); };
    run_collect = [&p](int c, int d) { return fjord::sync_wait(fjord_collect_on(p, c, d)); };
#ifdef BENCH_CPPCORO
  } else if (a.impl == "cppcoro") {
    run_chain = [](int d) {
      long sum = 0;
      for (int i = 0; i < per_round; ++i) {
        sum += cppcoro::sync_wait(cppcoro_chain(d));
      }
      return sum;
    };
    run_collect = cppcoro_collect;
#endif
#ifdef BENCH_ASYNC_SIMPLE
  } else if (a.impl == "async_simple") {
    run_chain = [](int d) {
      long sum = 0;
      for (int i = 0; i < per_round; ++i) {
        sum += async_simple::coro::syncAwait(async_simple_chain(d));
      }
      return sum;
    };
    run_collect = async_simple_collect;
#endif
  } else if (a.impl == "reference-seed") {
    run_chain = [](int) {
      long sum = 0;
      for (int i = 0; i < per_round; ++i) {
        sum += seed_chain_starter<bench::reference_task>().run();
      }
      return sum;
    };
    run_collect = [](int, int) { return reference_seed_collect().run(); };
  } else if (a.impl == "fjord-seed") {
    run_chain = [](int) {
      long sum = 0;
      for (int i = 0; i < per_round; ++i) {
        sum += fjord::sync_wait(seed_chain_starter<fjord::task>());
      }
      return sum;
    };
    run_collect = [](int, int) { return fjord::sync_wait(fjord_seed_collect()); };
  } else if (a.impl == "fjord-pool-seed") {
    fjord::pool_options options;
    options.workers = static_cast<std::size_t>(a.threads);
    pool = std::make_unique<fjord::pool>(options);
    fjord::pool& p = *pool;
    run_chain = [&p](int) { return fjord::sync_wait(fjord_seed_chains_on(p, per_round)); };
    run_collect = [&p](int, int) { return fjord::sync_wait(fjord_seed_collect_on(p)); };
#ifdef BENCH_CPPCORO
  } else if (a.impl == "cppcoro-seed") {
    run_chain = [](int) {
      long sum = 0;
      for (int i = 0; i < per_round; ++i) {
        sum += cppcoro::sync_wait(seed_chain_starter<cppcoro::task>());
      }
      return sum;
    };
    run_collect = [](int, int) { return cppcoro_seed_collect(); };
#endif
#ifdef BENCH_ASYNC_SIMPLE
  } else if (a.impl == "async_simple-seed") {
    run_chain = [](int) {
      long sum = 0;
      for (int i = 0; i < per_round; ++i) {
        sum += async_simple::coro::syncAwait(seed_chain_starter<async_simple::coro::Lazy>());
      }
      return sum;
    };
    run_collect = [](int, int) { return async_simple_seed_collect(); };
#endif
  } else {
    std::fprintf(stderr, "%s was not found when this program was built (see bench/README.md)\n",
                 a.impl.c_str());
    return 2;
  }
  const bool seed_form = a.impl.size() > 5 && a.impl.compare(a.impl.size() - 5, 5, "-seed") == 0;
  if (seed_form && (is_collect ? (a.grain != seed_collect_chains ||
                                  (a.size != 0 && a.size != seed_collect_depth))
                               : (a.size != 0 && a.size != seed_chain_depth))) {
    std::fprintf(
        stderr,
        "%s runs the seed's fixed sizes: chain depth %d, or --grain %d chains of depth %d\n",
        a.impl.c_str(), seed_chain_depth, seed_collect_chains, seed_collect_depth);
    return 2;
  }
  if (!is_collect) {
    const int depth = a.size > 0 ? static_cast<int>(a.size) : 1000;
    bench::run_rounds(a, "us/chain", depth + 1, [&] {
      const auto start = bench::clock::now();
      const long sum = run_chain(depth);
      const double us = bench::since_ms(start) * 1000.0 / per_round;
      bench::check("coro_chain", sum, per_round * chain_value(depth));
      return us;
    });
  } else {
    const int depth = a.size > 0 ? static_cast<int>(a.size) : 50;
    const int chains = static_cast<int>(a.grain);
    bench::run_rounds(a, "ms/collect", static_cast<double>(chains) * (depth + 1), [&] {
      const auto start = bench::clock::now();
      const long sum = run_collect(chains, depth);
      const double ms = bench::since_ms(start);
      bench::check("coro_collect_all", sum, chains * chain_value(depth));
      return ms;
    });
  }
}
