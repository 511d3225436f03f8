#include "fjord/join.hpp"
#include "support/pool_fixture.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>

namespace {

// Runs on pools of 1, 2 and 4 workers and checks that nothing is left behind.
class join_on_pools : public fjord_test::pool_fixture {};

long fib(fjord::pool& p, int n);

long fib_on_worker(int n) {
  if (n < 2) {
    return n;
  }
  auto [a, b] =
      fjord::join([&] { return fib_on_worker(n - 1); }, [&] { return fib_on_worker(n - 2); });
  return a + b;
}

long fib(fjord::pool& p, int n) {
  return p.call([&] { return fib_on_worker(n); });
}

TEST(join, returns_both_results) {
  auto [a, b] = fjord::join([] { return 1; }, [] { return std::string("two"); });
  EXPECT_EQ(a, 1);
  EXPECT_EQ(b, "two");
}

TEST(join, void_closures_return_void) {
  int x = 0;
  int y = 0;
  fjord::join([&] { x = 1; }, [&] { y = 2; });
  EXPECT_EQ(x + y, 3);
  static_assert(std::is_void_v<decltype(fjord::join([] {}, [] {}))>);
}

TEST(join, mixed_void_and_reference_results) {
  int target = 7;
  auto [v, r] = fjord::join([] {}, [&]() -> int& { return target; });
  static_cast<void>(v);
  r.get() = 8;
  EXPECT_EQ(target, 8);
}

TEST(join, move_only_results) {
  auto [a, b] =
      fjord::join([] { return std::make_unique<int>(3); }, [] { return std::make_unique<int>(4); });
  EXPECT_EQ(*a + *b, 7);
}

TEST_P(join_on_pools, recursive_fib) {
  EXPECT_EQ(fib(pool(), 22), 17711);
}

TEST(join, recursive_fib_on_three_workers) {
  fjord::pool p(fjord::pool_options{.workers = 3});
  EXPECT_EQ(fib(p, 22), 17711);
}

TEST(join, from_outside_uses_default_pool) {
  EXPECT_EQ(fib_on_worker(18), 2584);
}

TEST_P(join_on_pools, exception_from_a_reaches_caller_after_b_finished) {
  fjord::pool& p = pool();
  std::atomic<bool> b_done{false};
  EXPECT_THROW(p.call([&] {
    fjord::join([] { throw std::runtime_error("a"); },
                [&] {
                  std::this_thread::sleep_for(std::chrono::milliseconds(5));
                  b_done = true;
                });
  }),
               std::runtime_error);
  EXPECT_TRUE(b_done.load());
}

TEST_P(join_on_pools, exception_from_b_reaches_caller) {
  fjord::pool& p = pool();
  try {
    p.call([&] { fjord::join([] {}, [] { throw std::logic_error("b"); }); });
    FAIL() << "no exception";
  } catch (const std::logic_error& e) {
    EXPECT_STREQ(e.what(), "b");
  }
}

TEST_P(join_on_pools, when_both_throw_first_wins_and_second_is_counted) {
  fjord::pool& p = pool();
  try {
    p.call([&] {
      fjord::join([] { throw std::runtime_error("a"); }, [] { throw std::logic_error("b"); });
    });
    FAIL() << "no exception";
  } catch (const std::runtime_error& e) {
    EXPECT_STREQ(e.what(), "a");
  }
  EXPECT_EQ(p.stats().suppressed_exceptions, 1u);
}

TEST_P(join_on_pools, on_explicit_pool_runs_there) {
  fjord::pool& p = pool();
  auto [a, b] = fjord::join(
      p, [&] { return p.owns_current_thread(); }, [&] { return p.owns_current_thread(); });
  EXPECT_TRUE(a);
  EXPECT_TRUE(b);
}

TEST(join, both_sides_run_in_parallel_when_b_blocks_for_a) {
  // b waits for a flag that a sets only after b started: completes only if b
  // is stolen and runs concurrently with a.
  fjord::pool p(fjord::pool_options{.workers = 2});
  std::atomic<bool> b_started{false};
  p.call([&] {
    fjord::join(
        [&] {
          while (!b_started.load()) {
            std::this_thread::yield();
          }
        },
        [&] { b_started = true; });
  });
  SUCCEED();
}

}  // namespace

namespace {

// A result whose move constructor throws once armed.
struct throws_when_moved {
  explicit throws_when_moved(bool arm) : armed(arm) {}
  // Throws on purpose:
  // NOLINTNEXTLINE(bugprone-exception-escape,performance-noexcept-move-constructor)
  throws_when_moved(throws_when_moved&& other) : armed(other.armed) {
    if (armed) {
      throw std::runtime_error("move");
    }
  }
  throws_when_moved(const throws_when_moved&) = delete;
  throws_when_moved& operator=(const throws_when_moved&) = delete;
  throws_when_moved& operator=(throws_when_moved&&) = delete;
  ~throws_when_moved() = default;
  bool armed;
};

INSTANTIATE_TEST_SUITE_P(workers, join_on_pools, fjord_test::worker_counts,
                         fjord_test::worker_count_name);

}  // namespace

TEST(join, b_runs_even_when_moving_as_result_throws) {
  // One worker: b is never stolen, so the joiner calls it directly after
  // taking a's result out of its slot.
  fjord::pool p(fjord::pool_options{.workers = 1});
  std::atomic<bool> b_ran{false};
  p.call([&] {
    EXPECT_THROW(fjord::join([] { return throws_when_moved(true); }, [&] { b_ran = true; }),
                 std::runtime_error);
  });
  EXPECT_TRUE(b_ran.load());
}
