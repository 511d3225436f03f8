// fjord::sort of strings on its radix path makes every allocation before the
// first string moves (docs/algorithms.md, section 3), so a std::bad_alloc
// from any of them reaches the caller with the range as it was. Each
// allocation the sort makes is failed in turn. Its own binary, because it
// replaces the global operator new.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstddef>
#include <functional>
#include <new>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "fjord/pool.hpp"
#include "fjord/sort.hpp"
#include "support/counting_operator_new.hpp"

namespace {

// More than the 4096 strings below which the sort is std::sort. Shapes that
// reach every stage: random strings (one radix level), a group
// behind a shared 20-byte prefix (ties re-keyed deeper), a group sharing
// more than 448 bytes (the suffix comparison past the depth limit), and
// duplicates.
std::vector<std::string> inputs(std::size_t n) {
  std::mt19937_64 rng(2026);
  std::uniform_int_distribution<int> length(0, 40);
  std::uniform_int_distribution<int> letter('a', 'e');
  std::vector<std::string> v;
  const std::string prefix(20, 'p');
  const std::string deep(500, 'd');
  for (std::size_t i = 0; i < n; ++i) {
    std::string s;
    const int len = length(rng);
    for (int k = 0; k < len; ++k) {
      s.push_back(static_cast<char>(letter(rng)));
    }
    switch (i % 4) {
      case 1:
        s.insert(0, prefix);
        break;
      case 2:
        s.insert(0, deep);
        break;
      case 3:
        s = v[i / 2];
        break;
      default:
        break;
    }
    v.push_back(std::move(s));
  }
  return v;
}

// Fails the first, second, ... allocation of sorting `original` until the
// sort makes fewer allocations than that; returns how many failures the
// caller saw, each with the range unchanged.
template <class T, class Compare>
long fail_each_allocation(fjord::pool& pool, const std::vector<T>& original, Compare comp) {
  std::vector<T> expected = original;
  std::stable_sort(expected.begin(), expected.end(), comp);
  {
    std::vector<T> warm = original;  // the workers' own heaps are made now
    fjord::sort(fjord::par.on(pool), warm.begin(), warm.end(), comp);
  }
  long failures = 0;
  for (long k = 1; k < 10000; ++k) {
    std::vector<T> v = original;
    test_support::fail_allocation_number(k);
    try {
      fjord::sort(fjord::par.on(pool), v.begin(), v.end(), comp);
    } catch (const std::bad_alloc&) {
      test_support::fail_allocation_number(0);
      EXPECT_TRUE(v == original) << "the range changed when allocation " << k << " failed";
      ++failures;
      continue;
    }
    const bool reached = test_support::fail_countdown.load() == 0;
    test_support::fail_allocation_number(0);
    EXPECT_TRUE(v == expected) << "allocation " << k;
    if (!reached) {
      return failures;  // the sort made fewer than k allocations
    }
  }
  ADD_FAILURE() << "the sort kept allocating";
  return failures;
}

TEST(sort_allocation_failure, strings_are_left_as_they_were_when_any_allocation_fails) {
  for (const std::size_t workers : {1, 2}) {
    fjord::pool pool(fjord::pool_options{.workers = workers});
    const std::vector<std::string> original = inputs(6000);
    // At least the keys, the radix sort's scratch, the tie lists and the
    // buffer the strings move through.
    EXPECT_GE(fail_each_allocation(pool, original, std::less<>()), 4) << workers << " workers";
    EXPECT_GE(fail_each_allocation(pool, original, std::greater<std::string>()), 4)
        << workers << " workers";
  }
}

TEST(sort_allocation_failure, string_views_are_left_as_they_were_when_any_allocation_fails) {
  fjord::pool pool(fjord::pool_options{.workers = 2});
  const std::vector<std::string> storage = inputs(6000);
  const std::vector<std::string_view> original(storage.begin(), storage.end());
  EXPECT_GE(fail_each_allocation(pool, original, std::less<std::string_view>()), 4);
}

}  // namespace
