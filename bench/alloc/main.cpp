// alloc_heavy (issue 14): an allocator under load from many tasks, and
// blocks freed by another thread than made them.
//
// bench_alloc --bench NAME --impl glibc|tbbmalloc|fjord|mimalloc|jemalloc --threads N --size K
//   tasks               K (10^6) iterations of a fjord::parallel_for on N workers;
//                       each builds and destroys a std::vector<int> of 16..63
//                       push_backs and a std::map<int, int> of 8..23 nodes with
//                       the allocator under test; ms a round
//   producer_consumer   one thread allocates K blocks of 16..511 bytes and
//                       hands them through a ring to another that frees them
//                       (the two pinned to CPUs 0 and 1); ms
// Besides the harness's figures it reports the resident set before the
// first round and after the last (everything freed), in KiB.
//
// mimalloc and jemalloc replace malloc for the whole process when linked,
// so they come from their own binaries (bench_alloc_mimalloc and
// bench_alloc_jemalloc, this file built with BENCH_MALLOC set), where the
// allocator under test is mimalloc's mi_stl_allocator, and std::allocator
// over jemalloc's malloc.
#include <algorithm>
#include <array>
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <pthread.h>
#include <sched.h>

#include "common/harness.hpp"
#include "fjord/execution.hpp"
#include "fjord/parallel_for.hpp"
#include "fjord/pool.hpp"
#include "fjord/scalable_allocator.hpp"

#ifdef BENCH_HAVE_TBB
#include <tbb/scalable_allocator.h>
#endif
#ifdef BENCH_HAVE_MIMALLOC_API
#include <mimalloc.h>
#endif

namespace {

template <template <class> class Alloc>
long long one_task(long i) {
  std::vector<int, Alloc<int>> v;
  const int pushes = 16 + static_cast<int>(i % 48);
  for (int k = 0; k < pushes; ++k) {
    v.push_back(k);
  }
  std::map<int, int, std::less<>, Alloc<std::pair<const int, int>>> m;
  const int nodes = 8 + static_cast<int>(i % 16);
  for (int k = 0; k < nodes; ++k) {
    m.emplace(k * 7919 % 104729, k);
  }
  return v.back() + static_cast<long long>(m.size());
}

long long expected_tasks_sum(long n) {
  long long s = 0;
  for (long i = 0; i < n; ++i) {
    s += 15 + i % 48 + 8 + i % 16;
  }
  return s;
}

template <template <class> class Alloc>
double run_tasks_round(fjord::pool& p, long n, long long want) {
  const auto start = bench::clock::now();
  const long long got = fjord::parallel_reduce(
      fjord::par.on(p), 0L, n, 0LL,
      [](long b, long e, long long acc) {
        for (long i = b; i < e; ++i) {
          acc += one_task<Alloc>(i);
        }
        return acc;
      },
      std::plus<>());
  const double ms = bench::since_ms(start);
  bench::check("alloc tasks", got, want);
  return ms;
}

// A single-producer single-consumer ring of block pointers (Lamport's
// queue with cached indices); the benchmark's plumbing, not under test.
class block_ring {
 public:
  bool push(char* p) {
    const std::size_t t = tail_.load(std::memory_order_relaxed);
    if (t - head_cache_ == slots.size()) {
      head_cache_ = head_.load(std::memory_order_acquire);
      if (t - head_cache_ == slots.size()) {
        return false;
      }
    }
    slots[t % slots.size()] = p;
    tail_.store(t + 1, std::memory_order_release);
    return true;
  }
  char* pop() {
    const std::size_t h = head_.load(std::memory_order_relaxed);
    if (h == tail_cache_) {
      tail_cache_ = tail_.load(std::memory_order_acquire);
      if (h == tail_cache_) {
        return nullptr;
      }
    }
    char* p = slots[h % slots.size()];
    head_.store(h + 1, std::memory_order_release);
    return p;
  }

 private:
  std::array<char*, 4096> slots{};
  alignas(64) std::atomic<std::size_t> head_{0};
  std::size_t tail_cache_ = 0;
  alignas(64) std::atomic<std::size_t> tail_{0};
  std::size_t head_cache_ = 0;
};

// Spin briefly, then yield: a side that finds the ring empty or full
// usually has its answer within a few hundred nanoseconds, and a yield at
// once would turn every such wait into a system call.
void wait_a_little(int& idle) {
  if (++idle < 256) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
  } else {
    std::this_thread::yield();
  }
}

// Each side of the producer/consumer pair on a CPU of its own, so that the
// figure is the allocator's and not where the scheduler put two threads.
void pin_to_cpu(int cpu) {
  if (std::thread::hardware_concurrency() < 2) {
    return;
  }
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  pthread_setaffinity_np(pthread_self(), sizeof set, &set);
}

template <template <class> class Alloc>
double run_producer_consumer_round(long n) {
  block_ring ring;
  long long checksum = 0;
  const auto start = bench::clock::now();
  std::thread consumer([&] {
    pin_to_cpu(1);
    Alloc<char> a;
    long long sum = 0;
    int idle = 0;
    for (long got = 0; got < n;) {
      char* p = ring.pop();
      if (p == nullptr) {
        wait_a_little(idle);
        continue;
      }
      idle = 0;
      std::uint32_t size = 0;
      std::memcpy(&size, p, sizeof size);
      sum += static_cast<unsigned char>(p[size - 1]);
      a.deallocate(p, size);
      ++got;
    }
    checksum = sum;
  });
  std::thread producer([&] {
    pin_to_cpu(0);
    Alloc<char> a;
    for (long i = 0; i < n; ++i) {
      const auto size = static_cast<std::uint32_t>(16 + (i * 37) % 496);
      char* p = a.allocate(size);
      std::memcpy(p, &size, sizeof size);
      p[size - 1] = static_cast<char>(i);
      for (int idle = 0; !ring.push(p);) {
        wait_a_little(idle);
      }
    }
  });
  producer.join();
  consumer.join();
  const double ms = bench::since_ms(start);
  long long want = 0;
  for (long i = 0; i < n; ++i) {
    want += static_cast<unsigned char>(static_cast<char>(i));
  }
  bench::check("alloc producer_consumer", checksum, want);
  return ms;
}

template <template <class> class Alloc>
void run(const std::string& name, const bench::args& a) {
  std::function<double()> round;
  std::unique_ptr<fjord::pool> pool;
  double tasks = 0;
  if (name == "tasks") {
    const long n = a.size > 0 ? a.size : 1'000'000;
    pool = std::make_unique<fjord::pool>(
        fjord::pool_options{.workers = static_cast<std::size_t>(a.threads), .callers_join = false});
    const long long want = expected_tasks_sum(n);
    round = [&, n, want] { return run_tasks_round<Alloc>(*pool, n, want); };
    tasks = static_cast<double>(n);
  } else if (name == "producer_consumer") {
    const long n = a.size > 0 ? a.size : 4'000'000;
    round = [n] { return run_producer_consumer_round<Alloc>(n); };
    tasks = static_cast<double>(n);
  } else {
    std::fprintf(stderr, "unknown --bench %s\n", name.c_str());
    std::exit(2);
  }
  const long rss_before = bench::status_kib("VmRSS:");
  round();  // warm-up
  std::vector<double> v;
  for (int r = 0; r < a.rounds; ++r) {
    v.push_back(round());
  }
  const long rss_after = bench::status_kib("VmRSS:");
  bench::print_result("ms", std::move(v), tasks,
                      ", \"rss_before_kib\": " + std::to_string(rss_before) +
                          ", \"rss_after_kib\": " + std::to_string(rss_after));
}

template <class T>
using fjord_alloc = fjord::scalable_allocator<T>;
template <class T>
using std_alloc = std::allocator<T>;
#ifdef BENCH_HAVE_TBB
template <class T>
using tbb_alloc = tbb::scalable_allocator<T>;
#endif
#ifdef BENCH_HAVE_MIMALLOC_API
// mimalloc's own STL allocator: mi_malloc and mi_free without operator new.
template <class T>
using malloc_peer_alloc = mi_stl_allocator<T>;
#else
template <class T>
using malloc_peer_alloc = std::allocator<T>;
#endif

}  // namespace

int main(int argc, char** argv) {
  const bench::named_args named = bench::parse_named(argc, argv);
  const std::string& name = named.name;
  const bench::args& a = named.a;
#ifdef BENCH_MALLOC
  if (a.impl == BENCH_MALLOC) {
    run<malloc_peer_alloc>(name, a);
    return 0;
  }
#else
  if (a.impl == "glibc") {
    run<std_alloc>(name, a);
    return 0;
  }
  if (a.impl == "fjord") {
    run<fjord_alloc>(name, a);
    return 0;
  }
#ifdef BENCH_HAVE_TBB
  if (a.impl == "tbbmalloc") {
    run<tbb_alloc>(name, a);
    return 0;
  }
#endif
#endif
  bench::unknown_impl(a.impl);
}
