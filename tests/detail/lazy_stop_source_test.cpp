#include "fjord/detail/lazy_stop_source.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <stop_token>
#include <thread>
#include <vector>

namespace {

using fjord::detail::lazy_stop_source;

TEST(lazy_stop_source, a_token_taken_before_a_stop_sees_it) {
  lazy_stop_source s;
  const std::stop_token t = s.get_token();
  EXPECT_TRUE(t.stop_possible());
  EXPECT_FALSE(t.stop_requested());
  EXPECT_FALSE(s.stop_requested());
  s.request_stop();
  EXPECT_TRUE(s.stop_requested());
  EXPECT_TRUE(t.stop_requested());
}

TEST(lazy_stop_source, a_token_taken_after_a_stop_is_already_stopped) {
  lazy_stop_source s;
  s.request_stop();
  EXPECT_TRUE(s.get_token().stop_requested());
}

TEST(lazy_stop_source, every_token_shares_one_state_and_a_callback_runs_once) {
  lazy_stop_source s;
  const std::stop_token a = s.get_token();
  const std::stop_token b = s.get_token();
  EXPECT_TRUE(a == b);
  int calls = 0;
  const std::stop_callback cb(a, [&] { ++calls; });
  s.request_stop();
  s.request_stop();
  EXPECT_EQ(calls, 1);
}

// A stop request racing the first get_token: whichever comes first, the
// token ends up stopped (the seq_cst handshake in lazy_stop_source), and
// racing get_token calls agree on one state.
TEST(lazy_stop_source, stress_a_stop_racing_the_first_tokens_is_never_lost) {
  for (int round = 0; round < 500; ++round) {
    lazy_stop_source s;
    std::atomic<int> ready{0};
    std::stop_token t1, t2;
    std::thread stopper([&] {
      ready.fetch_add(1);
      while (ready.load() < 3) {
      }
      s.request_stop();
    });
    std::thread taker([&] {
      ready.fetch_add(1);
      while (ready.load() < 3) {
      }
      t1 = s.get_token();
    });
    ready.fetch_add(1);
    while (ready.load() < 3) {
    }
    t2 = s.get_token();
    stopper.join();
    taker.join();
    ASSERT_TRUE(t1.stop_requested()) << "round " << round;
    ASSERT_TRUE(t2.stop_requested()) << "round " << round;
    ASSERT_TRUE(t1 == t2) << "round " << round;
  }
}

}  // namespace
