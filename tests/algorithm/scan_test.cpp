// The scans and copy_if against std, including in place, with throwing
// operations, and with nested parallel work inside a tile.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <limits>
#include <numeric>
#include <ranges>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "fjord/join.hpp"
#include "fjord/pool.hpp"

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

TEST(exclusive_scan, takes_a_custom_op_and_keeps_its_order) {
  // max is associative but not a sum; the affine maps below do not commute.
  auto larger = [](std::int64_t a, std::int64_t b) { return a > b ? a : b; };
  for (const auto& policy : algorithm_policies()) {
    for (const std::size_t n : algorithm_sizes()) {
      const auto v = test_support::random_ints(n, n + 95);
      std::vector<std::int64_t> got(n);
      std::vector<std::int64_t> want(n);
      fjord::exclusive_scan(policy, v.begin(), v.end(), got.begin(), std::int64_t{-5000}, larger);
      std::exclusive_scan(v.begin(), v.end(), want.begin(), std::int64_t{-5000}, larger);
      ASSERT_EQ(got, want) << n;
    }
    // x -> a * x + b, composed left to right, modulo 2^64.
    struct affine {
      std::uint64_t a = 1;
      std::uint64_t b = 0;
      bool operator==(const affine&) const = default;
    };
    auto then = [](affine f, affine g) { return affine{g.a * f.a, g.a * f.b + g.b}; };
    std::vector<affine> maps(20000);
    for (std::size_t i = 0; i < maps.size(); ++i) {
      maps[i] = affine{i * 2 + 3, i * 7 + 1};
    }
    std::vector<affine> got(maps.size());
    std::vector<affine> want(maps.size());
    fjord::exclusive_scan(policy, maps.begin(), maps.end(), got.begin(), affine{}, then);
    std::exclusive_scan(maps.begin(), maps.end(), want.begin(), affine{}, then);
    ASSERT_TRUE(got == want);
  }
}

TEST(inclusive_scan, reads_volatile_input) {
  // Not contiguous plain memory as far as the streaming path is concerned:
  // the ordinary path reads it.
  volatile int in[100] = {};
  for (int i = 0; i < 100; ++i) {
    in[i] = i;
  }
  std::vector<int> out(100);
  fjord::inclusive_scan(fjord::par, in, in + 100, out.begin());
  EXPECT_EQ(out.back(), 4950);
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

// Found by review: a tile's nested work, stolen by a worker that then helps
// in a join of its own, lets that worker start a participant of the same
// scan, take a later tile and wait for the tile buried under it. Without the
// deferral (docs/algorithms.md, "Progress") this hung at once.
TEST(inclusive_scan, a_wait_on_a_tile_buried_under_the_waiter_is_given_up) {
  for (int round = 0; round < 10; ++round) {
    fjord::pool p(fjord::pool_options{.workers = 3});
    std::atomic<bool> blocker_running{false};
    std::atomic<bool> release_blocker{false};
    std::atomic<bool> nested_once{false};
    std::atomic<bool> c2_started{false};
    std::atomic<bool> d2_started{false};
    auto wait_for = [](std::atomic<bool>& flag, std::chrono::milliseconds limit) {
      const auto end = std::chrono::steady_clock::now() + limit;
      while (!flag.load() && std::chrono::steady_clock::now() < end) {
        std::this_thread::yield();
      }
    };
    // Keep one worker away until the tile holder's nested join starts.
    p.post([&] {
      blocker_running = true;
      while (!release_blocker.load()) {
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
      }
    });
    wait_for(blocker_running, std::chrono::seconds(10));
    std::vector<long> in(40);
    std::iota(in.begin(), in.end(), 0L);
    std::vector<long> out(in.size());
    auto one = [&](long i) -> long {
      std::this_thread::sleep_for(std::chrono::microseconds(50));
      if (i == 0) {
        std::this_thread::sleep_for(std::chrono::milliseconds(20));  // another worker takes tile 1
      }
      if (i == 4 && !nested_once.exchange(true)) {  // tile 1's holder joins; its half is stolen
        fjord::join(
            [&] {
              release_blocker = true;
              wait_for(c2_started, std::chrono::milliseconds(100));
            },
            [&] {
              c2_started = true;
              fjord::join([&] { wait_for(d2_started, std::chrono::milliseconds(100)); },
                          [&] {
                            d2_started = true;
                            std::this_thread::sleep_for(std::chrono::milliseconds(30));
                          });
            });
      }
      return 1;
    };
    fjord::transform_inclusive_scan(fjord::par.on(p).with_grain(4), in.begin(), in.end(),
                                    out.begin(), std::plus<>(), one);
    release_blocker = true;
    for (std::size_t i = 0; i < out.size(); ++i) {
      ASSERT_EQ(out[i], static_cast<long>(i + 1)) << "round " << round;
    }
  }
}

// clang 14 cannot compile libstdc++ 12's iota_view (its concepts); g++ runs these.
#if !defined(__clang__) || __clang_major__ >= 16
TEST(inclusive_scan, reads_iterators_that_return_values) {
  const auto numbers = std::views::iota(0L, 100000L);
  std::vector<long> got(100000);
  std::vector<long> want(100000);
  for (const auto& policy : algorithm_policies()) {
    fjord::inclusive_scan(policy, numbers.begin(), numbers.end(), got.begin());
    std::inclusive_scan(numbers.begin(), numbers.end(), want.begin());
    ASSERT_EQ(got, want);
  }
}
#endif

TEST(inclusive_scan, a_grain_as_large_as_size_t_scans_in_one_tile) {
  const auto never_split = fjord::par.with_grain(std::numeric_limits<std::size_t>::max());
  std::vector<int> v{1, 2, 3, 4};
  std::vector<int> out(4, 0);
  EXPECT_EQ(fjord::inclusive_scan(never_split, v.begin(), v.end(), out.begin()), out.end());
  EXPECT_EQ(out, (std::vector<int>{1, 3, 6, 10}));
  std::vector<int> kept(4, 0);
  auto end =
      fjord::copy_if(never_split, v.begin(), v.end(), kept.begin(), [](int x) { return x > 1; });
  EXPECT_EQ(end - kept.begin(), 3);
  EXPECT_EQ(kept, (std::vector<int>{2, 3, 4, 0}));
}

TEST(inclusive_scan, deterministic_from_inside_a_worker_matches_the_caller) {
  const auto v = test_support::random_doubles(100001, 13);
  std::vector<double> outside(v.size());
  std::vector<double> inside(v.size());
  const auto policy = fjord::par.deterministic();
  fjord::inclusive_scan(policy, v.begin(), v.end(), outside.begin());
  test_support::two_workers().call(
      [&] { fjord::inclusive_scan(policy, v.begin(), v.end(), inside.begin()); });
  EXPECT_EQ(std::memcmp(outside.data(), inside.data(), v.size() * sizeof(double)), 0);
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
