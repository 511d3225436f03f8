// find_if and friends: the first match by position, stopping early.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <vector>

#include "fjord/find.hpp"
#include "support/algorithm_inputs.hpp"

namespace {

using test_support::algorithm_policies;
using test_support::algorithm_sizes;

TEST(find_if, finds_the_first_match_like_std) {
  for (const auto& policy : algorithm_policies()) {
    for (const std::size_t n : algorithm_sizes()) {
      const auto v = test_support::random_ints(n, n + 60, 0, 5000);
      for (const std::int64_t target : {0, 17, 4999, -1}) {
        auto is_target = [&](std::int64_t x) { return x == target; };
        ASSERT_EQ(fjord::find_if(policy, v.begin(), v.end(), is_target),
                  std::find_if(v.begin(), v.end(), is_target))
            << n << " " << target;
        ASSERT_EQ(fjord::find(policy, v.begin(), v.end(), target),
                  std::find(v.begin(), v.end(), target));
        ASSERT_EQ(fjord::find_if_not(policy, v.begin(), v.end(), is_target),
                  std::find_if_not(v.begin(), v.end(), is_target));
      }
    }
  }
}

TEST(find_if, a_match_in_every_piece_still_gives_the_first) {
  for (const auto& policy : algorithm_policies()) {
    std::vector<int> v(200000, 0);
    for (std::size_t i = 150000; i < v.size(); i += 1000) {
      v[i] = 1;
    }
    v[123457] = 1;
    EXPECT_EQ(fjord::find(policy, v.begin(), v.end(), 1) - v.begin(), 123457);
  }
}

TEST(find_if, stops_early_after_an_early_match) {
  std::vector<int> v(1 << 22, 0);
  v[10] = 1;
  std::atomic<std::size_t> tested{0};
  auto it =
      fjord::find_if(fjord::par.on(test_support::two_workers()), v.begin(), v.end(), [&](int x) {
        tested.fetch_add(1, std::memory_order_relaxed);
        return x == 1;
      });
  EXPECT_EQ(it - v.begin(), 10);
  EXPECT_LT(tested.load(), v.size() / 2);
}

TEST(any_all_none, agree_with_std) {
  for (const auto& policy : algorithm_policies()) {
    for (const std::size_t n : algorithm_sizes()) {
      const auto v = test_support::random_ints(n, n + 70, 0, 100000);
      auto big = [](std::int64_t x) { return x > 99990; };
      auto nonneg = [](std::int64_t x) { return x >= 0; };
      ASSERT_EQ(fjord::any_of(policy, v.begin(), v.end(), big),
                std::any_of(v.begin(), v.end(), big));
      ASSERT_EQ(fjord::all_of(policy, v.begin(), v.end(), nonneg),
                std::all_of(v.begin(), v.end(), nonneg));
      ASSERT_EQ(fjord::none_of(policy, v.begin(), v.end(), big),
                std::none_of(v.begin(), v.end(), big));
    }
  }
}

TEST(find_if, an_exception_from_pred_reaches_the_caller) {
  std::vector<int> v(100000, 0);
  EXPECT_THROW((void)fjord::find_if(fjord::par.on(test_support::two_workers()), v.begin(), v.end(),
                                    [&](const int& x) -> bool {
                                      if (&x == &v[77777]) {
                                        throw std::domain_error("pred");
                                      }
                                      return false;
                                    }),
               std::domain_error);
}

}  // namespace
