// A pool, fire-and-forget posts, futures, a task group, pause and wait_idle.
#include <atomic>
#include <cstdio>
#include <exception>

#include "fjord/pool.hpp"
#include "fjord/task_group.hpp"

int main() try {
  // Declared before the pool: the pool's destructor still runs posts that
  // touch them.
  std::atomic<int> posted{0};
  std::atomic<int> children{0};
  {
    fjord::pool pool(fjord::pool_options{.workers = 2, .name = "example"});

    for (int i = 0; i < 1000; ++i) {
      pool.post([&] { posted.fetch_add(1, std::memory_order_relaxed); });
    }

    fjord::future<int> answer = pool.submit([] { return 6 * 7; });
    std::printf("answer = %d\n", answer.get());

    fjord::task_group group(pool);
    for (int i = 0; i < 100; ++i) {
      group.run([&] { children.fetch_add(1, std::memory_order_relaxed); });
    }
    group.wait();
    std::printf("children = %d\n", children.load());

    // Jobs posted while paused wait for resume(); wait_idle() keeps the pool.
    pool.pause();
    std::atomic<int> held{0};
    for (int i = 0; i < 10; ++i) {
      pool.post([&] { held.fetch_add(1, std::memory_order_relaxed); });
    }
    const int before_resume = held.load();
    pool.resume();
    pool.wait_idle();
    std::printf("held = %d before resume, %d after\n", before_resume, held.load());
    if (before_resume != 0 || held.load() != 10) {
      return 1;
    }
  }  // ~pool runs every post still queued (posts have no order to wait on)
  std::printf("posted = %d\n", posted.load());
  return posted.load() == 1000 && children.load() == 100 ? 0 : 1;
} catch (const std::exception& e) {
  std::fprintf(stderr, "error: %s\n", e.what());
  return 1;
}
