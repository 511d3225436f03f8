#include "fjord/stop_token.hpp"

#include <gtest/gtest.h>

#include <stop_token>

#include "fjord/sync_wait.hpp"
#include "fjord/task.hpp"

TEST(stop_token, a_task_inherits_the_token_it_is_awaited_under) {
  std::stop_source source;
  auto inner = []() -> fjord::task<bool> {
    const std::stop_token t = co_await fjord::current_stop_token();
    co_return t.stop_requested();
  };
  auto outer = [&]() -> fjord::task<bool> {
    source.request_stop();
    co_return co_await inner();  // inherits the token
  };
  EXPECT_TRUE(fjord::sync_wait(fjord::with_stop_token(source.get_token(), outer())));
}

TEST(stop_token, a_coroutine_without_one_gets_a_token_that_cannot_be_stopped) {
  auto inner = []() -> fjord::task<bool> {
    const std::stop_token t = co_await fjord::current_stop_token();
    co_return t.stop_possible();
  };
  EXPECT_FALSE(fjord::sync_wait(inner()));
}

TEST(stop_token, the_inner_of_two_with_stop_token_wins_for_what_it_runs) {
  std::stop_source outer_source;
  std::stop_source inner_source;
  inner_source.request_stop();
  auto observe = []() -> fjord::task<bool> {
    const std::stop_token t = co_await fjord::current_stop_token();
    co_return t.stop_requested();
  };
  auto nested = [&]() -> fjord::task<bool> {
    const bool inner = co_await fjord::with_stop_token(inner_source.get_token(), observe());
    const bool outer = co_await observe();  // back under the outer token
    co_return inner && !outer;
  };
  EXPECT_TRUE(fjord::sync_wait(fjord::with_stop_token(outer_source.get_token(), nested())));
}
