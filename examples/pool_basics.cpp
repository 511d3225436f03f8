// A pool, fire-and-forget posts, futures and a task group.
#include <atomic>
#include <cstdio>
#include <exception>

#include "fjord/pool.hpp"
#include "fjord/task_group.hpp"

int main() try {
  fjord::pool pool(fjord::pool_options{.workers = 2, .name = "example"});

  std::atomic<int> posted{0};
  for (int i = 0; i < 1000; ++i) {
    pool.post([&] { posted.fetch_add(1, std::memory_order_relaxed); });
  }

  fjord::future<int> answer = pool.submit([] { return 6 * 7; });
  std::printf("answer = %d\n", answer.get());

  fjord::task_group group(pool);
  std::atomic<int> children{0};
  for (int i = 0; i < 100; ++i) {
    group.run([&] { children.fetch_add(1, std::memory_order_relaxed); });
  }
  group.wait();
  std::printf("children = %d\n", children.load());

  // Wait for the posts through a submit that runs after them is not a
  // guarantee (no FIFO order); destroying the pool runs everything first.
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "error: %s\n", e.what());
  return 1;
}
