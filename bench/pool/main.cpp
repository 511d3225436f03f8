// The pool features of issue 15, measured (`--bench NAME`):
//
// mixed_io_compute: the Eff_ThreadPool seed's benchmark_IO_Cal shape. A
//   compute task finds the primes below 1,000 into a vector; an IO task
//   sleeps 10 ms, posted at low priority (the seed's commitWithPriority(-10)).
//   --size compute tasks and size/100 IO tasks, one IO task after every 100
//   compute tasks, on 2 workers; the figure is the makespan in ms. `ideal`
//   runs the compute tasks alone (the sleeps costing nothing).
//   `block_in_place-over-ideal` runs an ideal round and a block_in_place
//   round back to back (in turn first) and reports their ratio: the noise
//   of a shared host moves both alike.
// priority_latency: 2 workers busy with a backlog of --size 50 us jobs; a
//   job posted every ms; the figure is the p99 of post-to-start in us (p50
//   beside it). `high-over-low` is the shape (low backlog, high
//   samples), `high-over-normal` the same over normal work, and
//   `normal-over-normal` what a pool without priorities gives (the samples
//   wait behind the backlog, which is then cut short).
// scale_idle: a pool of 1..--threads workers with a 100 ms idle timeout
//   grows under a burst of blocking jobs; the figure is the ms from the end
//   of the burst until only min_workers run. scale_idle_cpu: the percent of
//   a core that pool uses over the next second, idle.
#include <sys/resource.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include "common/harness.hpp"
#include "common/primes.hpp"
#include "fjord/block_in_place.hpp"
#include "fjord/pool.hpp"
#include "fjord/priority.hpp"

namespace {

using namespace std::chrono_literals;

double mixed_round(const std::string& impl, long compute_tasks) {
  fjord::pool_options o{.workers = 2};
  if (impl == "fjord-replace") {
    o.replace_blocked_after = 1ms;
  }
  fjord::pool pool(o);
  const long io_tasks = impl == "ideal" ? 0 : compute_tasks / 100;
  std::atomic<long> primes{0};
  std::atomic<long> slept{0};
  const auto start = bench::clock::now();
  long posted_io = 0;
  for (long i = 0; i < compute_tasks; ++i) {
    pool.post(
        [&primes] { primes.fetch_add(bench::primes_below_1000(), std::memory_order_relaxed); });
    if ((i + 1) % 100 == 0 && posted_io < io_tasks) {
      ++posted_io;
      if (impl == "fjord-block_in_place") {
        pool.post(fjord::priority::low, [&slept] {
          fjord::block_in_place([] { std::this_thread::sleep_for(10ms); });
          slept.fetch_add(1, std::memory_order_relaxed);
        });
      } else {
        pool.post(fjord::priority::low, [&slept] {
          std::this_thread::sleep_for(10ms);
          slept.fetch_add(1, std::memory_order_relaxed);
        });
      }
    }
  }
  pool.wait_idle();
  const double ms = bench::since_ms(start);
  bench::check("primes", primes.load(), 168LL * compute_tasks);
  bench::check("io tasks", slept.load(), io_tasks);
  return ms;
}

void spin_for(std::chrono::nanoseconds d) {
  const auto end = std::chrono::steady_clock::now() + d;
  while (std::chrono::steady_clock::now() < end) {
  }
}

// p50 and p99 of post-to-start, in us, for one round.
std::pair<double, double> priority_round(const std::string& impl, long backlog) {
  fjord::pool pool(fjord::pool_options{.workers = 2});
  std::atomic<bool> stop{false};
  const fjord::priority backlog_level =
      impl == "high-over-low" ? fjord::priority::low : fjord::priority::normal;
  const fjord::priority level =
      impl == "normal-over-normal" ? fjord::priority::normal : fjord::priority::high;
  const bool waits_behind = impl == "normal-over-normal";
  for (long i = 0; i < backlog; ++i) {
    pool.post(backlog_level, [&stop] {
      if (!stop.load(std::memory_order_relaxed)) {
        spin_for(50us);
      }
    });
  }
  const int samples = waits_behind ? 100 : 1000;
  std::vector<double> latency(static_cast<std::size_t>(samples), -1);
  for (int i = 0; i < samples; ++i) {
    const auto posted = bench::clock::now();
    pool.post(level, [&latency, i, posted] {
      latency[static_cast<std::size_t>(i)] =
          std::chrono::duration<double, std::micro>(bench::clock::now() - posted).count();
    });
    std::this_thread::sleep_until(posted + 1ms);
    if (waits_behind && i == samples / 2) {
      stop.store(true);  // normal work waits behind the backlog: let it drain
    }
  }
  stop.store(true);
  pool.wait_idle();
  std::sort(latency.begin(), latency.end());
  if (latency.front() < 0) {
    bench::wrong_result("a sampled job did not run", 0, 1);
  }
  const auto at = [&](double q) {
    return latency[std::min(latency.size() - 1,
                            static_cast<std::size_t>(q * static_cast<double>(latency.size())))];
  };
  return {at(0.50), at(0.99)};
}

double process_cpu_seconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
         static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6;
}

constexpr auto scale_idle_timeout = 100ms;

// Grows a 1..max pool with a burst of blocking jobs; returns the ms until
// it is back at one worker, and (cpu) the percent of a core it then uses
// over a second of idleness.
double scale_round(std::size_t max, bool cpu) {
  fjord::pool pool(fjord::pool_options{
      .workers = 1, .min_workers = 1, .max_workers = max, .idle_timeout = scale_idle_timeout});
  for (int i = 0; i < 4 * static_cast<int>(max); ++i) {
    pool.post([] { std::this_thread::sleep_for(20ms); });
  }
  pool.wait_idle();
  const auto idle_since = bench::clock::now();
  if (pool.size() != max) {
    bench::wrong_result("workers after the burst", static_cast<long long>(pool.size()),
                        static_cast<long long>(max));
  }
  while (pool.stats().running_threads != 1) {
    std::this_thread::sleep_for(100us);
    if (bench::clock::now() - idle_since > 10s) {
      bench::wrong_result("running threads 10 s after the burst",
                          static_cast<long long>(pool.stats().running_threads), 1);
    }
  }
  const double back_ms = bench::since_ms(idle_since);
  if (!cpu) {
    return back_ms;
  }
  const double before = process_cpu_seconds();
  const auto start = bench::clock::now();
  std::this_thread::sleep_for(1s);
  return 100.0 * (process_cpu_seconds() - before) / (bench::since_ms(start) / 1000.0);
}

}  // namespace

int main(int argc, char** argv) {
  const bench::named_args n = bench::parse_named(argc, argv);
  const bench::args& a = n.a;
  if (n.name == "mixed_io_compute") {
    if (a.impl != "ideal" && a.impl != "fjord-fixed" && a.impl != "fjord-replace" &&
        a.impl != "fjord-block_in_place" && a.impl != "block_in_place-over-ideal") {
      bench::unknown_impl(a.impl);
    }
    const long tasks = a.size > 0 ? a.size : 100'000;
    const long io_tasks = tasks / 100;
    if (a.impl == "block_in_place-over-ideal") {
      // The goal's ratio from rounds run back to back in one process, so
      // that both halves of a pair see the machine in the same state.
      bool ideal_first = true;
      bench::run_rounds(a, "x ideal", static_cast<double>(tasks + io_tasks), [&] {
        double ideal = 0;
        double blocking = 0;
        if (ideal_first) {
          ideal = mixed_round("ideal", tasks);
          blocking = mixed_round("fjord-block_in_place", tasks);
        } else {
          blocking = mixed_round("fjord-block_in_place", tasks);
          ideal = mixed_round("ideal", tasks);
        }
        ideal_first = !ideal_first;
        return blocking / ideal;
      });
      return 0;
    }
    bench::run_rounds(a, "ms", static_cast<double>(tasks + io_tasks),
                      [&] { return mixed_round(a.impl, tasks); });
  } else if (n.name == "priority_latency") {
    if (a.impl != "high-over-low" && a.impl != "high-over-normal" &&
        a.impl != "normal-over-normal") {
      bench::unknown_impl(a.impl);
    }
    const long backlog = a.size > 0 ? a.size : 100'000;
    static_cast<void>(priority_round(a.impl, 1000));  // warm-up
    std::vector<double> p99;
    std::vector<double> p50;
    for (int r = 0; r < a.rounds; ++r) {
      const auto [median, tail] = priority_round(a.impl, backlog);
      p50.push_back(median);
      p99.push_back(tail);
    }
    std::sort(p50.begin(), p50.end());
    std::vector<double> sorted = p99;
    std::sort(sorted.begin(), sorted.end());
    char extra[96];
    std::snprintf(extra, sizeof extra, ", \"p50_us\": %.4g, \"p99_us\": %.4g", p50[p50.size() / 2],
                  sorted[sorted.size() / 2]);
    bench::print_result("us", std::move(p99), static_cast<double>(backlog), extra);
  } else if (n.name == "scale_idle" || n.name == "scale_idle_cpu") {
    if (a.impl != "fjord") {
      bench::unknown_impl(a.impl);
    }
    const auto max = static_cast<std::size_t>(std::max(2, a.threads));
    bench::run_rounds(a, n.name == "scale_idle" ? "ms" : "% of a core", 0,
                      [&] { return scale_round(max, n.name == "scale_idle_cpu"); });
  } else {
    std::fprintf(stderr, "unknown --bench %s\n", n.name.c_str());
    return 2;
  }
  return 0;
}
