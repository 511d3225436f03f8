// sort and stable_sort against std on shapes that break sorts: random,
// sorted, reversed, all equal, few keys; strings, move-only and types
// without a default constructor; a throwing comparator.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <numeric>
#include <random>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "fjord/sort.hpp"
#include "support/algorithm_inputs.hpp"

namespace {

using test_support::algorithm_policies;
using test_support::algorithm_sizes;

TEST(sort, sorts_every_size_and_shape) {
  for (const auto& policy : algorithm_policies()) {
    for (const std::size_t n : algorithm_sizes()) {
      std::vector<std::vector<std::int64_t>> shapes;
      shapes.push_back(test_support::random_ints(n, n + 120, -1000000, 1000000));
      shapes.push_back(test_support::random_ints(n, n + 121, 0, 3));
      std::vector<std::int64_t> ascending(n);
      std::iota(ascending.begin(), ascending.end(), 0);
      shapes.push_back(ascending);
      shapes.emplace_back(ascending.rbegin(), ascending.rend());
      shapes.emplace_back(n, 5);
      for (auto& v : shapes) {
        auto want = v;
        std::sort(want.begin(), want.end());
        fjord::sort(policy, v.begin(), v.end());
        ASSERT_EQ(v, want) << n;
      }
    }
  }
}

template <class T>
void check_integer_sort() {
  std::mt19937_64 rng(99);
  std::vector<T> v(70000);
  for (auto& x : v) {
    x = static_cast<T>(rng());
  }
  v[5] = std::numeric_limits<T>::min();
  v[6] = std::numeric_limits<T>::max();
  v[7] = T{0};
  for (const auto& policy : algorithm_policies()) {
    auto up = v;
    auto want_up = v;
    std::sort(want_up.begin(), want_up.end());
    fjord::sort(policy, up.begin(), up.end());
    ASSERT_EQ(up, want_up);
    auto down = v;
    auto want_down = v;
    std::sort(want_down.begin(), want_down.end(), std::greater<T>());
    fjord::sort(policy, down.begin(), down.end(), std::greater<T>());
    ASSERT_EQ(down, want_down);
    fjord::stable_sort(policy, down.begin(), down.end(), std::less<>());
    ASSERT_EQ(down, want_up);
  }
}

// Integers by < or > take the radix path: every width, signed and not,
// with the extremes, up and down.
TEST(sort, sorts_integers_of_every_width_both_ways) {
  check_integer_sort<std::int8_t>();
  check_integer_sort<std::uint8_t>();
  check_integer_sort<std::int16_t>();
  check_integer_sort<std::uint16_t>();
  check_integer_sort<std::int32_t>();
  check_integer_sort<std::uint32_t>();
  check_integer_sort<std::int64_t>();
  check_integer_sort<std::uint64_t>();
  check_integer_sort<char>();
}

TEST(sort, takes_a_comparator_and_sorts_strings) {
  for (const auto& policy : algorithm_policies()) {
    auto words = test_support::random_strings(30000, 3);
    auto want = words;
    std::sort(want.begin(), want.end(), std::greater<>());
    fjord::sort(policy, words.begin(), words.end(), std::greater<>());
    ASSERT_EQ(words, want);
  }
}

TEST(stable_sort, keeps_equal_elements_in_order) {
  for (const auto& policy : algorithm_policies()) {
    for (const std::size_t n : algorithm_sizes()) {
      const auto keys = test_support::random_ints(n, n + 130, 0, 20);
      std::vector<std::pair<std::int64_t, std::size_t>> v(n);
      for (std::size_t i = 0; i < n; ++i) {
        v[i] = {keys[i], i};
      }
      auto by_key = [](const auto& a, const auto& b) { return a.first < b.first; };
      auto want = v;
      std::stable_sort(want.begin(), want.end(), by_key);
      fjord::stable_sort(policy, v.begin(), v.end(), by_key);
      ASSERT_EQ(v, want) << n;
    }
  }
}

TEST(sort, sorts_move_only_values) {
  std::vector<std::unique_ptr<int>> v;
  for (int i = 0; i < 50000; ++i) {
    v.push_back(std::make_unique<int>((i * 7919) % 50000));
  }
  fjord::sort(fjord::par.on(test_support::two_workers()), v.begin(), v.end(),
              [](const auto& a, const auto& b) { return *a < *b; });
  for (int i = 0; i < 50000; ++i) {
    ASSERT_NE(v[static_cast<std::size_t>(i)], nullptr);
    ASSERT_EQ(*v[static_cast<std::size_t>(i)], i);
  }
}

struct no_default {
  explicit no_default(int v) : value(v) {}
  int value;
  bool operator<(const no_default& o) const { return value < o.value; }
};

TEST(sort, sorts_values_without_a_default_constructor) {
  std::vector<no_default> v;
  for (int i = 0; i < 40000; ++i) {
    v.emplace_back((i * 31) % 40000);
  }
  fjord::stable_sort(fjord::par.on(test_support::two_workers()), v.begin(), v.end());
  for (int i = 0; i < 40000; ++i) {
    ASSERT_EQ(v[static_cast<std::size_t>(i)].value, i);
  }
}

TEST(sort, a_throwing_comparator_reaches_the_caller_and_leaks_nothing) {
  for (const auto& policy : algorithm_policies()) {
    auto words = test_support::random_strings(50000, 9);
    std::atomic<long> calls{0};
    EXPECT_THROW(fjord::sort(policy, words.begin(), words.end(),
                             [&](const std::string& a, const std::string& b) {
                               if (calls.fetch_add(1, std::memory_order_relaxed) == 200000) {
                                 throw std::runtime_error("compare");
                               }
                               return a < b;
                             }),
                 std::runtime_error);
    EXPECT_EQ(words.size(), 50000U);
  }
}

TEST(sort, a_reversed_range_is_rejected) {
  std::vector<int> v(4);
  EXPECT_THROW(fjord::sort(fjord::par, v.end(), v.begin()), std::invalid_argument);
  EXPECT_THROW(fjord::stable_sort(fjord::par, v.end(), v.begin()), std::invalid_argument);
}

}  // namespace
