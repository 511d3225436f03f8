// CSP benchmarks (issue 13): processes and channels, each in the shape Go's
// programs use (bench/go/csp.go has the same programs in Go).
//
//   skynet_channels  each process starts 10 children that send their sums on
//                    the parent's unbuffered channel; --size leaves
//                    (1,111,111 processes for 10^6). ms per round.
//   prime_sieve      Go's concurrent prime sieve: a daisy chain of filter
//                    processes over unbuffered channels; the first --size
//                    primes. ms per round.
//   ping_pong        two processes pass a token over two unbuffered channels
//                    --size times. ns per round trip.
//   channel_mpmc     --size integers through one channel of capacity 1024,
//                    --grain producers and as many consumers (processes; or
//                    threads with the blocking forms). ns per message.
//   processes_idle   --size processes blocked on one channel, released by one
//                    close(). Prints bytes per blocked process; the figure is
//                    the release time, in ns per process. --impl resume-floor:
//                    the floor row (see idle_process below).
//   csp_sum          the libcsp seed's sum with a process per node: each node
//                    starts two child processes that report on a channel.
//                    s per round.
//
// bench_csp --bench NAME --impl fjord|fjord-threads|resume-floor --threads N --size K
#include <atomic>
#include <coroutine>
#include <cstdio>
#include <cstring>
#include <exception>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "common/harness.hpp"
#include "csp/checks.hpp"
#include "fjord/channel.hpp"
#include "fjord/detail/frame_allocator.hpp"
#include "fjord/go.hpp"
#include "fjord/pool.hpp"
#include "fjord/select.hpp"
#include "fjord/sync_wait.hpp"
#include "fjord/task.hpp"
#include "fjord/when_all.hpp"

namespace {

using fjord::channel;
using fjord::task;

// ---------------------------------------------------------------- skynet

task<void> skynet(channel<long> out, long num, long size, long div) {
  if (size == 1) {
    co_await out.send(num);
    co_return;
  }
  channel<long> children(0);
  for (long i = 0; i < div; ++i) {
    fjord::go(skynet, children, num + i * (size / div), size / div, div);
  }
  long sum = 0;
  for (long i = 0; i < div; ++i) {
    sum += *co_await children.receive();
  }
  co_await out.send(sum);
}

// ---------------------------------------------------------------- prime sieve

task<void> generate(channel<int> out) {
  try {
    for (int i = 2;; ++i) {
      co_await out.send(i);
    }
  } catch (const fjord::channel_closed&) {
  }
}

task<void> filter(channel<int> in, channel<int> out, int prime) {
  try {
    while (std::optional<int> i = co_await in.receive()) {
      if (*i % prime != 0) {
        co_await out.send(*i);
      }
    }
  } catch (const fjord::channel_closed&) {
  }
}

// Returns the last of the first n primes. Every channel is closed at the
// end, so every process ends (outside the timed part: see sieve_round).
task<int> sieve(int n, std::vector<channel<int>>& made) {
  channel<int> ch(0);
  made.push_back(ch);
  fjord::go(generate, ch);
  int prime = 0;
  for (int i = 0; i < n; ++i) {
    prime = *co_await ch.receive();
    channel<int> next(0);
    made.push_back(next);
    fjord::go(filter, ch, next, prime);
    ch = next;
  }
  co_return prime;
}

// ---------------------------------------------------------------- ping pong

task<void> pong(channel<int> in, channel<int> out) {
  while (std::optional<int> v = co_await in.receive()) {
    co_await out.send(*v);
  }
}

task<long> ping(channel<int> out, channel<int> in, long n) {
  long sum = 0;
  for (long i = 0; i < n; ++i) {
    co_await out.send(static_cast<int>(i & 0xFFFF));
    sum += *co_await in.receive();
  }
  out.close();
  co_return sum;
}

// ---------------------------------------------------------------- idle floor

// processes_idle's floor: the same coroutine body, suspended into a plain
// array instead of a channel's queue and resumed in order by one other
// thread, with no channel and no pool between them. Frames come from
// fjord's frame allocator as a task's do, made by this thread and freed by
// the resuming one, as go() from main and a worker do: what resuming ten
// million cold frames and freeing them costs on this machine.
struct parked_process {
  struct promise_type {
    parked_process get_return_object() noexcept { return {}; }
    std::suspend_never initial_suspend() noexcept { return {}; }
    std::suspend_never final_suspend() noexcept { return {}; }
    void return_void() noexcept {}
    void unhandled_exception() noexcept { std::terminate(); }
    static void* operator new(std::size_t size) {
      return fjord::detail::frame_allocator::allocate(size);
    }
    static void operator delete(void* frame, std::size_t size) noexcept {
      fjord::detail::frame_allocator::deallocate(frame, size);
    }
  };
};

// The size of a channel's receive awaiter, written when it suspends and read
// when it resumes, as a waiter's fields are: the same frame size and lines
// touched as the fjord process's (BYTES_PER_PROCESS shows both).
struct park_in {
  std::vector<std::coroutine_handle<>>& parked;
  unsigned char state[128] = {};
  bool await_ready() const noexcept { return false; }
  void await_suspend(std::coroutine_handle<> h) {
    parked.push_back(h);
    std::memset(state, static_cast<int>(parked.size() & 0x7f), sizeof state);
  }
  int await_resume() const noexcept { return state[0] + state[sizeof state - 1]; }
};

parked_process idle_process(std::vector<std::coroutine_handle<>>& parked, std::atomic<long>& w,
                            std::atomic<long>& r) {
  w.fetch_add(1, std::memory_order_relaxed);
  const int got = co_await park_in{parked};
  r.fetch_add(1 + (got >> 8), std::memory_order_relaxed);  // got < 256: adds 1
}

// ---------------------------------------------------------------- csp sum

task<void> csp_sum(channel<long long> out, long lo, long hi) {
  if (lo == hi) {
    co_await out.send(lo);
    co_return;
  }
  const long mid = lo + (hi - lo) / 2;
  channel<long long> halves(2);
  fjord::go(csp_sum, halves, lo, mid);
  fjord::go(csp_sum, halves, mid + 1, hi);
  const long long a = *co_await halves.receive();
  const long long b = *co_await halves.receive();
  co_await out.send(a + b);
}

// ---------------------------------------------------------------- helpers

// Runs t on p from this (outside) thread and returns its result.
template <class T>
T run_on(fjord::pool& p, task<T> t) {
  return fjord::sync_wait([](fjord::pool& pool, task<T> inner) -> task<T> {
    co_await pool.schedule();
    co_return co_await std::move(inner);
  }(p, std::move(t)));
}

}  // namespace

int main(int argc, char** argv) {
  const bench::named_args named = bench::parse_named(argc, argv);
  const std::string& bench_name = named.name;
  const bench::args& a = named.a;
  fjord::pool p(fjord::pool_options{.workers = static_cast<std::size_t>(a.threads)});

  if (bench_name == "skynet_channels" && a.impl == "fjord") {
    const long leaves = a.size;
    long long expected = 0;
    for (long i = 0; i < leaves; ++i) {
      expected += i;
    }
    bench::run_rounds(a, "ms", static_cast<double>(leaves) * 10 / 9, [&] {
      const auto start = bench::clock::now();
      channel<long> result(0);
      const long sum = run_on(p, [](channel<long> r, long n) -> task<long> {
        fjord::go(skynet, r, 0L, n, 10L);
        co_return *co_await r.receive();
      }(result, leaves));
      const double ms = bench::since_ms(start);
      bench::check("skynet", sum, expected);
      return ms;
    });
    return 0;
  }

  if (bench_name == "prime_sieve" && a.impl == "fjord") {
    const int n = static_cast<int>(a.size);
    const int expected = csp_bench::nth_prime(n);
    bench::run_rounds(a, "ms", n, [&] {
      std::vector<channel<int>> made;
      const auto start = bench::clock::now();
      const int last = run_on(p, sieve(n, made));
      const double ms = bench::since_ms(start);
      bench::check("prime_sieve", last, expected);
      for (const channel<int>& c : made) {
        c.close();
      }
      // Let every process end before the next round.
      while (fjord::detail::pool_access::core(p).waiting_coroutines() != 0) {
        std::this_thread::yield();
      }
      return ms;
    });
    return 0;
  }

  if (bench_name == "ping_pong" && a.impl == "fjord") {
    const long n = a.size;
    long expected = 0;
    for (long i = 0; i < n; ++i) {
      expected += i & 0xFFFF;
    }
    bench::run_rounds(a, "ns/round trip", static_cast<double>(n), [&] {
      channel<int> there(0);
      channel<int> back(0);
      const auto start = bench::clock::now();
      fjord::go(p, pong, there, back);
      const long sum = run_on(p, ping(there, back, n));
      const double ns = bench::since_ms(start) * 1e6 / static_cast<double>(n);
      bench::check("ping_pong", sum, expected);
      return ns;
    });
    return 0;
  }

  if (bench_name == "channel_mpmc" && (a.impl == "fjord" || a.impl == "fjord-threads")) {
    const long n = a.size;
    const long pairs = a.grain < 1 ? 1 : a.grain;
    const bool threads = a.impl == "fjord-threads";
    bench::run_rounds(a, "ns/message", static_cast<double>(n), [&] {
      channel<long> ch(1024);
      std::atomic<long long> total{0};
      std::atomic<long> producers_left{pairs};
      auto produce = [&](long from, long to) {
        return [&ch, &producers_left, from, to]() -> task<void> {
          for (long i = from; i < to; ++i) {
            co_await ch.send(i);
          }
          if (producers_left.fetch_sub(1) == 1) {
            ch.close();
          }
        };
      };
      const auto start = bench::clock::now();
      if (threads) {
        std::vector<std::thread> all;
        for (long k = 0; k < pairs; ++k) {
          all.emplace_back([&, k] {
            for (long i = n * k / pairs; i < n * (k + 1) / pairs; ++i) {
              ch.blocking_send(i);
            }
            if (producers_left.fetch_sub(1) == 1) {
              ch.close();
            }
          });
          all.emplace_back([&] {
            long long sum = 0;
            while (std::optional<long> v = ch.blocking_receive()) {
              sum += *v;
            }
            total.fetch_add(sum);
          });
        }
        for (std::thread& t : all) {
          t.join();
        }
      } else {
        std::vector<task<void>> producers;
        std::vector<decltype(produce(0, 0))> bodies;
        bodies.reserve(static_cast<std::size_t>(pairs));
        for (long k = 0; k < pairs; ++k) {
          bodies.push_back(produce(n * k / pairs, n * (k + 1) / pairs));
        }
        auto consume = [&]() -> task<void> {
          long long sum = 0;
          while (std::optional<long> v = co_await ch.receive()) {
            sum += *v;
          }
          total.fetch_add(sum);
        };
        run_on(p, [&]() -> task<void> {
          std::vector<task<void>> all;
          for (long k = 0; k < pairs; ++k) {
            all.push_back(bodies[static_cast<std::size_t>(k)]());
            all.push_back(consume());
          }
          co_await fjord::when_all(std::move(all));
        }());
      }
      const double ns = bench::since_ms(start) * 1e6 / static_cast<double>(n);
      bench::check("channel_mpmc", total.load(), csp_bench::expected_sum(n - 1));
      return ns;
    });
    return 0;
  }

  if (bench_name == "processes_idle" && a.impl == "fjord") {
    const long n = a.size;
    bench::run_rounds(a, "ns/process", static_cast<double>(n), [&] {
      channel<int> gate(0);
      std::atomic<long> waiting{0};
      std::atomic<long> released{0};
      auto process = [](channel<int> g, std::atomic<long>& w, std::atomic<long>& r) -> task<void> {
        w.fetch_add(1, std::memory_order_relaxed);
        (void)co_await g.receive();
        r.fetch_add(1, std::memory_order_relaxed);
      };
      const long before = csp_bench::rss_kib();
      for (long i = 0; i < n; ++i) {
        fjord::go(p, process, gate, std::ref(waiting), std::ref(released));
      }
      while (waiting.load() != n || fjord::detail::pool_access::core(p).waiting_coroutines() != n) {
        std::this_thread::yield();
      }
      const long after = csp_bench::rss_kib();
      const auto start = bench::clock::now();
      gate.close();
      while (released.load() != n) {
        std::this_thread::yield();
      }
      const double ns = bench::since_ms(start) * 1e6 / static_cast<double>(n);
      std::printf("BYTES_PER_PROCESS %.1f\n",
                  static_cast<double>(after - before) * 1024.0 / static_cast<double>(n));
      return ns;
    });
    return 0;
  }

  if (bench_name == "processes_idle" && a.impl == "resume-floor") {
    const long n = a.size;
    std::vector<std::coroutine_handle<>> parked;
    parked.reserve(static_cast<std::size_t>(n));
    bench::run_rounds(a, "ns/process", static_cast<double>(n), [&] {
      std::atomic<long> waiting{0};
      std::atomic<long> released{0};
      parked.clear();
      const long before = csp_bench::rss_kib();
      for (long i = 0; i < n; ++i) {
        idle_process(parked, waiting, released);
      }
      const long after = csp_bench::rss_kib();
      const auto start = bench::clock::now();
      std::thread resumer([&parked] {
        for (const std::coroutine_handle<> h : parked) {
          h.resume();
        }
      });
      resumer.join();
      const double ns = bench::since_ms(start) * 1e6 / static_cast<double>(n);
      bench::check("processes_idle", released.load(), n);
      std::printf("BYTES_PER_PROCESS %.1f\n",
                  static_cast<double>(after - before) * 1024.0 / static_cast<double>(n));
      return ns;
    });
    return 0;
  }

  if (bench_name == "csp_sum" && a.impl == "fjord") {
    const long n = a.size;
    bench::run_rounds(a, "s/round", static_cast<double>(2 * n), [&] {
      const auto start = bench::clock::now();
      channel<long long> result(1);
      const long long sum = run_on(p, [](channel<long long> r, long hi) -> task<long long> {
        fjord::go(csp_sum, r, 0L, hi);
        co_return *co_await r.receive();
      }(result, n));
      const double s = bench::since_ms(start) / 1e3;
      bench::check("csp_sum", sum, csp_bench::expected_sum(n));
      return s;
    });
    return 0;
  }

  bench::unknown_impl(bench_name + "/" + a.impl);
}
