// A tour of fjord's coroutines: tasks, hopping onto a pool, when_all and
// when_any, a timeout through a stop token, the async primitives, spawn and
// a generator.
#include <fjord/async_condition_variable.hpp>
#include <fjord/async_latch.hpp>
#include <fjord/async_mutex.hpp>
#include <fjord/async_semaphore.hpp>
#include <fjord/generator.hpp>
#include <fjord/pool.hpp>
#include <fjord/sleep.hpp>
#include <fjord/spawn.hpp>
#include <fjord/sync_wait.hpp>
#include <fjord/task.hpp>
#include <fjord/when_all.hpp>
#include <fjord/when_any.hpp>
#include <fjord/yield.hpp>

#include <chrono>
#include <cstdio>
#include <exception>
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

  // At most two in the critical section at once.
  fjord::async_semaphore slots(2);
  auto limited = [&]() -> fjord::task<void> {
    co_await slots.acquire();
    co_await fjord::yield();  // let the others try meanwhile
    slots.release();
  };
  co_await fjord::when_all(limited(), limited(), limited(), limited());

  // A producer signals consumers through a condition variable.
  fjord::async_condition_variable ready_cv;
  bool ready = false;
  auto consumer = [&]() -> fjord::task<void> {
    auto guard = co_await mutex.scoped_lock();
    co_await ready_cv.wait(mutex, [&] { return ready; });
  };
  auto producer = [&]() -> fjord::task<void> {
    {
      auto guard = co_await mutex.scoped_lock();
      ready = true;
    }
    ready_cv.notify_all();
  };
  co_await fjord::when_all(consumer(), consumer(), producer());
  std::printf("consumers saw ready\n");
}

// Detached tasks, counted in through a latch.
fjord::task<void> spawned(fjord::async_latch& done) {
  done.count_down();
  co_return;
}

fjord::generator<long> squares(long n) {
  for (long i = 1; i <= n; ++i) {
    co_yield i* i;
  }
}

}  // namespace

int main() try {
  std::printf("sum_to(100000) = %ld\n", fjord::sync_wait(sum_to(100000)));  // inline, this thread
  long sum_of_squares = 0;
  for (long s : squares(10)) {
    sum_of_squares += s;
  }
  std::printf("sum of squares %ld\n", sum_of_squares);

  fjord::async_latch done(8);  // declared before the pool: outlives the tasks
  fjord::pool pool;
  fjord::sync_wait(tour(pool));  // this thread sleeps until the tour ends
  for (int i = 0; i < 8; ++i) {
    fjord::spawn(pool, spawned(done));
  }
  auto wait_all = [&]() -> fjord::task<void> { co_await done.wait(); };
  fjord::sync_wait(wait_all());
  std::printf("8 spawned tasks done\n");
} catch (const std::exception& e) {
  std::fprintf(stderr, "error: %s\n", e.what());
  return 1;
}
