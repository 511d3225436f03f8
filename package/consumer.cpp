// Uses a little of everything public, so a broken install shows up here.
#include <fjord/join.hpp>
#include <fjord/pool.hpp>
#include <fjord/task_group.hpp>

#include <cstdio>

int main() {
  fjord::pool pool(fjord::pool_options{.workers = 2});
  auto [a, b] = fjord::join(
      pool, [] { return 20; }, [] { return 22; });
  auto answer = pool.submit([&] { return a + b; });
  fjord::task_group group(pool);
  group.run([] {});
  group.wait();
  const int got = answer.get();
  std::printf("consumer: %d\n", got);
  return got == 42 ? 0 : 1;
}
