// FJORD_ASSERT and the invariants it guards. The death tests need the
// library itself built with assertions (Debug, ASan, TSan: the asan and
// tsan CI runs); a Release build says so and skips them.

#include "fjord/detail/assert.hpp"

#include <gtest/gtest.h>

#include "fjord/detail/census.hpp"
#include "fjord/detail/completion_latch.hpp"
#include "fjord/detail/result_slot.hpp"

namespace {

using fjord::detail::census;
using fjord::detail::census_count;

TEST(assertions, the_condition_is_evaluated_once_when_on_and_never_when_off) {
  int evaluated = 0;
  FJORD_ASSERT(++evaluated == 1, "evaluated once");
  EXPECT_EQ(evaluated, FJORD_ASSERTIONS ? 1 : 0);
}

TEST(assertions, are_on_in_debug_and_sanitizer_builds) {
#if defined(NDEBUG) && !FJORD_ASAN && !FJORD_TSAN
  const bool expected = false;
#else
  const bool expected = true;
#endif
  EXPECT_EQ(FJORD_ASSERTIONS != 0, expected);
}

TEST(census, counts_each_state_in_its_own_bits) {
  census c;
  c.add_searcher();
  c.add_searcher();
  c.add_thief();
  c.add_sleeper();
  c.add_sleeper();
  c.add_sleeper();
  census_count n = c.load(std::memory_order_relaxed);
  EXPECT_EQ(n.thieves(), 1u);
  EXPECT_EQ(n.searchers(), 2u);
  EXPECT_EQ(n.sleepers(), 3u);
  EXPECT_FALSE(n.should_wake());  // someone searches

  const census_count before = c.remove_searcher();
  EXPECT_EQ(before.searchers(), 2u);
  EXPECT_EQ(before.thieves(), 1u);
  // The counts are independent: a registered thief need not be searching.
  EXPECT_EQ(c.load(std::memory_order_relaxed).thieves(), 1u);
  c.remove_thief();
  c.remove_searcher();
  n = c.load(std::memory_order_relaxed);
  EXPECT_EQ(n.searchers(), 0u);
  EXPECT_EQ(n.thieves(), 0u);
  EXPECT_TRUE(n.should_wake());  // sleepers and nobody searching

  c.sleeper_to_searcher();  // one step: never seen in neither state
  n = c.load(std::memory_order_relaxed);
  EXPECT_EQ(n.sleepers(), 2u);
  EXPECT_EQ(n.searchers(), 1u);
  c.remove_sleeper();
  c.remove_sleeper();
  c.remove_searcher();
  EXPECT_EQ(c.load(std::memory_order_relaxed).sleepers(), 0u);
  EXPECT_FALSE(c.load(std::memory_order_relaxed).should_wake());
}

TEST(census, a_full_count_does_not_spill_into_the_next_field) {
  census c;
  for (std::uint32_t i = 0; i < census::max_threads; ++i) {
    c.add_searcher();
  }
  const census_count n = c.load(std::memory_order_relaxed);
  EXPECT_EQ(n.searchers(), census::max_threads);
  EXPECT_EQ(n.sleepers(), 0u);
  EXPECT_EQ(n.thieves(), 0u);
}

#if FJORD_ASSERTIONS

TEST(assertions_death, a_failed_assertion_names_the_place_and_the_invariant) {
  EXPECT_DEATH(FJORD_ASSERT(1 + 1 == 3, "arithmetic holds"),
               "fjord: internal assertion failed at .*assert_test.cpp:[0-9]+: arithmetic holds "
               "\\(1 \\+ 1 == 3\\)");
}

TEST(assertions_death, census_underflow_and_overflow) {
  EXPECT_DEATH(census().remove_sleeper(), "sleeper count underflows");
  EXPECT_DEATH(census().remove_searcher(), "searcher count underflows");
  EXPECT_DEATH(census().sleeper_to_searcher(), "does not count");
  EXPECT_DEATH(census().remove_thief(), "thief count underflows");
  EXPECT_DEATH(
      {
        census c;
        for (std::uint32_t i = 0; i <= census::max_threads; ++i) {
          c.add_sleeper();
        }
      },
      "sleeper count overflows");
}

TEST(assertions_death, a_latch_counted_below_zero) {
  EXPECT_DEATH(
      {
        fjord::detail::completion_latch latch(1);
        static_cast<void>(latch.count_down());
        static_cast<void>(latch.count_down());
      },
      "counted down below zero");
}

TEST(assertions_death, a_result_taken_twice) {
  EXPECT_DEATH(
      {
        fjord::detail::result_slot<int> slot;
        auto f = [] { return 7; };
        slot.run(f);
        static_cast<void>(slot.take());
        static_cast<void>(slot.take());
      },
      "taken twice");
}

#endif  // Without assertions, the_condition_is_evaluated_once... checks they are compiled out.

}  // namespace
