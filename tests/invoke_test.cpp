#include "fjord/invoke.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <stdexcept>
#include <string>

#include "fjord/pool.hpp"
#include "support/pool_fixture.hpp"

namespace {

// Runs on pools of 1, 2 and 4 workers and checks that nothing is left behind.
class invoke_on_pools : public fjord_test::pool_fixture {};

TEST(invoke, single_closure) {
  auto t = fjord::invoke([] { return 3; });
  EXPECT_EQ(std::get<0>(t), 3);
}

TEST(invoke, many_results_in_argument_order) {
  auto [a, b, c, d, e] =
      fjord::invoke([] { return 1; }, [] { return 2.5; }, [] { return std::string("three"); },
                    [] {}, [] { return 'e'; });
  EXPECT_EQ(a, 1);
  EXPECT_EQ(b, 2.5);
  EXPECT_EQ(c, "three");
  static_cast<void>(d);
  EXPECT_EQ(e, 'e');
}

TEST(invoke, all_void_returns_void) {
  std::atomic<int> n{0};
  fjord::invoke([&] { n += 1; }, [&] { n += 2; }, [&] { n += 4; });
  EXPECT_EQ(n.load(), 7);
  static_assert(std::is_void_v<decltype(fjord::invoke([] {}, [] {}))>);
}

TEST_P(invoke_on_pools, first_exception_in_argument_order_wins) {
  fjord::pool& p = pool();
  try {
    p.call([] {
      fjord::invoke([] {}, [] { throw std::runtime_error("second"); },
                    [] { throw std::logic_error("third"); });
    });
    FAIL();
  } catch (const std::runtime_error& e) {
    EXPECT_STREQ(e.what(), "second");
  }
  EXPECT_EQ(p.stats().suppressed_exceptions, 1u);
}

INSTANTIATE_TEST_SUITE_P(workers, invoke_on_pools, fjord_test::worker_counts,
                         fjord_test::worker_count_name);

}  // namespace
