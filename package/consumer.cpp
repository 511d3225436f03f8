// Uses a little of everything public, so a broken install shows up here.
#include <fjord/join.hpp>
#include <fjord/pool.hpp>
#include <fjord/sleep.hpp>
#include <fjord/sync_wait.hpp>
#include <fjord/task.hpp>
#include <fjord/task_group.hpp>
#include <fjord/when_all.hpp>

#include <chrono>
#include <cstdio>

namespace {

fjord::task<int> half(fjord::pool& pool, int v) {
  co_await pool.schedule();
  co_await fjord::sleep_for(std::chrono::microseconds(10));
  co_return v;
}

fjord::task<int> both(fjord::pool& pool) {
  auto [x, y] = co_await fjord::when_all(half(pool, 20), half(pool, 22));
  co_return x + y;
}

}  // namespace

int main() {
  fjord::pool pool(fjord::pool_options{.workers = 2});
  auto [a, b] = fjord::join(
      pool, [] { return 20; }, [] { return 22; });
  auto answer = pool.submit([&] { return a + b; });
  fjord::task_group group(pool);
  group.run([] {});
  group.wait();
  const int got = answer.get();
  const int from_coroutines = fjord::sync_wait(both(pool));  // a coroutine in a consumer build
  std::printf("consumer: %d %d\n", got, from_coroutines);
  return got == 42 && from_coroutines == 42 ? 0 : 1;
}
