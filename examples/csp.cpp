// CSP with fjord: processes (coroutines started with go) that talk over
// channels. Go's concurrent prime sieve, a fan-in with select and a
// timeout, and a ticker. Exits non-zero on a wrong result.
#include <fjord/channel.hpp>
#include <fjord/go.hpp>
#include <fjord/pool.hpp>
#include <fjord/select.hpp>
#include <fjord/sync_wait.hpp>
#include <fjord/task.hpp>
#include <fjord/timer.hpp>

#include <chrono>
#include <cstdio>
#include <exception>
#include <optional>
#include <vector>

using namespace std::chrono_literals;

// Sends 2, 3, 4, ... until its channel is closed.
fjord::task<void> generate(fjord::channel<int> out) {
  try {
    for (int i = 2;; ++i) {
      co_await out.send(i);
    }
  } catch (const fjord::channel_closed&) {
    // The sieve is done with us.
  }
}

// Passes on what `prime` does not divide; ends when either side closes.
fjord::task<void> filter(fjord::channel<int> in, fjord::channel<int> out, int prime) {
  try {
    while (std::optional<int> i = co_await in.receive()) {
      if (*i % prime != 0) {
        co_await out.send(*i);
      }
    }
  } catch (const fjord::channel_closed&) {
  }
}

// The first n primes, through a daisy chain of filter processes over
// rendezvous channels; closes every channel at the end so that every
// process ends.
fjord::task<std::vector<int>> primes(int n) {
  std::vector<fjord::channel<int>> made{fjord::channel<int>(0)};
  fjord::go(generate, made.back());
  std::vector<int> found;
  for (int i = 0; i < n; ++i) {
    const int prime = *co_await made.back().receive();
    found.push_back(prime);
    fjord::channel<int> next(0);
    fjord::go(filter, made.back(), next, prime);
    made.push_back(next);
  }
  for (const auto& ch : made) {
    ch.close();
  }
  co_return found;
}

// Receives from two channels, whichever is ready, until both are closed or
// nothing arrives for 100 ms.
fjord::task<int> fan_in(fjord::channel<int> a, fjord::channel<int> b) {
  int sum = 0;
  while (a || b) {
    std::optional<int> x;
    std::optional<int> y;
    switch (co_await fjord::select(fjord::receive_from(a, x), fjord::receive_from(b, y),
                                   fjord::timeout(100ms))) {
      case 0:
        if (x) {
          sum += *x;
        } else {
          a = {};  // closed: a null channel is never ready again
        }
        break;
      case 1:
        if (y) {
          sum += *y;
        } else {
          b = {};
        }
        break;
      default:
        co_return -1;  // timed out
    }
  }
  co_return sum;
}

fjord::task<void> count_to(fjord::channel<int> out, int n) {
  for (int i = 1; i <= n; ++i) {
    co_await out.send(i);
  }
  out.close();
}

int main() try {
  fjord::pool pool;
  int failures = 0;

  const std::vector<int> p = fjord::sync_wait([&]() -> fjord::task<std::vector<int>> {
    co_await pool.schedule();  // the sieve's processes run on the pool
    co_return co_await primes(10);
  }());
  std::printf("first primes:");
  for (int x : p) {
    std::printf(" %d", x);
  }
  std::printf("\n");
  failures += p.back() == 29 ? 0 : 1;

  fjord::channel<int> a(4);
  fjord::channel<int> b(0);
  fjord::go(pool, count_to, a, 100);
  fjord::go(pool, count_to, b, 10);
  const int sum = fjord::sync_wait(fan_in(a, b));
  std::printf("fan-in sum: %d\n", sum);
  failures += sum == 5050 + 55 ? 0 : 1;

  fjord::ticker tick(2ms);
  int ticks = 0;
  while (ticks < 3 && tick.ticks().blocking_receive()) {
    ++ticks;
  }
  tick.stop();
  std::printf("ticks: %d\n", ticks);

  fjord::channel<int> done(1);
  fjord::timer later = fjord::call_after(pool, 1ms, [done] { (void)done.try_send(1); });
  failures += done.blocking_receive() == 1 ? 0 : 1;
  return failures;
} catch (const std::exception& e) {
  std::fprintf(stderr, "csp: %s\n", e.what());
  return 1;
}
