// Every algorithm, under every policy: an exception thrown from the user's
// function (op, predicate, comparison, generator, transform) reaches the
// caller, and the work already started finishes first (what it allocated is
// freed: ASan and LSan runs check that nothing leaks).
#include <gtest/gtest.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

#include "fjord/copy_if.hpp"
#include "fjord/fill.hpp"
#include "fjord/find.hpp"
#include "fjord/for_each.hpp"
#include "fjord/parallel_for.hpp"
#include "fjord/ranges.hpp"
#include "fjord/reduce.hpp"
#include "fjord/scan.hpp"
#include "fjord/sort.hpp"
#include "fjord/transform.hpp"
#include "support/algorithm_inputs.hpp"

namespace {

constexpr std::size_t n = 60000;

// Throws when it meets the element at `at` (by address).
struct tripwire {
  const std::int64_t* at;
  void operator()(const std::int64_t& x) const {
    if (&x == at) {
      throw std::domain_error("user");
    }
  }
};

class each_policy : public ::testing::TestWithParam<std::size_t> {
 protected:
  fjord::parallel_policy policy() const { return test_support::algorithm_policies()[GetParam()]; }
  std::vector<std::int64_t> in_ = test_support::random_ints(n, 404);
  std::vector<std::int64_t> out_ = std::vector<std::int64_t>(n);
  tripwire trip_{&in_[n - 777]};
};

TEST_P(each_policy, transform_unary_and_binary) {
  EXPECT_THROW(fjord::transform(policy(), in_.begin(), in_.end(), out_.begin(),
                                [&](const std::int64_t& x) {
                                  trip_(x);
                                  return x;
                                }),
               std::domain_error);
  EXPECT_THROW(fjord::transform(policy(), in_.begin(), in_.end(), in_.begin(), out_.begin(),
                                [&](const std::int64_t& x, const std::int64_t& y) {
                                  trip_(x);
                                  return x + y;
                                }),
               std::domain_error);
}

TEST_P(each_policy, for_each_n_and_generate) {
  EXPECT_THROW(fjord::for_each_n(policy(), in_.begin(), n, trip_), std::domain_error);
  std::atomic<std::size_t> calls{0};
  EXPECT_THROW(fjord::generate(policy(), out_.begin(), out_.end(),
                               [&]() -> std::int64_t {
                                 if (calls.fetch_add(1) == n / 2) {
                                   throw std::domain_error("generator");
                                 }
                                 return 1;
                               }),
               std::domain_error);
}

TEST_P(each_policy, copy_if) {
  EXPECT_THROW((void)fjord::copy_if(policy(), in_.begin(), in_.end(), out_.begin(),
                                    [&](const std::int64_t& x) {
                                      trip_(x);
                                      return x > 0;
                                    }),
               std::domain_error);
}

TEST_P(each_policy, stable_sort_and_sort_of_strings) {
  std::vector<std::string> strings = test_support::random_strings(20000, 5);
  const std::string* bad = &strings[12345];
  auto compare = [&](const std::string& a, const std::string& b) {
    if (&a == bad || &b == bad) {
      throw std::domain_error("compare");
    }
    return a < b;
  };
  EXPECT_THROW(fjord::stable_sort(policy(), strings.begin(), strings.end(), compare),
               std::domain_error);
  strings = test_support::random_strings(20000, 6);
  bad = &strings[777];
  EXPECT_THROW(fjord::sort(policy(), strings.begin(), strings.end(), compare), std::domain_error);
}

TEST_P(each_policy, scans) {
  auto op = [&](const std::int64_t& a, const std::int64_t& b) {
    if (b == in_[n - 777] && a != b) {
      // Equal values elsewhere may also trip it: any throw will do.
      throw std::domain_error("op");
    }
    return a + b;
  };
  EXPECT_THROW(fjord::inclusive_scan(policy(), in_.begin(), in_.end(), out_.begin(), op),
               std::domain_error);
  EXPECT_THROW(
      fjord::exclusive_scan(policy(), in_.begin(), in_.end(), out_.begin(), std::int64_t{1}, op),
      std::domain_error);
  auto transform = [&](const std::int64_t& x) {
    trip_(x);
    return x;
  };
  EXPECT_THROW(fjord::transform_inclusive_scan(policy(), in_.begin(), in_.end(), out_.begin(),
                                               std::plus<>(), transform),
               std::domain_error);
  EXPECT_THROW(fjord::transform_exclusive_scan(policy(), in_.begin(), in_.end(), out_.begin(),
                                               std::int64_t{0}, std::plus<>(), transform),
               std::domain_error);
}

TEST_P(each_policy, transform_reduce_and_parallel_reduce) {
  EXPECT_THROW((void)fjord::transform_reduce(policy(), in_.begin(), in_.end(), in_.begin(),
                                             std::int64_t{0}, std::plus<>(),
                                             [&](const std::int64_t& x, const std::int64_t& y) {
                                               trip_(x);
                                               return x * y;
                                             }),
               std::domain_error);
  EXPECT_THROW((void)fjord::parallel_reduce(
                   policy(), in_.cbegin(), in_.cend(), std::int64_t{0},
                   [&](auto b, auto e, std::int64_t acc) {
                     for (; b != e; ++b) {
                       trip_(*b);
                       acc += *b;
                     }
                     return acc;
                   },
                   std::plus<>()),
               std::domain_error);
}

TEST_P(each_policy, searches) {
  auto pred = [&](const std::int64_t& x) {
    trip_(x);
    return false;
  };
  EXPECT_THROW((void)fjord::find_if(policy(), in_.begin(), in_.end(), pred), std::domain_error);
  EXPECT_THROW((void)fjord::any_of(policy(), in_.begin(), in_.end(), pred), std::domain_error);
  EXPECT_THROW((void)fjord::none_of(policy(), in_.begin(), in_.end(), pred), std::domain_error);
}

TEST_P(each_policy, range_forms) {
  EXPECT_THROW(fjord::ranges::for_each(policy(), in_, trip_), std::domain_error);
  EXPECT_THROW((void)fjord::ranges::transform(policy(), in_, in_, out_.begin(),
                                              [&](const std::int64_t& x, const std::int64_t& y) {
                                                trip_(y);
                                                return x - y;
                                              }),
               std::domain_error);
  EXPECT_THROW((void)fjord::ranges::count_if(policy(), in_,
                                             [&](const std::int64_t& x) {
                                               trip_(x);
                                               return true;
                                             }),
               std::domain_error);
}

INSTANTIATE_TEST_SUITE_P(algorithms, each_policy,
                         ::testing::Range(std::size_t{0},
                                          test_support::algorithm_policies().size()));

}  // namespace
