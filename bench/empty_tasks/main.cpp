// The Eff_ThreadPool seed: N empty tasks posted from one outside thread to a
// pool, then waited for. The figure is nanoseconds per task, from the first
// post to the end of the wait.
#include <atomic>
#include <future>
#include <mutex>
#include <vector>

#include "common/harness.hpp"
#include "empty_tasks/classic_pool.hpp"
#include "fjord/pool.hpp"
#include "fjord/task_group.hpp"

#ifdef BENCH_HAVE_TBB
#include <tbb/global_control.h>
#include <tbb/task_arena.h>
#include <tbb/task_group.h>
#endif

namespace {

// Counts finished tasks; the task that finishes the last one wakes main.
struct countdown {
  std::atomic<long> left;
  explicit countdown(long n) : left(n) {}
  void done() {
    if (left.fetch_sub(1, std::memory_order_acq_rel) == 1) {
      left.notify_one();
    }
  }
  void wait() {
    long v = left.load(std::memory_order_acquire);
    while (v != 0) {
      left.wait(v, std::memory_order_acquire);
      v = left.load(std::memory_order_acquire);
    }
  }
};

// Submits n empty tasks keeping every future, then get()s each; returns
// nanoseconds per task.
template <class Submit>
double submit_and_get(long n, Submit submit) {
  using future_t = decltype(submit());
  std::vector<future_t> futures;
  futures.reserve(static_cast<std::size_t>(n));
  const auto start = bench::clock::now();
  for (long i = 0; i < n; ++i) {
    futures.push_back(submit());
  }
  for (auto& f : futures) {
    f.get();
  }
  return bench::since_ms(start) * 1e6 / static_cast<double>(n);
}

}  // namespace

int main(int argc, char** argv) {
  auto a = bench::args::parse(argc, argv);
  const long n = a.size > 0 ? a.size : 5'000'000;
  auto per_task = [&](bench::clock::time_point start) {
    return bench::since_ms(start) * 1e6 / static_cast<double>(n);
  };
  const auto threads = static_cast<std::size_t>(a.threads);

  if (a.impl == "fjord-post") {
    fjord::pool pool(fjord::pool_options{.workers = threads});
    bench::run_rounds(a, "ns/task", static_cast<double>(n), [&] {
      countdown c(n);
      const auto start = bench::clock::now();
      for (long i = 0; i < n; ++i) {
        pool.post([&c] { c.done(); });
      }
      c.wait();
      return per_task(start);
    });
  } else if (a.impl == "fjord-task_group") {
    fjord::pool pool(fjord::pool_options{.workers = threads});
    bench::run_rounds(a, "ns/task", static_cast<double>(n), [&] {
      const auto start = bench::clock::now();
      fjord::task_group g(pool);
      for (long i = 0; i < n; ++i) {
        g.run([] {});
      }
      g.wait();
      return per_task(start);
    });
  } else if (a.impl == "fjord-submit") {
    fjord::pool pool(fjord::pool_options{.workers = threads});
    bench::run_rounds(a, "ns/task", static_cast<double>(n),
                      [&] { return submit_and_get(n, [&] { return pool.submit([] {}); }); });
  } else if (a.impl == "classic") {
    bench::classic_pool pool(a.threads);
    bench::run_rounds(a, "ns/task", static_cast<double>(n), [&] {
      std::mutex m;
      std::condition_variable cv;
      long left = n;
      const auto start = bench::clock::now();
      for (long i = 0; i < n; ++i) {
        pool.post([&] {
          std::lock_guard lock(m);
          if (--left == 0) {
            cv.notify_one();
          }
        });
      }
      std::unique_lock lock(m);
      cv.wait(lock, [&] { return left == 0; });
      return per_task(start);
    });
  } else if (a.impl == "classic-future") {
    bench::classic_pool pool(a.threads);
    bench::run_rounds(a, "ns/task", static_cast<double>(n),
                      [&] { return submit_and_get(n, [&] { return pool.submit([] {}); }); });
#ifdef BENCH_HAVE_TBB
  } else if (a.impl == "onetbb-task_group") {
    // Default arena: main plus threads-1 workers; main runs tasks in wait().
    tbb::global_control gc(tbb::global_control::max_allowed_parallelism, a.threads);
    bench::run_rounds(a, "ns/task", static_cast<double>(n), [&] {
      const auto start = bench::clock::now();
      tbb::task_group g;
      for (long i = 0; i < n; ++i) {
        g.run([] {});
      }
      g.wait();
      return per_task(start);
    });
  } else if (a.impl == "onetbb-enqueue") {
    // An arena of `threads` worker slots, none reserved for main.
    tbb::global_control gc(tbb::global_control::max_allowed_parallelism, a.threads + 1);
    tbb::task_arena arena(a.threads, 0);
    bench::run_rounds(a, "ns/task", static_cast<double>(n), [&] {
      countdown c(n);
      const auto start = bench::clock::now();
      for (long i = 0; i < n; ++i) {
        arena.enqueue([&c] { c.done(); });
      }
      c.wait();
      return per_task(start);
    });
  } else if (a.impl == "onetbb-future") {
    // The eff_commit shape on oneTBB, which has no submit-with-future: an
    // enqueued functor that fulfils a promise (one shared state per task,
    // as std::packaged_task gives the classic pool).
    struct fulfil {
      mutable std::promise<void> done;
      void operator()() const { done.set_value(); }
    };
    tbb::global_control gc(tbb::global_control::max_allowed_parallelism, a.threads + 1);
    tbb::task_arena arena(a.threads, 0);
    bench::run_rounds(a, "ns/task", static_cast<double>(n), [&] {
      return submit_and_get(n, [&] {
        fulfil f;
        std::future<void> result = f.done.get_future();
        arena.enqueue(std::move(f));
        return result;
      });
    });
#endif
  } else {
    bench::unknown_impl(a.impl);
  }
}
