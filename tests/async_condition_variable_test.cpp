#include "fjord/async_condition_variable.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <deque>
#include <stdexcept>
#include <vector>

#include "fjord/async_mutex.hpp"
#include "fjord/pool.hpp"
#include "fjord/sync_wait.hpp"
#include "fjord/task.hpp"
#include "fjord/when_all.hpp"

namespace {

TEST(async_condition_variable, wait_needs_the_lock) {
  fjord::async_mutex m;
  fjord::async_condition_variable cv;
  auto body = [&]() -> fjord::task<void> { co_await cv.wait(m); };
  EXPECT_THROW(fjord::sync_wait(body()), std::logic_error);
}

// Producers and consumers over a bounded queue: every item is consumed
// exactly once.
TEST(async_condition_variable, bounded_queue_under_contention) {
  fjord::pool p(fjord::pool_options{.workers = 2});
  fjord::async_mutex m;
  fjord::async_condition_variable not_empty;
  fjord::async_condition_variable not_full;
  std::deque<int> queue;
  constexpr int producers = 50;
  constexpr int per_producer = 200;
  std::vector<std::atomic<int>> seen(producers * per_producer);
  auto producer = [&](int id) -> fjord::task<void> {
    for (int i = 0; i < per_producer; ++i) {
      co_await m.lock();
      co_await not_full.wait(m, [&] { return queue.size() < 8; });
      queue.push_back(id * per_producer + i);
      m.unlock();
      not_empty.notify_one();
    }
  };
  auto consumer = [&]() -> fjord::task<void> {
    for (int i = 0; i < per_producer; ++i) {
      co_await m.lock();
      co_await not_empty.wait(m, [&] { return !queue.empty(); });
      const int item = queue.front();
      queue.pop_front();
      m.unlock();
      not_full.notify_one();
      seen[static_cast<std::size_t>(item)].fetch_add(1);
    }
  };
  auto body = [&]() -> fjord::task<void> {
    co_await p.schedule();
    std::vector<fjord::task<void>> tasks;
    for (int i = 0; i < producers; ++i) {
      tasks.push_back(producer(i));
      tasks.push_back(consumer());
    }
    co_await fjord::when_all(std::move(tasks));
  };
  fjord::sync_wait(body());
  for (auto& s : seen) {
    EXPECT_EQ(s.load(), 1);
  }
  EXPECT_TRUE(queue.empty());
}

TEST(async_condition_variable, notify_all_wakes_everyone) {
  fjord::pool p(fjord::pool_options{.workers = 2});
  fjord::async_mutex m;
  fjord::async_condition_variable cv;
  bool go = false;
  std::atomic<int> woke{0};
  auto waiter = [&]() -> fjord::task<void> {
    auto guard = co_await m.scoped_lock();
    co_await cv.wait(m, [&] { return go; });
    woke.fetch_add(1);
  };
  auto setter = [&]() -> fjord::task<void> {
    co_await m.lock();
    go = true;
    m.unlock();
    cv.notify_all();
  };
  auto body = [&]() -> fjord::task<void> {
    co_await p.schedule();
    std::vector<fjord::task<void>> tasks;
    for (int i = 0; i < 1000; ++i) {
      tasks.push_back(waiter());
    }
    tasks.push_back(setter());
    co_await fjord::when_all(std::move(tasks));
  };
  fjord::sync_wait(body());
  EXPECT_EQ(woke.load(), 1000);
}

}  // namespace
