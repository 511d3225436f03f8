#include "fjord/generator.hpp"

#include <gtest/gtest.h>

#include <ranges>
#include <stdexcept>
#include <string>
#include <vector>

#include "support/lifetime_probe.hpp"

namespace {

fjord::generator<int> iota(int n) {
  for (int i = 0; i < n; ++i) {
    co_yield i;
  }
}

fjord::generator<long> fibonacci() {
  long a = 0;
  long b = 1;
  while (true) {
    co_yield a;
    a = std::exchange(b, a + b);
  }
}

TEST(generator, yields_in_order) {
  std::vector<int> got;
  for (int i : iota(5)) {
    got.push_back(i);
  }
  EXPECT_EQ(got, (std::vector<int>{0, 1, 2, 3, 4}));
}

TEST(generator, is_lazy_and_models_input_range) {
  static_assert(std::ranges::input_range<fjord::generator<long>>);
  std::vector<long> got;
  // An endless body: only the values asked for are computed. (No views::take
  // here: clang 14 cannot compile libstdc++ 12's views.)
  for (long v : fibonacci()) {
    got.push_back(v);
    if (got.size() == 10) {
      break;
    }
  }
  EXPECT_EQ(got, (std::vector<long>{0, 1, 1, 2, 3, 5, 8, 13, 21, 34}));
}

TEST(generator, references_and_temporaries) {
  std::vector<std::string> words{"a", "b"};
  auto by_ref = [&]() -> fjord::generator<std::string&> {
    for (auto& w : words) {
      co_yield w;
    }
  };
  for (std::string& w : by_ref()) {
    w += "!";
  }
  EXPECT_EQ(words, (std::vector<std::string>{"a!", "b!"}));
  auto temps = []() -> fjord::generator<std::string> {
    co_yield "literal";  // converted, kept in the frame
    co_yield std::string(3, 'c');
  };
  std::vector<std::string> got;
  for (const std::string& s : temps()) {
    got.push_back(s);
  }
  EXPECT_EQ(got, (std::vector<std::string>{"literal", "ccc"}));
}

TEST(generator, exception_reaches_the_consumer) {
  auto g = []() -> fjord::generator<int> {
    co_yield 1;
    throw std::runtime_error("stop");
  };
  auto gen = g();
  auto it = gen.begin();
  EXPECT_EQ(*it, 1);
  EXPECT_THROW(++it, std::runtime_error);
}

TEST(generator, abandoned_midway_frees_the_frame) {
  fjord_test::lifetime_probe::live = 0;
  {
    auto g = []() -> fjord::generator<int> {
      fjord_test::lifetime_probe probe;
      for (int i = 0;; ++i) {
        co_yield i;
      }
    };
    auto gen = g();
    auto it = gen.begin();
    ++it;
    EXPECT_EQ(fjord_test::lifetime_probe::live.load(), 1);
  }
  EXPECT_EQ(fjord_test::lifetime_probe::live.load(), 0);
}

}  // namespace
