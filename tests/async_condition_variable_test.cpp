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
#include "support/run_together.hpp"

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
  std::vector<std::atomic<int>> seen(std::size_t{producers} * per_producer);
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
  fjord_test::run_together(p, fjord_test::many(2 * producers, [&](int i) {
                             return i % 2 == 0 ? producer(i / 2) : consumer();
                           }));
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
  fjord_test::run_together(
      p, fjord_test::many(1001, [&](int i) { return i < 1000 ? waiter() : setter(); }));
  EXPECT_EQ(woke.load(), 1000);
}

}  // namespace
