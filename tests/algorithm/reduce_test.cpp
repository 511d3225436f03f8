// reduce, transform_reduce, count, min/max_element and parallel_reduce
// against their sequential results.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <limits>
#include <memory>
#include <numeric>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "fjord/count.hpp"
#include "fjord/minmax_element.hpp"
#include "fjord/parallel_for.hpp"
#include "fjord/pool.hpp"
#include "fjord/reduce.hpp"
#include "support/algorithm_inputs.hpp"

namespace {

using test_support::algorithm_policies;
using test_support::algorithm_sizes;

TEST(reduce, sums_every_size_class_like_std) {
  for (const auto& policy : algorithm_policies()) {
    for (const std::size_t n : algorithm_sizes()) {
      const auto v = test_support::random_ints(n, 10 + n);
      const std::int64_t want = std::accumulate(v.begin(), v.end(), std::int64_t{0});
      ASSERT_EQ(fjord::reduce(policy, v.begin(), v.end()), want) << n;
      ASSERT_EQ(fjord::reduce(policy, v.begin(), v.end(), std::int64_t{5}), want + 5) << n;
      ASSERT_EQ(fjord::reduce(policy, v.begin(), v.end(), std::int64_t{0},
                              [](std::int64_t a, std::int64_t b) { return std::max(a, b); }),
                n == 0 ? 0 : std::max<std::int64_t>(0, *std::max_element(v.begin(), v.end())));
    }
  }
}

TEST(reduce, keeps_index_order_for_an_associative_but_not_commutative_op) {
  for (const auto& policy : algorithm_policies()) {
    for (const std::size_t n : {std::size_t{0}, std::size_t{1}, std::size_t{999}, std::size_t{5000},
                                std::size_t{40000}}) {
      const auto words = test_support::random_strings(n, n);
      const std::string want = std::accumulate(words.begin(), words.end(), std::string(">"));
      ASSERT_EQ(fjord::reduce(policy, words.begin(), words.end(), std::string(">"), std::plus<>()),
                want)
          << n;
    }
  }
}

TEST(reduce, elements_convert_to_the_sum_type_implicitly) {
  std::vector<const char*> words(3000, "ab");
  const std::string joined =
      fjord::reduce(fjord::par.on(test_support::two_workers()).with_grain(100), words.begin(),
                    words.end(), std::string(), std::plus<>());
  EXPECT_EQ(joined.size(), 6000U);
}

TEST(reduce, the_first_exception_wins_and_later_pieces_are_skipped) {
  const std::size_t n = 200'000;  // 2 us each: ~0.2 s if nothing were skipped
  std::vector<int> v(n, 1);
  std::atomic<std::size_t> calls{0};
  try {
    (void)fjord::transform_reduce(fjord::par.on(test_support::two_workers()).with_grain(1000),
                                  v.begin(), v.end(), 0, std::plus<>(), [&](const int& x) {
                                    test_support::busy_for(std::chrono::microseconds(2));
                                    calls.fetch_add(1, std::memory_order_relaxed);
                                    if (&x == &v[0]) {
                                      throw std::out_of_range("first");
                                    }
                                    return x;
                                  });
    FAIL() << "no exception";
  } catch (const std::out_of_range& e) {
    EXPECT_STREQ(e.what(), "first");
  }
  EXPECT_LT(calls.load(), n / 10);
}

TEST(reduce, seq_is_std_reduce) {
  std::vector<int> v{1, 2, 3};
  EXPECT_EQ(fjord::reduce(fjord::seq, v.begin(), v.end()), 6);
}

TEST(reduce, deterministic_sums_are_bit_identical_on_any_pool) {
  const auto v = test_support::random_doubles(300001, 7);
  auto bits = [](double d) {
    std::uint64_t b = 0;
    std::memcpy(&b, &d, sizeof b);
    return b;
  };
  const auto policy = fjord::par.deterministic();
  const double on_default = fjord::reduce(policy, v.begin(), v.end(), 0.0);
  for (int round = 0; round < 5; ++round) {
    EXPECT_EQ(bits(fjord::reduce(policy.on(test_support::one_worker()), v.begin(), v.end(), 0.0)),
              bits(on_default));
    EXPECT_EQ(bits(fjord::reduce(policy.on(test_support::two_workers()), v.begin(), v.end(), 0.0)),
              bits(on_default));
    // From inside a worker, where the call does not enter through pool::call.
    test_support::two_workers().call(
        [&] { EXPECT_EQ(bits(fjord::reduce(policy, v.begin(), v.end(), 0.0)), bits(on_default)); });
  }
  const double plain = std::accumulate(v.begin(), v.end(), 0.0);
  EXPECT_NEAR(on_default, plain, 1e-9);
}

TEST(reduce, an_exception_from_op_reaches_the_caller) {
  for (const auto& policy : algorithm_policies()) {
    std::vector<int> v(60000, 1);
    std::atomic<int> calls{0};
    EXPECT_THROW((void)fjord::reduce(policy, v.begin(), v.end(), 0,
                                     [&](int a, int b) {
                                       auto owned = std::make_unique<int>(a);
                                       if (calls.fetch_add(1) == 30000) {
                                         throw std::length_error("op");
                                       }
                                       return a + b;
                                     }),
                 std::length_error);
  }
}

TEST(transform_reduce, all_three_forms_match_std) {
  for (const auto& policy : algorithm_policies()) {
    for (const std::size_t n : algorithm_sizes()) {
      const auto a = test_support::random_ints(n, n + 20);
      const auto b = test_support::random_ints(n, n + 21);
      ASSERT_EQ(fjord::transform_reduce(policy, a.begin(), a.end(), b.begin(), std::int64_t{3}),
                std::inner_product(a.begin(), a.end(), b.begin(), std::int64_t{3}));
      auto diff = [](std::int64_t x, std::int64_t y) { return (x - y) * (x - y); };
      ASSERT_EQ(fjord::transform_reduce(policy, a.begin(), a.end(), b.begin(), std::int64_t{0},
                                        std::plus<>(), diff),
                std::transform_reduce(a.begin(), a.end(), b.begin(), std::int64_t{0}, std::plus<>(),
                                      diff));
      auto square = [](std::int64_t x) { return x * x; };
      ASSERT_EQ(fjord::transform_reduce(policy, a.begin(), a.end(), std::int64_t{1}, std::plus<>(),
                                        square),
                std::transform_reduce(a.begin(), a.end(), std::int64_t{1}, std::plus<>(), square));
    }
  }
}

TEST(transform_reduce, the_transform_may_change_the_type) {
  const std::vector<float> v(100000, 0.5F);
  const double sum = fjord::transform_reduce(fjord::par, v.begin(), v.end(), 0.0, std::plus<>(),
                                             [](float x) { return static_cast<double>(x); });
  EXPECT_DOUBLE_EQ(sum, 50000.0);
}

TEST(count, count_and_count_if_match_std) {
  for (const auto& policy : algorithm_policies()) {
    for (const std::size_t n : algorithm_sizes()) {
      const auto v = test_support::random_ints(n, n + 30, 0, 9);
      ASSERT_EQ(fjord::count(policy, v.begin(), v.end(), 4), std::count(v.begin(), v.end(), 4));
      auto odd = [](std::int64_t x) { return x % 2 == 1; };
      ASSERT_EQ(fjord::count_if(policy, v.begin(), v.end(), odd),
                std::count_if(v.begin(), v.end(), odd));
    }
  }
}

TEST(minmax_element, return_the_first_extreme_like_std) {
  for (const auto& policy : algorithm_policies()) {
    for (const std::size_t n : algorithm_sizes()) {
      // Few distinct values: many ties, so "first" matters.
      const auto v = test_support::random_ints(n, n + 40, 0, 5);
      ASSERT_EQ(fjord::min_element(policy, v.begin(), v.end()),
                std::min_element(v.begin(), v.end()))
          << n;
      ASSERT_EQ(fjord::max_element(policy, v.begin(), v.end()),
                std::max_element(v.begin(), v.end()))
          << n;
      auto by_last_digit = [](std::int64_t x, std::int64_t y) { return x % 3 < y % 3; };
      ASSERT_EQ(fjord::min_element(policy, v.begin(), v.end(), by_last_digit),
                std::min_element(v.begin(), v.end(), by_last_digit));
      ASSERT_EQ(fjord::max_element(policy, v.begin(), v.end(), by_last_digit),
                std::max_element(v.begin(), v.end(), by_last_digit));
    }
  }
}

TEST(count_and_minmax, take_predicates_and_comparisons_of_mutable_references) {
  // std::execution::par accepts these; so must fjord::par.
  for (const auto& policy : test_support::algorithm_policies()) {
    std::vector<int> v = {5, 1, 9, 1, 9, 3};
    EXPECT_EQ(fjord::count_if(policy, v.begin(), v.end(), [](int& x) { return x == 9; }), 2);
    EXPECT_EQ(fjord::min_element(policy, v.begin(), v.end(), [](int& a, int& b) { return a < b; }) -
                  v.begin(),
              1);
    EXPECT_EQ(fjord::max_element(policy, v.begin(), v.end(), [](int& a, int& b) { return a < b; }) -
                  v.begin(),
              2);
  }
}

TEST(count_and_minmax, an_exception_from_the_user_reaches_the_caller) {
  for (const auto& policy : test_support::algorithm_policies()) {
    const auto v = test_support::random_ints(50000, 91);
    auto throws_at = [&](const std::int64_t& x) {
      if (&x == &v[43210]) {
        throw std::domain_error("user");
      }
    };
    EXPECT_THROW((void)fjord::count_if(policy, v.begin(), v.end(),
                                       [&](const std::int64_t& x) {
                                         throws_at(x);
                                         return x > 0;
                                       }),
                 std::domain_error);
    EXPECT_THROW((void)fjord::min_element(policy, v.begin(), v.end(),
                                          [&](const std::int64_t& a, const std::int64_t& b) {
                                            throws_at(a);
                                            throws_at(b);
                                            return a < b;
                                          }),
                 std::domain_error);
  }
}

TEST(parallel_reduce, sums_pieces_of_an_index_range_and_of_iterators) {
  for (const auto& policy : algorithm_policies()) {
    for (const std::size_t n : algorithm_sizes()) {
      const auto v = test_support::random_ints(n, n + 50);
      const std::int64_t want = std::accumulate(v.begin(), v.end(), std::int64_t{0});
      const auto by_iterator = fjord::parallel_reduce(
          policy, v.begin(), v.end(), std::int64_t{0},
          [](auto b, auto e, std::int64_t acc) { return std::accumulate(b, e, acc); },
          std::plus<>());
      ASSERT_EQ(by_iterator, want);
      const auto by_index = fjord::parallel_reduce(
          policy, std::size_t{0}, n, std::int64_t{0},
          [&](std::size_t b, std::size_t e, std::int64_t acc) {
            for (std::size_t i = b; i < e; ++i) {
              acc += v[i];
            }
            return acc;
          },
          std::plus<>());
      ASSERT_EQ(by_index, want);
    }
  }
  // The short form, on the default pool.
  EXPECT_EQ(fjord::parallel_reduce(
                1, 101, 0, [](int b, int e, int acc) { return acc + (b + e - 1) * (e - b) / 2; },
                std::plus<>()),
            5050);
}

TEST(parallel_reduce, pieces_are_joined_in_index_order) {
  // Concatenating piece ranges must give the whole range in order.
  const auto joined = fjord::parallel_reduce(
      fjord::par.on(test_support::two_workers()).with_grain(7), 0, 1000, std::vector<int>{},
      [](int b, int e, std::vector<int> acc) {
        for (int i = b; i < e; ++i) {
          acc.push_back(i);
        }
        return acc;
      },
      [](std::vector<int> l, const std::vector<int>& r) {
        l.insert(l.end(), r.begin(), r.end());
        return l;
      });
  std::vector<int> want(1000);
  std::iota(want.begin(), want.end(), 0);
  EXPECT_EQ(joined, want);
}

// with_grain(g) makes the fewest pieces of at most g, of near-equal length
// (README: "splits down to n elements").
// The lengths of the pieces parallel_reduce hands out for [0, n), in order.
std::vector<int> piece_lengths(const fjord::parallel_policy& policy, int n) {
  return fjord::parallel_reduce(
      policy, 0, n, std::vector<int>{},
      [](int b, int e, std::vector<int> acc) {
        acc.push_back(e - b);
        return acc;
      },
      [](std::vector<int> l, const std::vector<int>& r) {
        l.insert(l.end(), r.begin(), r.end());
        return l;
      });
}

TEST(parallel_reduce, a_grain_gives_the_fewest_pieces_of_at_most_the_grain) {
  for (const int n : {1, 99, 100, 101, 1000, 1050, 9999, 10000}) {
    for (const int grain : {1, 7, 100, 900, 1000}) {
      const auto sizes = piece_lengths(
          fjord::par.on(test_support::two_workers()).with_grain(static_cast<std::size_t>(grain)),
          n);
      ASSERT_EQ(sizes.size(), static_cast<std::size_t>((n + grain - 1) / grain))
          << n << " " << grain;
      ASSERT_EQ(std::accumulate(sizes.begin(), sizes.end(), 0), n);
      for (const int size : sizes) {
        ASSERT_GE(size, 1);
        ASSERT_LE(size, grain) << n << " " << grain;
      }
    }
  }
  // Two pieces of 500, not 900 and 100.
  EXPECT_EQ(piece_lengths(fjord::par.on(test_support::two_workers()).with_grain(900), 1000),
            (std::vector<int>{500, 500}));
}

// The strided sums of a short piece hold partial sums that a left-to-right
// sum never reaches: with signed ints they must wrap, not overflow
// (undefined; UBSan runs this), and the total comes out exact.
TEST(reduce, partial_sums_of_a_short_piece_do_not_overflow) {
  std::vector<int> v(1000);
  for (std::size_t i = 0; i < v.size(); ++i) {
    v[i] = i % 2 == 0 ? 2'000'000'000 : -2'000'000'000;
  }
  v.back() = 7;  // 499 pairs cancel, then 2e9 and 7: the total fits in an int
  const long long want = std::accumulate(v.begin(), v.end(), 0LL);
  ASSERT_LE(want, std::numeric_limits<int>::max());
  for (const auto& policy : algorithm_policies()) {
    EXPECT_EQ(fjord::reduce(policy, v.begin(), v.end(), 0), static_cast<int>(want));
    EXPECT_EQ(fjord::reduce(policy, v.begin(), v.end(), 0, std::plus<int>()),
              static_cast<int>(want));
  }
}

// + and * on arithmetic types take the strided running sums on short
// pieces and the quarters on long ones: unsigned products wrap, so any
// slip in which elements a piece covers changes the result.
TEST(reduce, products_and_sums_of_every_piece_length_match_std) {
  for (const std::size_t n :
       {std::size_t{15}, std::size_t{16}, std::size_t{17}, std::size_t{2047}, std::size_t{2048},
        std::size_t{2049}, std::size_t{5000}, std::size_t{70001}}) {
    std::vector<std::uint64_t> v(n);
    std::mt19937_64 rng(n);
    for (auto& x : v) {
      x = rng() | 1U;
    }
    const std::uint64_t product =
        std::accumulate(v.begin(), v.end(), std::uint64_t{1}, std::multiplies<>());
    const std::uint64_t sum = std::accumulate(v.begin(), v.end(), std::uint64_t{0});
    for (const auto& policy : algorithm_policies()) {
      ASSERT_EQ(fjord::reduce(policy, v.begin(), v.end(), std::uint64_t{1}, std::multiplies<>()),
                product)
          << n;
      ASSERT_EQ(
          fjord::reduce(policy, v.begin(), v.end(), std::uint64_t{0}, std::plus<std::uint64_t>()),
          sum)
          << n;
    }
  }
}

}  // namespace
