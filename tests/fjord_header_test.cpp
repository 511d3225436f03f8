// The umbrella header alone is enough for the whole tour, and every public
// header compiles on its own within it (clang-tidy also runs over this file,
// so it sees every public header).

#include "fjord/fjord.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <functional>
#include <vector>

TEST(fjord_header, one_include_gives_the_whole_api) {
  fjord::pool p(fjord::pool_options{.workers = 2});
  std::atomic<int> posted{0};
  p.post([&] { posted.fetch_add(1); });
  auto [a, b] = fjord::join([] { return 1; }, [] { return 2; });
  fjord::task_group g(p);
  g.run([] {});
  EXPECT_EQ(g.wait(), fjord::task_group_status::complete);
  const int r = fjord::sync_wait([&]() -> fjord::task<int> {
    co_await p.schedule();
    auto [x, y] = co_await fjord::when_all([]() -> fjord::task<int> { co_return 3; }(),
                                           []() -> fjord::task<int> { co_return 4; }());
    co_return x + y;
  }());
  EXPECT_EQ(a + b + r, 10);
  EXPECT_EQ(fjord::block_in_place([] { return 5; }), 5);
}

TEST(fjord_header, the_tour_scaling_pool_is_as_it_says) {
  fjord::pool elastic(fjord::pool_options{.min_workers = 1,
                                          .max_workers = 8,
                                          .idle_timeout = std::chrono::seconds(5),
                                          .replace_blocked_after = std::chrono::milliseconds(2)});
  EXPECT_EQ(elastic.min_workers(), 1u);
  EXPECT_EQ(elastic.max_workers(), 8u);
  elastic.resize(4);
  EXPECT_EQ(elastic.size(), 4u);
  EXPECT_EQ(elastic.max_workers(), 4u);
}

TEST(fjord_header, the_allocator_comes_with_it) {
  std::vector<int, fjord::scalable_allocator<int>> v{1, 2, 3};
  std::pmr::vector<int> w({4, 5}, fjord::scalable_resource());
  EXPECT_EQ(v[2] + w[1], 8);
  EXPECT_GT(fjord::scalable_memory_statistics().bytes_in_use, 0u);
}

// Instantiates every algorithm once, so clang-tidy reads their bodies.
TEST(fjord_header, every_algorithm_instantiates) {
  std::vector<int> v{5, 3, 9, 1, 7};
  std::vector<int> out(v.size());
  const auto policy = fjord::par.with_grain(2);
  fjord::for_each(policy, v.begin(), v.end(), [](int&) {});
  fjord::for_each_n(policy, v.begin(), 2, [](int&) {});
  fjord::transform(policy, v.begin(), v.end(), out.begin(), [](int x) { return x + 1; });
  fjord::transform(policy, v.begin(), v.end(), out.begin(), out.begin(), std::plus<>());
  EXPECT_EQ(fjord::reduce(policy, v.begin(), v.end()), 25);
  EXPECT_EQ(fjord::transform_reduce(policy, v.begin(), v.end(), v.begin(), 0), 165);
  EXPECT_EQ(fjord::count_if(policy, v.begin(), v.end(), [](int x) { return x > 4; }), 3);
  EXPECT_EQ(*fjord::find_if(policy, v.begin(), v.end(), [](int x) { return x > 6; }), 9);
  EXPECT_TRUE(fjord::any_of(policy, v.begin(), v.end(), [](int x) { return x == 1; }));
  EXPECT_EQ(*fjord::min_element(policy, v.begin(), v.end()), 1);
  EXPECT_EQ(*fjord::max_element(policy, v.begin(), v.end()), 9);
  fjord::inclusive_scan(policy, v.begin(), v.end(), out.begin());
  fjord::exclusive_scan(policy, v.begin(), v.end(), out.begin(), 0);
  fjord::transform_inclusive_scan(policy, v.begin(), v.end(), out.begin(), std::plus<>(),
                                  [](int x) { return x; });
  fjord::transform_exclusive_scan(policy, v.begin(), v.end(), out.begin(), 0, std::plus<>(),
                                  [](int x) { return x; });
  EXPECT_EQ(fjord::copy_if(policy, v.begin(), v.end(), out.begin(), [](int x) { return x > 4; }),
            out.begin() + 3);
  fjord::fill(policy, out.begin(), out.end(), 0);
  fjord::generate(policy, out.begin(), out.end(), [] { return 1; });
  fjord::sort(policy, v.begin(), v.end());
  fjord::stable_sort(policy, v.begin(), v.end());
  EXPECT_TRUE(std::is_sorted(v.begin(), v.end()));
  fjord::parallel_for(0, 10, [](int) {});
  EXPECT_EQ(fjord::parallel_reduce(
                0, 10, 0, [](int b, int e, int acc) { return acc + e - b; }, std::plus<>()),
            10);
}
