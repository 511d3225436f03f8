// find_if and friends: the first match by position, stopping early.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <thread>
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

TEST(any_of, every_piece_stops_at_a_match_found_anywhere) {
  // Two pieces on two workers. The second half matches at once; the first
  // half holds none and is slow (1 us an element), and starts only once the
  // second has begun. find_if would scan all of the first half (a match
  // below the one found could still be there); any_of and none_of stop it
  // at its next check, within 256 elements once the match is recorded.
  constexpr std::size_t half = 100000;
  std::vector<int> v(2 * half, 0);
  std::fill(v.begin() + half, v.end(), 1);
  const auto policy = fjord::par.on(test_support::two_workers()).with_grain(half);
  for (const bool any : {true, false}) {
    std::atomic<bool> second_started{false};
    std::atomic<std::size_t> tested_in_first{0};
    auto pred = [&](const int& x) -> bool {
      if (&x >= &v[half]) {
        second_started.store(true);
        return true;
      }
      if (&x == &v[0]) {
        const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(10);
        while (!second_started.load() && std::chrono::steady_clock::now() < give_up) {
          std::this_thread::yield();
        }
      }
      tested_in_first.fetch_add(1, std::memory_order_relaxed);
      test_support::busy_for(std::chrono::microseconds(1));
      return false;
    };
    const bool result = any ? fjord::any_of(policy, v.begin(), v.end(), pred)
                            : !fjord::none_of(policy, v.begin(), v.end(), pred);
    EXPECT_TRUE(result);
    EXPECT_LT(tested_in_first.load(), half / 2) << (any ? "any_of" : "none_of");
  }
}

TEST(all_of, stops_at_a_failure_found_anywhere_and_takes_mutable_references) {
  std::vector<int> v(200000, 1);
  v[150000] = 0;
  std::atomic<std::size_t> tested{0};
  EXPECT_FALSE(fjord::all_of(fjord::par.on(test_support::two_workers()), v.begin(), v.end(),
                             [&](int& x) {  // int&, as std::execution::par accepts
                               tested.fetch_add(1, std::memory_order_relaxed);
                               return x == 1;
                             }));
  EXPECT_TRUE(
      fjord::all_of(fjord::par, v.begin(), v.begin() + 1000, [](int& x) { return x == 1; }));
  EXPECT_EQ(
      fjord::find_if_not(fjord::par, v.begin(), v.end(), [](int& x) { return x == 1; }) - v.begin(),
      150000);
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
