// fjord::ranges: each algorithm over a range gives what the iterator form
// (checked against std elsewhere) gives, projections apply where std::ranges
// has them, positions come back as iterators of the range, or dangling for
// a temporary.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <numeric>
#include <ranges>
#include <span>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include "fjord/ranges.hpp"
#include "support/algorithm_inputs.hpp"

namespace {

using test_support::algorithm_policies;

struct person {
  std::string name;
  int age = 0;
  bool operator==(const person&) const = default;
  bool adult() const { return age >= 18; }
};

std::vector<person> people(std::size_t n) {
  const auto ages = test_support::random_ints(n, 41, 0, 90);
  std::vector<person> v(n);
  for (std::size_t i = 0; i < n; ++i) {
    v[i].name = std::to_string(i);  // (not "p" + ...: g++ 12 warns falsely, -Wrestrict)
    v[i].age = static_cast<int>(ages[i]);
  }
  return v;
}

TEST(ranges, sort_takes_a_range_a_comparison_and_a_projection) {
  for (const auto& policy : algorithm_policies()) {
    auto v = test_support::random_ints(50000, 3);
    auto want = v;
    std::ranges::sort(want);
    EXPECT_EQ(fjord::ranges::sort(policy, v), v.end());
    ASSERT_EQ(v, want);
    fjord::ranges::sort(policy, v, std::ranges::greater());
    std::ranges::sort(want, std::ranges::greater());
    ASSERT_EQ(v, want);

    auto by_age = people(30000);
    auto want_by_age = by_age;
    std::ranges::stable_sort(want_by_age, {}, &person::age);
    EXPECT_EQ(fjord::ranges::stable_sort(policy, by_age, {}, &person::age), by_age.end());
    ASSERT_EQ(by_age, want_by_age);

    std::deque<std::string> words;
    for (const auto& s : test_support::random_strings(20000, 8)) {
      words.push_back(s);
    }
    auto want_words = words;
    std::ranges::sort(want_words, std::ranges::greater());
    fjord::ranges::sort(policy, words, std::ranges::greater());
    ASSERT_EQ(words, want_words);
  }
}

TEST(ranges, searches_return_positions_in_the_range) {
  for (const auto& policy : algorithm_policies()) {
    const auto v = people(40000);
    const auto old = std::ranges::find_if(
        v, [](int age) { return age > 88; }, &person::age);
    EXPECT_EQ(fjord::ranges::find_if(
                  policy, v, [](int age) { return age > 88; }, &person::age),
              old);
    EXPECT_EQ(fjord::ranges::find_if_not(
                  policy, v, [](int age) { return age < 89; }, &person::age),
              old);
    EXPECT_EQ(fjord::ranges::find(policy, v, v[777].age, &person::age),
              std::ranges::find(v, v[777].age, &person::age));
    EXPECT_EQ(fjord::ranges::find(policy, v, 1000, &person::age), v.end());
    EXPECT_TRUE(fjord::ranges::any_of(
        policy, v, [](int age) { return age == 0; }, &person::age));
    EXPECT_TRUE(fjord::ranges::all_of(
        policy, v, [](int age) { return age <= 90; }, &person::age));
    EXPECT_TRUE(fjord::ranges::none_of(
        policy, v, [](int age) { return age < 0; }, &person::age));
    EXPECT_FALSE(fjord::ranges::all_of(policy, v, [](const person& p) { return p.age < 90; }));
    // A pointer to member as the predicate, as std::ranges allows.
    EXPECT_EQ(fjord::ranges::count_if(policy, v, &person::adult),
              std::ranges::count_if(v, &person::adult));
    EXPECT_EQ(fjord::ranges::find_if(policy, v, &person::adult),
              std::ranges::find_if(v, &person::adult));
    EXPECT_TRUE(fjord::ranges::any_of(policy, v, &person::adult));
    EXPECT_EQ(fjord::ranges::count_if(
                  policy, v, [](int age) { return age < 30; }, &person::age),
              std::ranges::count_if(
                  v, [](int age) { return age < 30; }, &person::age));
    EXPECT_EQ(fjord::ranges::count(policy, v, 42, &person::age),
              std::ranges::count(v, 42, &person::age));
    EXPECT_EQ(fjord::ranges::min_element(policy, v, {}, &person::age),
              std::ranges::min_element(v, {}, &person::age));
    EXPECT_EQ(fjord::ranges::max_element(policy, v, std::ranges::less(), &person::age),
              std::ranges::max_element(v, std::ranges::less(), &person::age));
  }
}

TEST(ranges, views_and_spans_work_and_temporaries_give_dangling) {
  const auto policy = fjord::par.on(test_support::two_workers());
  std::vector<int> v(100000);
  std::iota(v.begin(), v.end(), 0);
#if !defined(__clang__) || __clang_major__ >= 15
  // A view whose elements are values, not references. (clang 14 cannot
  // compile libstdc++ 12's views at all.)
  auto wide = v | std::views::transform([](int x) { return std::int64_t{x}; });
  EXPECT_EQ(fjord::ranges::reduce(policy, wide), std::int64_t{100000} * 99999 / 2);
  EXPECT_EQ(*fjord::ranges::find_if(policy, wide, [](std::int64_t x) { return x * x > 1000000; }),
            1001);
#endif
  // A span is a borrowed range: its positions outlive the span object.
  const auto it = fjord::ranges::find(policy, std::span<int>(v), 5000);
  static_assert(std::is_same_v<std::remove_const_t<decltype(it)>, std::span<int>::iterator>);
  EXPECT_EQ(*it, 5000);
  // A temporary vector is not: its position comes back as dangling.
  auto gone = fjord::ranges::sort(policy, std::vector<int>{3, 1, 2});
  static_assert(std::is_same_v<decltype(gone), std::ranges::dangling>);
}

TEST(ranges, elementwise_algorithms_and_scans_match_the_iterator_forms) {
  for (const auto& policy : algorithm_policies()) {
    const auto v = test_support::random_ints(30001, 9);
    std::vector<std::int64_t> out(v.size());
    std::vector<std::int64_t> want(v.size());

    EXPECT_EQ(
        fjord::ranges::transform(policy, v, out.begin(), [](std::int64_t x) { return 2 * x; }),
        out.end());
    std::ranges::transform(v, want.begin(), [](std::int64_t x) { return 2 * x; });
    ASSERT_EQ(out, want);

    const auto pv = people(5000);
    std::vector<int> ages(pv.size());
    fjord::ranges::transform(policy, pv, ages.begin(), std::negate<>(), &person::age);
    for (std::size_t i = 0; i < pv.size(); ++i) {
      ASSERT_EQ(ages[i], -pv[i].age);
    }

    std::vector<std::int64_t> kept(v.size());
    const auto kept_end =
        fjord::ranges::copy_if(policy, v, kept.begin(), [](std::int64_t x) { return x % 3 == 0; });
    std::vector<std::int64_t> want_kept;
    std::ranges::copy_if(v, std::back_inserter(want_kept),
                         [](std::int64_t x) { return x % 3 == 0; });
    ASSERT_TRUE(std::equal(kept.begin(), kept_end, want_kept.begin(), want_kept.end()));

    fjord::ranges::inclusive_scan(policy, v, out.begin());
    std::inclusive_scan(v.begin(), v.end(), want.begin());
    ASSERT_EQ(out, want);
    fjord::ranges::exclusive_scan(policy, v, out.begin(), std::int64_t{7});
    std::exclusive_scan(v.begin(), v.end(), want.begin(), std::int64_t{7});
    ASSERT_EQ(out, want);

    EXPECT_EQ(fjord::ranges::reduce(policy, v, std::int64_t{5}),
              std::accumulate(v.begin(), v.end(), std::int64_t{5}));
    EXPECT_EQ(fjord::ranges::transform_reduce(policy, v, std::int64_t{0}, std::plus<>(),
                                              [](std::int64_t x) { return x * x; }),
              std::transform_reduce(v.begin(), v.end(), std::int64_t{0}, std::plus<>(),
                                    [](std::int64_t x) { return x * x; }));

    std::vector<int> filled(20000);
    EXPECT_EQ(fjord::ranges::fill(policy, filled, 4), filled.end());
    EXPECT_TRUE(std::ranges::all_of(filled, [](int x) { return x == 4; }));
    fjord::ranges::generate(policy, filled, [] { return 6; });
    EXPECT_TRUE(std::ranges::all_of(filled, [](int x) { return x == 6; }));

    const auto before = people(9000);
    auto by_age = before;
    fjord::ranges::for_each(
        policy, std::span(by_age), [](int& age) { age += 1; }, &person::age);
    for (std::size_t i = 0; i < by_age.size(); ++i) {
      ASSERT_EQ(by_age[i].age, before[i].age + 1);
    }
    std::atomic<std::int64_t> total{0};
    fjord::ranges::for_each(policy, filled,
                            [&](int x) { total.fetch_add(x, std::memory_order_relaxed); });
    EXPECT_EQ(total.load(), std::int64_t{6} * 20000);
  }
}

TEST(ranges, two_range_and_transform_scan_forms_match_std) {
  for (const auto& policy : algorithm_policies()) {
    for (const std::size_t n : test_support::algorithm_sizes()) {
      const auto a = test_support::random_ints(n, n + 11);
      const auto b = test_support::random_ints(n + 5, n + 12);  // longer: r1 sets the length
      std::vector<std::int64_t> out(n);
      std::vector<std::int64_t> want(n);

      EXPECT_EQ(fjord::ranges::transform(policy, a, b, out.begin(), std::minus<>()),
                out.begin() + static_cast<std::ptrdiff_t>(n));
      std::transform(a.begin(), a.end(), b.begin(), want.begin(), std::minus<>());
      ASSERT_EQ(out, want) << n;
      // The shorter range ends a binary transform, as std::ranges::transform's.
      std::vector<std::int64_t> wide(n + 5, 0);
      EXPECT_EQ(fjord::ranges::transform(policy, b, a, wide.begin(), std::plus<>()),
                wide.begin() + static_cast<std::ptrdiff_t>(n));

      ASSERT_EQ(fjord::ranges::transform_reduce(policy, a, b, std::int64_t{3}),
                std::transform_reduce(a.begin(), a.end(), b.begin(), std::int64_t{3}))
          << n;
      ASSERT_EQ(
          fjord::ranges::transform_reduce(
              policy, a, b, std::int64_t{0}, std::plus<>(),
              [](std::int64_t x, std::int64_t y) { return x > y ? x : y; }),
          std::transform_reduce(a.begin(), a.end(), b.begin(), std::int64_t{0}, std::plus<>(),
                                [](std::int64_t x, std::int64_t y) { return x > y ? x : y; }));

      fjord::ranges::inclusive_scan(policy, a, out.begin(), std::plus<>(), std::int64_t{-4});
      std::inclusive_scan(a.begin(), a.end(), want.begin(), std::plus<>(), std::int64_t{-4});
      ASSERT_EQ(out, want) << n;
      auto square = [](std::int64_t x) { return x * x; };
      fjord::ranges::transform_inclusive_scan(policy, a, out.begin(), std::plus<>(), square);
      std::transform_inclusive_scan(a.begin(), a.end(), want.begin(), std::plus<>(), square);
      ASSERT_EQ(out, want) << n;
      fjord::ranges::transform_inclusive_scan(policy, a, out.begin(), std::plus<>(), square,
                                              std::int64_t{9});
      std::transform_inclusive_scan(a.begin(), a.end(), want.begin(), std::plus<>(), square,
                                    std::int64_t{9});
      ASSERT_EQ(out, want) << n;
      fjord::ranges::transform_exclusive_scan(policy, a, out.begin(), std::int64_t{2},
                                              std::plus<>(), square);
      std::transform_exclusive_scan(a.begin(), a.end(), want.begin(), std::int64_t{2},
                                    std::plus<>(), square);
      ASSERT_EQ(out, want) << n;
    }
  }
}

TEST(ranges, a_second_range_shorter_than_the_first_is_rejected_with_both_lengths) {
  const std::vector<int> a(10, 1);
  const std::vector<int> b(4, 1);
  try {
    (void)fjord::ranges::transform_reduce(fjord::par, a, b, 0);
    FAIL() << "no exception";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(
        std::string(e.what()).find("the second range has 4 elements, fewer than the first's 10"),
        std::string::npos)
        << e.what();
  }
}

}  // namespace
