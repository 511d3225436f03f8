// A tour of fjord's coroutines: tasks, hopping onto a pool, when_all and
// when_any, a timeout through a stop token, and an async mutex.
#include <fjord/async_mutex.hpp>
#include <fjord/pool.hpp>
#include <fjord/sleep.hpp>
#include <fjord/sync_wait.hpp>
#include <fjord/task.hpp>
#include <fjord/when_all.hpp>
#include <fjord/when_any.hpp>

#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

using namespace std::chrono_literals;

namespace {

fjord::task<long> sum_to(long n) {
  if (n == 0) {
    co_return 0;
  }
  co_return n + co_await sum_to(n - 1);  // symmetric transfer: no stack growth
}

// Gives up when the stop token it runs under is triggered. (The co_await is
// its own statement on purpose: GCC 12 miscompiles a co_await inside an if
// condition whose branch co_returns; see docs/coroutines.md.)
fjord::task<std::string> slow_lookup() {
  const fjord::sleep_status status = co_await fjord::sleep_for(10s);
  if (status == fjord::sleep_status::canceled) {
    co_return "canceled";
  }
  co_return "found";
}

fjord::task<std::string> quick_lookup() {
  co_await fjord::sleep_for(5ms);
  co_return "quick answer";
}

fjord::task<void> tour(fjord::pool& pool) {
  co_await pool.schedule();  // from here on, on one of the pool's workers

  // Children in parallel; results in order.
  std::vector<fjord::task<long>> parts;
  for (long n = 100; n <= 500; n += 100) {
    parts.push_back(sum_to(n));
  }
  for (long v : co_await fjord::when_all(std::move(parts))) {
    std::printf("part %ld\n", v);
  }

  // The first to finish wins; the other sees a stop request and ends early.
  auto winner = co_await fjord::when_any(slow_lookup(), quick_lookup());
  std::printf("when_any: child %zu won: %s\n", winner.index(),
              winner.index() == 0 ? std::get<0>(winner).c_str() : std::get<1>(winner).c_str());

  // Coroutines wait for the mutex without blocking a worker.
  fjord::async_mutex mutex;
  long counter = 0;
  auto bump = [&]() -> fjord::task<void> {
    for (int i = 0; i < 1000; ++i) {
      auto guard = co_await mutex.scoped_lock();
      ++counter;
    }
  };
  co_await fjord::when_all(bump(), bump(), bump());
  std::printf("counter %ld\n", counter);
}

}  // namespace

int main() {
  std::printf("sum_to(100000) = %ld\n", fjord::sync_wait(sum_to(100000)));  // inline, this thread
  fjord::pool pool;
  fjord::sync_wait(tour(pool));  // this thread sleeps until the tour ends
}
