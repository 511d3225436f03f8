// sort and stable_sort against std on shapes that break sorts: random,
// sorted, reversed, all equal, few keys; strings (which take a radix path
// by < and >), move-only and types without a default constructor; a
// throwing comparator.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <limits>
#include <memory>
#include <numeric>
#include <random>
#include <stdexcept>
#include <string>
#include <string_view>
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

// Strings that make a prefix-key sort go wrong if any detail is off: every
// byte value (unsigned order: 0xFF after 'z'), embedded zero bytes, strings
// that are prefixes of others and of themselves padded with zeros, lengths
// around the 7-byte key, long shared prefixes (ties resolved level after
// level, and past the depth where whole suffixes are compared), empty
// strings and many duplicates.
std::vector<std::string> hard_strings(std::size_t n, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  const std::string long_prefix(500, 'p');
  std::vector<std::string> v(n);
  for (auto& s : v) {
    switch (rng() % 6) {
      case 0: {  // any bytes, short
        s.resize(rng() % 12);
        for (char& c : s) {
          c = static_cast<char>(rng() % 256);
        }
        break;
      }
      case 1: {  // few letters and zeros: prefixes and zero padding
        s.resize(rng() % 17);
        for (char& c : s) {
          c = "a\0b"[rng() % 3];
        }
        break;
      }
      case 2:  // a 7-byte tie, then one of a few tails
        s = "abcdefg" + std::string(rng() % 3, 'z') + std::to_string(rng() % 5);
        break;
      case 3:  // a shared prefix past the deepest key, then random
        s = long_prefix + std::to_string(rng() % 1000);
        break;
      case 4:  // shared prefix of 20 bytes
        s = "https://example.com/" + std::to_string(rng() % 100000);
        break;
      default:  // duplicates and empty strings
        s = rng() % 2 == 0 ? std::string() : std::string("dup");
        break;
    }
  }
  return v;
}

TEST(sort, sorts_strings_of_every_byte_and_shape_both_ways) {
  for (const auto& policy : algorithm_policies()) {
    for (const std::size_t n : {std::size_t{0}, std::size_t{1}, std::size_t{4097},
                                std::size_t{20000}, std::size_t{90001}}) {
      const auto input = hard_strings(n, n + 7);
      auto want_up = input;
      std::sort(want_up.begin(), want_up.end());
      auto want_down = input;
      std::sort(want_down.begin(), want_down.end(), std::greater<>());
      auto up = input;
      fjord::sort(policy, up.begin(), up.end());
      ASSERT_EQ(up, want_up) << n;
      auto down = input;
      fjord::stable_sort(policy, down.begin(), down.end(), std::greater<std::string>());
      ASSERT_EQ(down, want_down) << n;
      std::deque<std::string> in_deque(input.begin(), input.end());
      fjord::sort(policy, in_deque.begin(), in_deque.end(), std::less<std::string>());
      ASSERT_TRUE(std::equal(in_deque.begin(), in_deque.end(), want_up.begin(), want_up.end()));
    }
  }
}

// Equal string_views are told apart by where they point: stable_sort keeps
// them in their input order, up and down.
TEST(stable_sort, keeps_equal_strings_in_order) {
  const auto text = hard_strings(60000, 17);
  std::vector<std::string_view> views(text.begin(), text.end());
  auto by_text = [](std::string_view a, std::string_view b) { return a < b; };
  for (const auto& policy : algorithm_policies()) {
    auto up = views;
    auto want_up = views;
    std::stable_sort(want_up.begin(), want_up.end(), by_text);
    fjord::stable_sort(policy, up.begin(), up.end());
    ASSERT_TRUE(
        std::equal(up.begin(), up.end(), want_up.begin(), want_up.end(),
                   [](std::string_view a, std::string_view b) { return a.data() == b.data(); }));
    auto down = views;
    auto want_down = views;
    std::stable_sort(want_down.begin(), want_down.end(), std::greater<>());
    fjord::stable_sort(policy, down.begin(), down.end(), std::greater<>());
    ASSERT_TRUE(
        std::equal(down.begin(), down.end(), want_down.begin(), want_down.end(),
                   [](std::string_view a, std::string_view b) { return a.data() == b.data(); }));
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
