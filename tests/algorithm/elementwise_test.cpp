// for_each, for_each_n, fill, generate, transform and parallel_for against
// their sequential results, under every policy and input size class.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <memory>
#include <mutex>
#include <ranges>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "fjord/fill.hpp"
#include "fjord/for_each.hpp"
#include "fjord/parallel_for.hpp"
#include "fjord/pool.hpp"
#include "fjord/transform.hpp"
#include "support/algorithm_inputs.hpp"

namespace {

using test_support::algorithm_policies;
using test_support::algorithm_sizes;

TEST(for_each, visits_every_element_exactly_once) {
  for (const auto& policy : algorithm_policies()) {
    for (const std::size_t n : algorithm_sizes()) {
      std::vector<std::atomic<int>> visits(n);
      std::vector<std::size_t> index(n);
      for (std::size_t i = 0; i < n; ++i) {
        index[i] = i;
      }
      fjord::for_each(policy, index.begin(), index.end(),
                      [&](std::size_t i) { visits[i].fetch_add(1, std::memory_order_relaxed); });
      for (std::size_t i = 0; i < n; ++i) {
        ASSERT_EQ(visits[i].load(), 1) << "n=" << n << " i=" << i;
      }
    }
  }
}

TEST(for_each, modifies_elements_through_the_reference) {
  auto v = test_support::random_ints(100000, 1);
  auto expected = v;
  for (auto& x : expected) {
    x = x * 3 + 1;
  }
  fjord::for_each(fjord::par, v.begin(), v.end(), [](std::int64_t& x) { x = x * 3 + 1; });
  EXPECT_EQ(v, expected);
}

TEST(for_each, seq_runs_in_order_on_the_caller) {
  std::vector<int> v{1, 2, 3, 4, 5};
  std::vector<int> seen;
  fjord::for_each(fjord::seq, v.begin(), v.end(), [&](int x) { seen.push_back(x); });
  EXPECT_EQ(seen, v);
}

TEST(for_each, an_exception_reaches_the_caller_and_nothing_leaks) {
  for (const auto& policy : algorithm_policies()) {
    std::vector<int> v(50000, 1);
    std::atomic<int> ran{0};
    EXPECT_THROW(fjord::for_each(policy, v.begin(), v.end(),
                                 [&](int) {
                                   auto owned = std::make_unique<int>(7);  // freed on unwinding
                                   if (ran.fetch_add(1) == 20000) {
                                     throw std::runtime_error("element");
                                   }
                                 }),
                 std::runtime_error);
  }
}

TEST(for_each, pieces_not_yet_started_are_skipped_after_an_exception) {
  const std::size_t n = 200'000;  // 2 us each: ~0.2 s if nothing were skipped
  std::vector<int> v(n, 0);
  std::atomic<std::size_t> calls{0};
  // A grain, so there is no prefix on the caller: the first piece throws at
  // once, and only pieces already running go on.
  EXPECT_THROW(fjord::for_each(fjord::par.on(test_support::two_workers()).with_grain(1000),
                               v.begin(), v.end(),
                               [&](int& x) {
                                 test_support::busy_for(std::chrono::microseconds(2));
                                 calls.fetch_add(1, std::memory_order_relaxed);
                                 if (&x == &v[0]) {
                                   throw std::runtime_error("first");
                                 }
                               }),
               std::runtime_error);
  EXPECT_LT(calls.load(), n / 10);
  // Adaptive, throwing in the prefix: nothing else runs at all.
  calls = 0;
  EXPECT_THROW(fjord::for_each(fjord::par, v.begin(), v.end(),
                               [&](int&) {
                                 calls.fetch_add(1, std::memory_order_relaxed);
                                 throw std::runtime_error("first");
                               }),
               std::runtime_error);
  EXPECT_EQ(calls.load(), 1U);
}

// clang 14 cannot compile libstdc++ 12's iota_view (its concepts); g++ runs these.
#if !defined(__clang__) || __clang_major__ >= 16
TEST(for_each, takes_iterators_with_an_integer_class_difference_type) {
  const auto numbers = std::views::iota(0L, 5000L);  // difference_type: __int128 in libstdc++
  std::atomic<long> sum{0};
  fjord::for_each(fjord::par, numbers.begin(), numbers.end(), [&](long i) { sum.fetch_add(i); });
  EXPECT_EQ(sum.load(), 5000L * 4999 / 2);
  EXPECT_THROW(fjord::for_each(fjord::par, numbers.end(), numbers.begin(), [](long) {}),
               std::invalid_argument);
}
#endif

TEST(for_each, a_reversed_range_is_rejected_with_its_length) {
  std::vector<int> v(10);
  try {
    fjord::for_each(fjord::par, v.begin() + 7, v.begin() + 2, [](int) {});
    FAIL() << "no exception";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("fjord::for_each: last is 5 elements before first"),
              std::string::npos)
        << e.what();
  }
}

// Whether, in one of up to twenty calls (a thread can be preempted mid-call),
// for_each over `elements` elements of about `each` ran every element on the
// calling thread. The body only stores its thread's id in a slot of its
// own: a lock and a std::set insertion per element were no longer cheap
// under ASan, where twenty tries in a row once took longer than the prefix.
bool a_call_stays_on_the_caller(std::size_t elements, std::chrono::nanoseconds each) {
  std::vector<int> v(elements, 1);
  for (int attempt = 0; attempt < 20; ++attempt) {
    std::vector<std::thread::id> ran_on(v.size());
    fjord::for_each(fjord::par.on(test_support::two_workers()), v.begin(), v.end(), [&](int& x) {
      if (each.count() > 0) {
        test_support::busy_for(each);
      }
      ran_on[static_cast<std::size_t>(&x - v.data())] = std::this_thread::get_id();
    });
    if (std::all_of(ran_on.begin(), ran_on.end(),
                    [](std::thread::id id) { return id == std::this_thread::get_id(); })) {
      return true;
    }
  }
  return false;
}

TEST(for_each, a_small_cheap_input_runs_on_the_caller_alone) {
  // The caller runs a timed prefix alone: ten additions never last ~5 us.
  EXPECT_TRUE(a_call_stays_on_the_caller(10, std::chrono::nanoseconds(0)));
}

TEST(for_each, a_call_from_outside_with_little_work_left_stays_on_the_caller) {
  // About 20 us of work: past the prefix budget (~5-8 us), but too little to
  // gain back a worker's wake-up, so from outside the pool the caller runs
  // all of it.
  EXPECT_TRUE(a_call_stays_on_the_caller(40, std::chrono::nanoseconds(500)));
}

TEST(for_each, a_rest_that_turns_heavy_is_handed_to_the_pool) {
  // 400 elements of about 40 ns first (16 us: past the prefix budget, and
  // the whole call, estimated from them, within the caller's limit), then
  // 400 of which every eighth sleeps 1 ms. The estimate is made anew at
  // each clock read, about every 5 us of work, so once a leaf shows the rest
  // is heavy, the rest goes to the workers: some heavy elements run there
  // (all 50 ran on the caller when the estimate was made once). On a
  // machine where the first half costs more than the limit, everything past
  // the budget goes to the workers at once, which passes too.
  constexpr std::size_t n = 800;
  std::atomic<int> heavy_on_caller{0};
  std::atomic<int> heavy{0};
  const auto caller = std::this_thread::get_id();
  fjord::parallel_for(fjord::par.on(test_support::two_workers()), std::size_t{0}, n,
                      [&](std::size_t i) {
                        if (i < n / 2 || i % 8 != 0) {
                          test_support::busy_for(std::chrono::nanoseconds(30));
                          return;
                        }
                        std::this_thread::sleep_for(std::chrono::milliseconds(1));
                        heavy.fetch_add(1);
                        if (std::this_thread::get_id() == caller) {
                          heavy_on_caller.fetch_add(1);
                        }
                      });
  EXPECT_EQ(heavy.load(), static_cast<int>(n / 2 / 8));
  EXPECT_LT(heavy_on_caller.load(), heavy.load());
}

TEST(for_each, a_few_heavy_elements_go_parallel) {
  std::vector<int> v(8);
  std::mutex m;
  std::set<std::thread::id> threads;
  fjord::for_each(fjord::par.on(test_support::two_workers()), v.begin(), v.end(), [&](int) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    const std::lock_guard lock(m);
    threads.insert(std::this_thread::get_id());
  });
  // The first element ran on the caller and outlasted the prefix budget;
  // the rest ran on the pool's workers.
  EXPECT_GE(threads.size(), 2U);
  EXPECT_TRUE(threads.contains(std::this_thread::get_id()));
}

TEST(for_each_n, returns_the_end_and_rejects_a_negative_count) {
  std::vector<int> v(100, 0);
  auto end = fjord::for_each_n(fjord::par, v.begin(), 60, [](int& x) { x = 1; });
  EXPECT_EQ(end, v.begin() + 60);
  EXPECT_EQ(std::count(v.begin(), v.end(), 1), 60);
  try {
    fjord::for_each_n(fjord::par, v.begin(), -3, [](int&) {});
    FAIL() << "no exception";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("negative (-3)"), std::string::npos) << e.what();
  }
}

namespace count_types {
struct count_of_three {
  operator int() const { return 3; }  // NOLINT(google-explicit-constructor): the point of the test
};
enum plain_count { five = 5 };
}  // namespace count_types

TEST(for_each_n, takes_any_count_convertible_to_an_integer_as_std_does) {
  for (const auto& policy : test_support::algorithm_policies()) {
    std::vector<int> v(10, 0);
    EXPECT_EQ(
        fjord::for_each_n(policy, v.begin(), count_types::count_of_three{}, [](int& x) { ++x; }),
        v.begin() + 3);
    EXPECT_EQ(fjord::fill_n(policy, v.begin(), count_types::five, 7), v.begin() + 5);
    EXPECT_EQ(fjord::generate_n(policy, v.begin() + 5, std::size_t{2}, [] { return 9; }),
              v.begin() + 7);
    EXPECT_EQ(v, (std::vector<int>{7, 7, 7, 7, 7, 9, 9, 0, 0, 0}));
  }
}

TEST(for_each_n, fill_n_and_generate_n_cover_every_size_class) {
  for (const auto& policy : test_support::algorithm_policies()) {
    for (const std::size_t n : test_support::algorithm_sizes()) {
      std::vector<int> v(n + 3, -1);
      std::vector<int> want(n + 3, -1);
      std::fill_n(want.begin(), n, 4);
      ASSERT_EQ(fjord::fill_n(policy, v.begin(), n, 4), v.begin() + static_cast<std::ptrdiff_t>(n));
      ASSERT_EQ(v, want) << n;
      std::for_each_n(want.begin(), n, [](int& x) { x *= 3; });
      fjord::for_each_n(policy, v.begin(), n, [](int& x) { x *= 3; });
      ASSERT_EQ(v, want) << n;
      std::atomic<int> calls{0};
      fjord::generate_n(policy, v.begin(), n, [&] {
        calls.fetch_add(1, std::memory_order_relaxed);
        return 5;
      });
      std::fill_n(want.begin(), n, 5);
      ASSERT_EQ(v, want) << n;
      ASSERT_EQ(calls.load(), static_cast<int>(n));
    }
  }
}

TEST(fill, fills_every_size_class) {
  for (const auto& policy : algorithm_policies()) {
    for (const std::size_t n : algorithm_sizes()) {
      std::vector<int> v(n + 2, 0);
      fjord::fill(policy, v.begin() + 1, v.end() - 1, 42);
      ASSERT_EQ(v.front(), 0);
      ASSERT_EQ(v.back(), 0);
      ASSERT_EQ(static_cast<std::size_t>(std::count(v.begin(), v.end(), 42)), n);
    }
  }
  std::vector<int> w(10, 0);
  EXPECT_EQ(fjord::fill_n(fjord::par, w.begin(), 4, 9), w.begin() + 4);
  EXPECT_EQ(std::count(w.begin(), w.end(), 9), 4);
}

TEST(generate, calls_the_generator_once_per_element) {
  for (const auto& policy : algorithm_policies()) {
    for (const std::size_t n : algorithm_sizes()) {
      std::atomic<std::size_t> calls{0};
      std::vector<std::size_t> v(n);
      fjord::generate(policy, v.begin(), v.end(), [&] { return calls.fetch_add(1) + 1; });
      ASSERT_EQ(calls.load(), n);
      std::sort(v.begin(), v.end());
      for (std::size_t i = 0; i < n; ++i) {
        ASSERT_EQ(v[i], i + 1);  // each value handed out once
      }
    }
  }
  std::vector<int> w(5, 0);
  EXPECT_EQ(fjord::generate_n(fjord::par, w.begin(), 3, [] { return 2; }), w.begin() + 3);
  EXPECT_EQ(w, (std::vector<int>{2, 2, 2, 0, 0}));
}

TEST(transform, unary_and_binary_match_std) {
  for (const auto& policy : algorithm_policies()) {
    for (const std::size_t n : algorithm_sizes()) {
      const auto a = test_support::random_ints(n, n);
      const auto b = test_support::random_ints(n, n + 1);
      std::vector<std::int64_t> got(n);
      std::vector<std::int64_t> want(n);
      auto square = [](std::int64_t x) { return x * x; };
      ASSERT_EQ(fjord::transform(policy, a.begin(), a.end(), got.begin(), square), got.end());
      std::transform(a.begin(), a.end(), want.begin(), square);
      ASSERT_EQ(got, want);
      auto mix = [](std::int64_t x, std::int64_t y) { return 3 * x - y; };
      ASSERT_EQ(fjord::transform(policy, a.begin(), a.end(), b.begin(), got.begin(), mix),
                got.end());
      std::transform(a.begin(), a.end(), b.begin(), want.begin(), mix);
      ASSERT_EQ(got, want);
    }
  }
}

TEST(transform, in_place) {
  auto v = test_support::random_ints(70000, 3);
  auto want = v;
  std::transform(want.begin(), want.end(), want.begin(), [](std::int64_t x) { return -x; });
  fjord::transform(fjord::par, v.begin(), v.end(), v.begin(), [](std::int64_t x) { return -x; });
  EXPECT_EQ(v, want);
}

TEST(parallel_for, covers_signed_ranges_across_zero_and_at_the_limits) {
  std::atomic<long long> sum{0};
  std::atomic<int> count{0};
  fjord::parallel_for(-500, 501, [&](int i) {
    sum.fetch_add(i);
    count.fetch_add(1);
  });
  EXPECT_EQ(sum.load(), 0);
  EXPECT_EQ(count.load(), 1001);

  constexpr auto low = std::numeric_limits<std::int64_t>::min();
  std::vector<std::atomic<int>> seen(10);
  fjord::parallel_for(low, low + 10,
                      [&](std::int64_t i) { seen[static_cast<std::size_t>(i - low)]++; });
  for (auto& s : seen) {
    EXPECT_EQ(s.load(), 1);
  }
  constexpr auto high = std::numeric_limits<std::uint64_t>::max();
  std::atomic<int> top{0};
  fjord::parallel_for(high - 3, high, [&](std::uint64_t i) { top += i >= high - 3 ? 1 : 100; });
  EXPECT_EQ(top.load(), 3);
}

TEST(parallel_for, a_reversed_range_names_both_values) {
  try {
    fjord::parallel_for(5, 3, [](int) {});
    FAIL() << "no exception";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("last (3) is before first (5)"), std::string::npos)
        << e.what();
  }
}

TEST(parallel_for, covers_every_size_class_like_a_loop) {
  for (const auto& policy : test_support::algorithm_policies()) {
    for (const std::size_t n : test_support::algorithm_sizes()) {
      std::vector<std::atomic<int>> hits(n);
      fjord::parallel_for(policy, std::size_t{0}, n, [&](std::size_t i) { hits[i]++; });
      for (std::size_t i = 0; i < n; ++i) {
        ASSERT_EQ(hits[i].load(), 1) << n << " " << i;
      }
    }
  }
}

TEST(parallel_for, bounds_of_two_integer_types_use_their_common_type) {
  std::vector<int> v(1000, 0);
  fjord::parallel_for(0, v.size(), [&](std::size_t i) { v[i] = static_cast<int>(i); });
  for (std::size_t i = 0; i < v.size(); ++i) {
    ASSERT_EQ(v[i], static_cast<int>(i));
  }
  std::atomic<long long> sum{0};
  fjord::parallel_for(-10, 11L, [&](long i) { sum += i; });
  EXPECT_EQ(sum.load(), 0);
  // Character and bool bounds are integers too.
  std::atomic<int> letters{0};
  const char a = 'a';
  fjord::parallel_for(a, 'z' + 1, [&](int) { letters++; });
  fjord::parallel_for(0, true, [&](int) { letters++; });
  EXPECT_EQ(letters.load(), 27);
  try {
    fjord::parallel_for(-1, v.size(), [](std::size_t) {});
    FAIL() << "no exception";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("first (-1) does not fit"), std::string::npos) << e.what();
  }
}

TEST(parallel_for, an_exception_reaches_the_caller) {
  for (const auto& policy : test_support::algorithm_policies()) {
    std::atomic<int> ran{0};
    EXPECT_THROW(fjord::parallel_for(policy, 0, 100000,
                                     [&](int i) {
                                       ran.fetch_add(1, std::memory_order_relaxed);
                                       if (i == 65432) {
                                         throw std::domain_error("f");
                                       }
                                     }),
                 std::domain_error);
    EXPECT_GE(ran.load(), 1);
  }
}

TEST(parallel_for, nests_inside_itself_and_across_pools) {
  std::atomic<int> cells{0};
  fjord::parallel_for(fjord::par.on(test_support::two_workers()), 0, 40, [&](int) {
    fjord::parallel_for(fjord::par.on(test_support::one_worker()), 0, 50,
                        [&](int) { cells.fetch_add(1, std::memory_order_relaxed); });
    fjord::parallel_for(0, 50, [&](int) { cells.fetch_add(1, std::memory_order_relaxed); });
  });
  EXPECT_EQ(cells.load(), 40 * 100);
}

TEST(parallel_policy, a_zero_grain_is_rejected) {
  try {
    (void)fjord::par.with_grain(0);
    FAIL() << "no exception";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("got 0"), std::string::npos) << e.what();
  }
}

TEST(parallel_policy, builders_return_modified_copies) {
  fjord::pool& p = test_support::two_workers();
  constexpr auto fine = fjord::par.with_grain(64);
  const auto custom = fine.on(p).deterministic();
  EXPECT_EQ(fjord::par.grain(), 0U);
  EXPECT_EQ(fjord::par.target(), nullptr);
  EXPECT_FALSE(fjord::par.is_deterministic());
  EXPECT_EQ(custom.grain(), 64U);
  EXPECT_EQ(custom.target(), &p);
  EXPECT_TRUE(custom.is_deterministic());
  static_assert(fjord::is_execution_policy_v<const fjord::parallel_policy&>);
  static_assert(fjord::is_execution_policy_v<fjord::sequenced_policy>);
  static_assert(!fjord::is_execution_policy_v<int>);
}

TEST(parallel_policy, without_on_a_worker_uses_its_own_pool) {
  fjord::pool& p = test_support::two_workers();
  std::atomic<int> elsewhere{0};
  p.call([&] {
    std::vector<int> v(64);
    fjord::for_each(fjord::par, v.begin(), v.end(), [&](int&) {
      std::this_thread::sleep_for(std::chrono::microseconds(200));  // heavy: goes parallel
      if (!p.owns_current_thread()) {
        elsewhere.fetch_add(1);
      }
    });
  });
  EXPECT_EQ(elsewhere.load(), 0);
}

TEST(parallel_policy, on_runs_the_pieces_on_that_pool) {
  fjord::pool& p = test_support::one_worker();
  std::atomic<int> elsewhere{0};
  std::vector<int> v(1000, 0);
  const auto caller = std::this_thread::get_id();
  fjord::for_each(fjord::par.on(p).with_grain(10), v.begin(), v.end(), [&](int& x) {
    x = 1;
    if (!p.owns_current_thread() && std::this_thread::get_id() != caller) {
      elsewhere.fetch_add(1);
    }
  });
  EXPECT_EQ(std::count(v.begin(), v.end(), 1), 1000);
  EXPECT_EQ(elsewhere.load(), 0);
}

}  // namespace
