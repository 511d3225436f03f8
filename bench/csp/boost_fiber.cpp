// The CSP benchmarks of bench/csp/main.cpp, written for Boost.Fiber (a peer
// named by issue 13): fibers on N threads with Boost's work-stealing
// scheduler, unbuffered_channel for the rendezvous channels and
// buffered_channel for capacity 1024. Same programs, same sizes, same
// checks; see main.cpp for what each measures.
//
// bench_csp_boost_fiber --bench NAME --impl boost-fiber --threads N --size K [--grain G]
//
// Stacks: 16 KiB each (fixedsize_stack), so that skynet's 1,111,111 fibers
// fit in memory; Boost's default (128 KiB) would need about 140 GB of
// address space there.
#include <boost/fiber/algo/work_stealing.hpp>
#include <boost/fiber/all.hpp>

#include <atomic>
#include <cstdio>
#include <memory>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

#include "common/harness.hpp"
#include "csp/checks.hpp"

namespace {

namespace fibers = boost::fibers;
template <class T>
using rendezvous = std::shared_ptr<fibers::unbuffered_channel<T>>;

constexpr std::size_t stack_bytes = 16 * 1024;

// Fibers alive, so that a round can wait for every fiber of the last one.
std::atomic<long> alive{0};

template <class F, class... A>
void go(F f, A... a) {
  alive.fetch_add(1, std::memory_order_relaxed);
  fibers::fiber(fibers::launch::post, std::allocator_arg, fibers::fixedsize_stack(stack_bytes),
                [f, a...]() mutable {
                  f(std::move(a)...);
                  alive.fetch_sub(1, std::memory_order_release);
                })
      .detach();
}

void wait_for_every_fiber() {
  while (alive.load(std::memory_order_acquire) != 0) {
    boost::this_fiber::yield();
  }
}

template <class T>
rendezvous<T> make_rendezvous() {
  return std::make_shared<fibers::unbuffered_channel<T>>();
}

// The main thread and n - 1 helpers, all running Boost's work-stealing
// scheduler (the pattern of Boost.Fiber's own work_stealing example); the
// helpers' main fibers wait until the program ends.
class fiber_threads {
 public:
  explicit fiber_threads(int n) {
    for (int i = 1; i < n; ++i) {
      helpers_.emplace_back([this, n] {
        fibers::use_scheduling_algorithm<fibers::algo::work_stealing>(n);
        std::unique_lock lock(mutex_);
        done_cv_.wait(lock, [this] { return done_; });
      });
    }
    fibers::use_scheduling_algorithm<fibers::algo::work_stealing>(n);
  }
  fiber_threads(const fiber_threads&) = delete;
  fiber_threads& operator=(const fiber_threads&) = delete;
  ~fiber_threads() {
    {
      std::unique_lock lock(mutex_);
      done_ = true;
    }
    done_cv_.notify_all();
    for (std::thread& t : helpers_) {
      t.join();
    }
  }

 private:
  std::vector<std::thread> helpers_;
  fibers::mutex mutex_;
  fibers::condition_variable done_cv_;
  bool done_ = false;
};

// ---------------------------------------------------------------- skynet

void skynet(rendezvous<long> out, long num, long size, long div) {
  if (size == 1) {
    out->push(num);
    return;
  }
  rendezvous<long> children = make_rendezvous<long>();
  for (long i = 0; i < div; ++i) {
    go(skynet, children, num + i * (size / div), size / div, div);
  }
  long sum = 0;
  for (long i = 0; i < div; ++i) {
    long v = 0;
    children->pop(v);
    sum += v;
  }
  out->push(sum);
}

// ---------------------------------------------------------------- prime sieve

void generate(rendezvous<int> out) {
  for (int i = 2;; ++i) {
    if (out->push(i) != fibers::channel_op_status::success) {
      return;
    }
  }
}

// Ends when its output is closed, and closes its input in turn: a round
// ends by closing the last channel, and the close runs up the chain (Boost
// 1.74's unbuffered_channel crashed when every channel was closed at once
// from outside, as main.cpp does for fjord).
void filter(rendezvous<int> in, rendezvous<int> out, int prime) {
  int i = 0;
  while (in->pop(i) == fibers::channel_op_status::success) {
    if (i % prime != 0 && out->push(i) != fibers::channel_op_status::success) {
      break;
    }
  }
  in->close();
}

// ---------------------------------------------------------------- ping pong

void pong(rendezvous<int> in, rendezvous<int> out) {
  int v = 0;
  while (in->pop(v) == fibers::channel_op_status::success) {
    out->push(v);
  }
}

}  // namespace

int main(int argc, char** argv) {
  const bench::named_args named = bench::parse_named(argc, argv);
  const std::string& name = named.name;
  const bench::args& a = named.a;
  if (a.impl != "boost-fiber") {
    bench::unknown_impl(a.impl);
  }
  const fiber_threads threads(a.threads);

  if (name == "skynet_channels") {
    const long leaves = a.size;
    const long long expected = csp_bench::expected_sum(leaves - 1);
    bench::run_rounds(a, "ms", static_cast<double>(leaves) * 10 / 9, [&] {
      const auto start = bench::clock::now();
      rendezvous<long> result = make_rendezvous<long>();
      go(skynet, result, 0L, leaves, 10L);
      long sum = 0;
      result->pop(sum);
      const double ms = bench::since_ms(start);
      bench::check("skynet", sum, expected);
      wait_for_every_fiber();
      return ms;
    });
    return 0;
  }

  if (name == "prime_sieve") {
    const int n = static_cast<int>(a.size);
    const int expected = csp_bench::nth_prime(n);
    bench::run_rounds(a, "ms", n, [&] {
      const auto start = bench::clock::now();
      rendezvous<int> ch = make_rendezvous<int>();
      go(generate, ch);
      int prime = 0;
      for (int i = 0; i < n; ++i) {
        ch->pop(prime);
        rendezvous<int> next = make_rendezvous<int>();
        go(filter, ch, next, prime);
        ch = next;
      }
      const double ms = bench::since_ms(start);
      bench::check("prime_sieve", prime, expected);
      ch->close();  // every fiber ends (outside the timing)
      wait_for_every_fiber();
      return ms;
    });
    return 0;
  }

  if (name == "ping_pong") {
    const long n = a.size;
    long expected = 0;
    for (long i = 0; i < n; ++i) {
      expected += i & 0xFFFF;
    }
    bench::run_rounds(a, "ns/round trip", static_cast<double>(n), [&] {
      rendezvous<int> there = make_rendezvous<int>();
      rendezvous<int> back = make_rendezvous<int>();
      const auto start = bench::clock::now();
      go(pong, there, back);
      long sum = 0;
      for (long i = 0; i < n; ++i) {
        there->push(static_cast<int>(i & 0xFFFF));
        int v = 0;
        back->pop(v);
        sum += v;
      }
      there->close();
      const double ns = bench::since_ms(start) * 1e6 / static_cast<double>(n);
      bench::check("ping_pong", sum, expected);
      wait_for_every_fiber();
      return ns;
    });
    return 0;
  }

  if (name == "channel_mpmc") {
    const long n = a.size;
    const long pairs = a.grain < 1 ? 1 : a.grain;
    bench::run_rounds(a, "ns/message", static_cast<double>(n), [&] {
      auto ch = std::make_shared<fibers::buffered_channel<long>>(1024);
      auto total = std::make_shared<std::atomic<long long>>(0);
      auto producers_left = std::make_shared<std::atomic<long>>(pairs);
      const auto start = bench::clock::now();
      for (long k = 0; k < pairs; ++k) {
        go(
            [](std::shared_ptr<fibers::buffered_channel<long>> c,
               std::shared_ptr<std::atomic<long>> left, long from, long to) {
              for (long i = from; i < to; ++i) {
                c->push(i);
              }
              if (left->fetch_sub(1) == 1) {
                c->close();
              }
            },
            ch, producers_left, n * k / pairs, n * (k + 1) / pairs);
        go(
            [](std::shared_ptr<fibers::buffered_channel<long>> c,
               std::shared_ptr<std::atomic<long long>> sum) {
              long long mine = 0;
              long v = 0;
              while (c->pop(v) == fibers::channel_op_status::success) {
                mine += v;
              }
              sum->fetch_add(mine);
            },
            ch, total);
      }
      wait_for_every_fiber();
      const double ns = bench::since_ms(start) * 1e6 / static_cast<double>(n);
      bench::check("channel_mpmc", total->load(), csp_bench::expected_sum(n - 1));
      return ns;
    });
    return 0;
  }

  if (name == "processes_idle") {
    const long n = a.size;
    bench::run_rounds(a, "ns/process", static_cast<double>(n), [&] {
      rendezvous<int> gate = make_rendezvous<int>();
      auto waiting = std::make_shared<std::atomic<long>>(0);
      const long before = csp_bench::rss_kib();
      for (long i = 0; i < n; ++i) {
        go(
            [](rendezvous<int> g, std::shared_ptr<std::atomic<long>> w) {
              w->fetch_add(1, std::memory_order_relaxed);
              int v = 0;
              (void)g->pop(v);
            },
            gate, waiting);
      }
      while (waiting->load() != n) {
        boost::this_fiber::yield();
      }
      const long after = csp_bench::rss_kib();
      const auto start = bench::clock::now();
      gate->close();
      wait_for_every_fiber();
      const double ns = bench::since_ms(start) * 1e6 / static_cast<double>(n);
      std::printf("BYTES_PER_PROCESS %.1f\n",
                  static_cast<double>(after - before) * 1024.0 / static_cast<double>(n));
      return ns;
    });
    return 0;
  }

  bench::unknown_impl(name + "/" + a.impl);
}
