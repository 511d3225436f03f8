#include "fjord/when_all.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <random>
#include <set>
#include <stdexcept>
#include <thread>
#include <vector>

#include "fjord/pool.hpp"
#include "fjord/sleep.hpp"
#include "fjord/sync_wait.hpp"
#include "support/lifetime_probe.hpp"
#include "support/pool_fixture.hpp"
#include "support/run_together.hpp"

namespace {

// Runs on pools of 1, 2 and 4 workers and checks that nothing is left behind.
class when_all_on_pools : public fjord_test::pool_fixture {};

using namespace std::chrono_literals;

fjord::task<long> chain(int n) {
  if (n == 0) {
    co_return 1;
  }
  co_return n + co_await chain(n - 1);
}

long chain_value(int n) {
  return 1 + static_cast<long>(n) * (n + 1) / 2;
}

TEST(when_all, tuple_of_mixed_results) {
  int x = 1;
  auto ref = [&]() -> fjord::task<int&> { co_return x; };
  auto nothing = []() -> fjord::task<void> { co_return; };
  auto [a, b, c] = fjord::sync_wait(fjord::when_all(chain(10), nothing(), ref()));
  EXPECT_EQ(a, chain_value(10));
  EXPECT_EQ(b, std::monostate{});
  EXPECT_EQ(&c.get(), &x);
}

TEST(when_all, vector_in_order_inline_and_on_a_pool) {
  for (int workers : {0, 1, 2}) {
    std::optional<fjord::pool> p;
    if (workers > 0) {
      p.emplace(fjord::pool_options{.workers = static_cast<std::size_t>(workers)});
    }
    auto body = [&]() -> fjord::task<std::vector<long>> {
      if (p) {
        co_await p->schedule();
      }
      std::vector<fjord::task<long>> tasks;
      for (int i = 0; i < 1000; ++i) {
        tasks.push_back(chain(i % 50));
      }
      co_return co_await fjord::when_all(std::move(tasks));
    };
    const std::vector<long> results = fjord::sync_wait(body());
    ASSERT_EQ(results.size(), 1000u);
    for (int i = 0; i < 1000; ++i) {
      EXPECT_EQ(results[static_cast<std::size_t>(i)], chain_value(i % 50));
    }
  }
}

// Each when_all's last child resumes the parent by symmetric transfer; if a
// compiler turned that into a plain call, every iteration would leave a frame
// on the stack and this loop would overflow the 8 MiB of a std::thread.
TEST(when_all, a_loop_of_synchronous_when_alls_does_not_grow_the_stack) {
  auto leaf = [](int v) -> fjord::task<int> { co_return v; };
  auto loop = [&]() -> fjord::task<long> {
    long sum = 0;
    for (int i = 0; i < 300'000; ++i) {
      auto [a, b] = co_await fjord::when_all(leaf(1), leaf(2));
      sum += a + b;
      std::vector<fjord::task<int>> two;
      two.push_back(leaf(1));
      two.push_back(leaf(1));
      sum += static_cast<long>((co_await fjord::when_all(std::move(two))).size());
    }
    co_return sum;
  };
  long result = 0;
  std::thread t([&] { result = fjord::sync_wait(loop()); });
  t.join();
  EXPECT_EQ(result, 300'000L * 5);
}

TEST(when_all, empty_range_completes_at_once) {
  auto v = fjord::sync_wait(fjord::when_all(std::vector<fjord::task<int>>{}));
  EXPECT_TRUE(v.empty());
  fjord::sync_wait(fjord::when_all(std::vector<fjord::task<void>>{}));
}

TEST(when_all, children_run_in_parallel_on_the_pool) {
  fjord::pool p(fjord::pool_options{.workers = 2});
  std::mutex m;
  std::set<std::thread::id> threads;
  auto child = [&]() -> fjord::task<void> {
    {
      std::lock_guard lock(m);
      threads.insert(std::this_thread::get_id());
    }
    std::this_thread::sleep_for(2ms);  // long enough for the other worker to steal
    co_return;
  };
  fjord_test::run_together(p, fjord_test::many(32, [&](int /*i*/) { return child(); }));
  EXPECT_EQ(threads.size(), 2u);
  EXPECT_GT(p.stats().total().steals, 0u);
}

TEST(when_all, off_a_pool_children_run_one_after_another_on_the_calling_thread) {
  // As the README says: sync_wait(when_all(...)) from a plain thread runs
  // the children in turn there; co_await pool.schedule() first to spread them.
  const std::thread::id caller = std::this_thread::get_id();
  std::atomic<int> running{0};
  std::atomic<int> overlaps{0};
  std::atomic<int> elsewhere{0};
  auto child = [&]() -> fjord::task<void> {
    if (running.fetch_add(1) != 0) {
      overlaps.fetch_add(1);
    }
    if (std::this_thread::get_id() != caller) {
      elsewhere.fetch_add(1);
    }
    std::this_thread::sleep_for(1ms);
    running.fetch_sub(1);
    co_return;
  };
  fjord::sync_wait(fjord::when_all(child(), child(), child(), child()));
  EXPECT_EQ(overlaps.load(), 0);
  EXPECT_EQ(elsewhere.load(), 0);
}

TEST_P(when_all_on_pools, first_exception_in_order_after_all_finished) {
  fjord::pool& p = pool();
  std::atomic<int> finished{0};
  auto child = [&](int i) -> fjord::task<int> {
    co_await fjord::sleep_for(std::chrono::microseconds(100 * (10 - i)));
    finished.fetch_add(1);
    if (i == 3 || i == 7) {
      throw std::runtime_error(std::to_string(i));
    }
    co_return i;
  };
  auto body = [&]() -> fjord::task<void> {
    co_await p.schedule();
    std::vector<fjord::task<int>> tasks;
    for (int i = 0; i < 10; ++i) {
      tasks.push_back(child(i));
    }
    try {
      co_await fjord::when_all(std::move(tasks));
      ADD_FAILURE() << "no exception";
    } catch (const std::runtime_error& e) {
      EXPECT_STREQ(e.what(), "3");  // 7 threw first, 3 comes first in order
      EXPECT_EQ(finished.load(), 10);
    }
  };
  fjord::sync_wait(body());
}

TEST(when_all, rejects_empty_tasks) {
  std::vector<fjord::task<int>> tasks;
  tasks.emplace_back();
  EXPECT_THROW((void)fjord::when_all(std::move(tasks)), std::invalid_argument);
  EXPECT_THROW((void)fjord::when_all(chain(1), fjord::task<long>{}), std::invalid_argument);
}

// Random trees of when_all: every leaf counted exactly once, every frame
// freed, on a pool and inline.
fjord::task<long> tree(std::uint64_t seed, int depth, std::atomic<long>& leaves) {
  fjord_test::lifetime_probe probe;
  std::mt19937_64 rng(seed);
  if (depth == 0 || rng() % 4 == 0) {
    leaves.fetch_add(1, std::memory_order_relaxed);
    co_return 1;
  }
  const int width = 1 + static_cast<int>(rng() % 5);
  std::vector<fjord::task<long>> children;
  for (int i = 0; i < width; ++i) {
    children.push_back(tree(rng(), depth - 1, leaves));
  }
  long sum = 0;
  for (long v : co_await fjord::when_all(std::move(children))) {
    sum += v;
  }
  co_return sum;
}

TEST(when_all, random_trees_count_every_leaf_once) {
  fjord_test::lifetime_probe::live = 0;
  fjord::pool p(fjord::pool_options{.workers = 2});
  for (std::uint64_t seed = 1; seed <= 20; ++seed) {
    std::atomic<long> leaves{0};
    auto on_pool = [&]() -> fjord::task<long> {
      co_await p.schedule();
      co_return co_await tree(seed, 8, leaves);
    };
    const long sum = fjord::sync_wait(on_pool());
    EXPECT_EQ(sum, leaves.load());
    std::atomic<long> inline_leaves{0};
    EXPECT_EQ(fjord::sync_wait(tree(seed, 8, inline_leaves)), sum);
  }
  EXPECT_EQ(fjord_test::lifetime_probe::live.load(), 0);
}

INSTANTIATE_TEST_SUITE_P(workers, when_all_on_pools, fjord_test::worker_counts,
                         fjord_test::worker_count_name);

}  // namespace
