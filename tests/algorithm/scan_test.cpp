// The scans and copy_if against std, including in place, with throwing
// operations, and with nested parallel work inside a tile.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <numeric>
#include <stdexcept>
#include <string>
#include <vector>

#include "fjord/copy_if.hpp"
#include "fjord/reduce.hpp"
#include "fjord/scan.hpp"
#include "support/algorithm_inputs.hpp"

namespace {

using test_support::algorithm_policies;
using test_support::algorithm_sizes;

TEST(inclusive_scan, every_form_matches_std) {
  for (const auto& policy : algorithm_policies()) {
    for (const std::size_t n : algorithm_sizes()) {
      const auto v = test_support::random_ints(n, n + 80);
      std::vector<std::int64_t> got(n);
      std::vector<std::int64_t> want(n);
      ASSERT_EQ(fjord::inclusive_scan(policy, v.begin(), v.end(), got.begin()), got.end());
      std::inclusive_scan(v.begin(), v.end(), want.begin());
      ASSERT_EQ(got, want) << n;
      auto max = [](std::int64_t a, std::int64_t b) { return std::max(a, b); };
      fjord::inclusive_scan(policy, v.begin(), v.end(), got.begin(), max);
      std::inclusive_scan(v.begin(), v.end(), want.begin(), max);
      ASSERT_EQ(got, want) << n;
      fjord::inclusive_scan(policy, v.begin(), v.end(), got.begin(), std::plus<>(),
                            std::int64_t{9});
      std::inclusive_scan(v.begin(), v.end(), want.begin(), std::plus<>(), std::int64_t{9});
      ASSERT_EQ(got, want) << n;
    }
  }
}

TEST(exclusive_scan, matches_std_also_in_place) {
  for (const auto& policy : algorithm_policies()) {
    for (const std::size_t n : algorithm_sizes()) {
      auto v = test_support::random_ints(n, n + 90);
      std::vector<std::int64_t> want(n);
      std::exclusive_scan(v.begin(), v.end(), want.begin(), std::int64_t{-4});
      ASSERT_EQ(fjord::exclusive_scan(policy, v.begin(), v.end(), v.begin(), std::int64_t{-4}),
                v.end());
      ASSERT_EQ(v, want) << n;
    }
  }
}

TEST(transform_scans, match_std) {
  auto square = [](std::int64_t x) { return x * x; };
  for (const auto& policy : algorithm_policies()) {
    for (const std::size_t n : algorithm_sizes()) {
      const auto v = test_support::random_ints(n, n + 100);
      std::vector<std::int64_t> got(n);
      std::vector<std::int64_t> want(n);
      fjord::transform_inclusive_scan(policy, v.begin(), v.end(), got.begin(), std::plus<>(),
                                      square);
      std::transform_inclusive_scan(v.begin(), v.end(), want.begin(), std::plus<>(), square);
      ASSERT_EQ(got, want);
      fjord::transform_inclusive_scan(policy, v.begin(), v.end(), got.begin(), std::plus<>(),
                                      square, std::int64_t{2});
      std::transform_inclusive_scan(v.begin(), v.end(), want.begin(), std::plus<>(), square,
                                    std::int64_t{2});
      ASSERT_EQ(got, want);
      fjord::transform_exclusive_scan(policy, v.begin(), v.end(), got.begin(), std::int64_t{1},
                                      std::plus<>(), square);
      std::transform_exclusive_scan(v.begin(), v.end(), want.begin(), std::int64_t{1},
                                    std::plus<>(), square);
      ASSERT_EQ(got, want);
    }
  }
}

TEST(inclusive_scan, keeps_order_for_a_non_commutative_op) {
  for (const auto& policy : algorithm_policies()) {
    // Prefixes of strings grow quadratically: 3,000 words make ~50 MB.
    const auto words = test_support::random_strings(3000, 5);
    std::vector<std::string> got(words.size());
    std::vector<std::string> want(words.size());
    fjord::inclusive_scan(policy, words.begin(), words.end(), got.begin());
    std::inclusive_scan(words.begin(), words.end(), want.begin());
    ASSERT_EQ(got, want);
  }
}

TEST(inclusive_scan, deterministic_is_bit_identical_on_any_pool) {
  const auto v = test_support::random_doubles(200003, 11);
  std::vector<double> a(v.size());
  std::vector<double> b(v.size());
  const auto policy = fjord::par.deterministic();
  fjord::inclusive_scan(policy.on(test_support::one_worker()), v.begin(), v.end(), a.begin());
  for (int round = 0; round < 5; ++round) {
    fjord::inclusive_scan(policy.on(test_support::two_workers()), v.begin(), v.end(), b.begin());
    ASSERT_EQ(std::memcmp(a.data(), b.data(), a.size() * sizeof(double)), 0);
    fjord::inclusive_scan(policy, v.begin(), v.end(), b.begin());
    ASSERT_EQ(std::memcmp(a.data(), b.data(), a.size() * sizeof(double)), 0);
  }
}

TEST(inclusive_scan, an_exception_in_any_tile_reaches_the_caller_without_a_hang) {
  for (const auto& policy : algorithm_policies()) {
    for (const std::size_t throw_at : {std::size_t{0}, std::size_t{5000}, std::size_t{99999}}) {
      std::vector<std::int64_t> v(100000, 1);
      std::vector<std::int64_t> out(v.size());
      EXPECT_THROW(
          fjord::transform_inclusive_scan(policy, v.begin(), v.end(), out.begin(), std::plus<>(),
                                          [&](const std::int64_t& x) {
                                            if (&x == &v[throw_at]) {
                                              throw std::overflow_error("tile");
                                            }
                                            return std::string::size_type(x);
                                          }),
          std::overflow_error);
    }
  }
}

TEST(inclusive_scan, a_tile_may_run_nested_parallel_work) {
  // Every transform runs a parallel reduction, whose joins let the worker
  // help with other jobs (perhaps another participant of this scan) while
  // it holds a tile.
  std::vector<std::int64_t> v(40000, 1);
  std::vector<std::int64_t> out(v.size());
  const std::vector<std::int64_t> inner(64, 1);
  const auto policy = fjord::par.on(test_support::two_workers()).with_grain(1000);
  fjord::transform_inclusive_scan(
      policy, v.begin(), v.end(), out.begin(), std::plus<>(), [&](std::int64_t x) {
        return x * fjord::reduce(fjord::par.with_grain(8), inner.begin(), inner.end());
      });
  for (std::size_t i = 0; i < out.size(); i += 1111) {
    ASSERT_EQ(out[i], static_cast<std::int64_t>(64 * (i + 1)));
  }
}

TEST(copy_if, matches_std_and_keeps_order) {
  for (const auto& policy : algorithm_policies()) {
    for (const std::size_t n : algorithm_sizes()) {
      const auto v = test_support::random_ints(n, n + 110);
      std::vector<std::int64_t> got(n, 77);
      std::vector<std::int64_t> want(n, 77);
      auto keep = [](std::int64_t x) { return x % 3 == 0; };
      const auto got_end = fjord::copy_if(policy, v.begin(), v.end(), got.begin(), keep);
      const auto want_end = std::copy_if(v.begin(), v.end(), want.begin(), keep);
      ASSERT_EQ(got_end - got.begin(), want_end - want.begin());
      ASSERT_EQ(got, want);
    }
  }
}

}  // namespace
