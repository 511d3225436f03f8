// The umbrella header alone is enough for the whole tour, and every public
// header compiles on its own within it (clang-tidy also runs over this file,
// so it sees every public header).

#include "fjord/fjord.hpp"

#include <gtest/gtest.h>

#include <atomic>

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
