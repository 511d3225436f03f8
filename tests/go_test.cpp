#include "fjord/go.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "fjord/channel.hpp"
#include "fjord/detail/assert.hpp"
#include "fjord/detail/frame_allocator.hpp"
#include "fjord/pool.hpp"
#include "fjord/sync_wait.hpp"
#include "fjord/task.hpp"

namespace {

TEST(go, runs_a_coroutine_lambda_whose_captures_outlive_the_call) {
  fjord::pool p(fjord::pool_options{.workers = 2});
  fjord::channel<std::string> out(0);
  {
    auto owned = std::make_unique<std::string>("captured");
    // The lambda is a temporary: the process keeps its own copy.
    fjord::go(p, [s = std::move(owned), out]() -> fjord::task<void> { co_await out.send(*s); });
  }
  EXPECT_EQ(out.blocking_receive(), "captured");
}

TEST(go, passes_arguments_by_value) {
  fjord::pool p(fjord::pool_options{.workers = 2});
  fjord::channel<int> out(0);
  auto add = [](fjord::channel<int> c, int a, const int& b) -> fjord::task<void> {
    co_await c.send(a + b);
  };
  {
    int b = 2;
    fjord::go(p, add, out, 1, b);
  }
  EXPECT_EQ(out.blocking_receive(), 3);
}

TEST(go, runs_a_plain_function_as_a_job) {
  fjord::pool p(fjord::pool_options{.workers = 2});
  fjord::channel<int> out(1);
  fjord::go(
      p, [](fjord::channel<int> c, int v) { (void)c.try_send(v); }, out, 5);
  EXPECT_EQ(out.blocking_receive(), 5);
}

TEST(go, defaults_to_the_current_pool) {
  fjord::pool p(fjord::pool_options{.workers = 2});
  fjord::channel<fjord::pool*> out(1);
  fjord::sync_wait([&]() -> fjord::task<void> {
    co_await p.schedule();
    fjord::go(
        [](fjord::channel<fjord::pool*> c) -> fjord::task<void> {
          co_await c.send(fjord::current_pool());
        },
        out);
  }());
  EXPECT_EQ(out.blocking_receive(), &p);
}

TEST(go, from_a_plain_thread_uses_the_default_pool) {
  fjord::channel<fjord::pool*> out(1);
  fjord::go(
      [](fjord::channel<fjord::pool*> c) -> fjord::task<void> {
        co_await c.send(fjord::current_pool());
      },
      out);
  EXPECT_EQ(out.blocking_receive(), &fjord::default_pool());
}

TEST(go, an_escaping_exception_reaches_the_pools_handler) {
  std::atomic<int> reported{0};
  fjord::channel<int> done(1);
  {
    fjord::pool p(
        fjord::pool_options{.workers = 1, .unhandled_exception_handler = [&](std::exception_ptr e) {
                              try {
                                std::rethrow_exception(e);
                              } catch (const std::runtime_error& err) {
                                if (std::string(err.what()) == "process failed") {
                                  reported.fetch_add(1);
                                }
                              }
                            }});
    fjord::go(p, []() -> fjord::task<void> {
      throw std::runtime_error("process failed");
      co_return;
    });
    fjord::go(p, [] { throw std::runtime_error("process failed"); });
  }
  EXPECT_EQ(reported.load(), 2);
}

// A process whose function holds no state and takes its parameters by value
// (or by std::ref) is its own coroutine: no root frame around it
// (detail::process_needs_no_root).
fjord::task<void> plain_process(fjord::channel<int> in, std::atomic<int>& started,
                                std::atomic<int>& finished) {
  started.fetch_add(1);
  (void)co_await in.receive();
  finished.fetch_add(1);
}

namespace shapes {
using fjord::detail::process_needs_no_root;
using ch = fjord::channel<int>;
using counter_ref = std::reference_wrapper<std::atomic<int>>;
using by_value = decltype([](ch, int) -> fjord::task<void> { co_return; });
using by_const_ref = decltype([](ch, const int&) -> fjord::task<void> { co_return; });
using generic = decltype([](auto) -> fjord::task<void> { co_return; });
using with_default = decltype([](ch, int = 0) -> fjord::task<void> { co_return; });
static_assert(process_needs_no_root<decltype(plain_process)&, ch, counter_ref, counter_ref>());
static_assert(process_needs_no_root<decltype(&plain_process), ch&, counter_ref, counter_ref>());
static_assert(process_needs_no_root<by_value&, ch, int>());
// The frame would hold a reference into go()'s own arguments.
static_assert(!process_needs_no_root<by_const_ref&, ch, int>());
static_assert(process_needs_no_root<by_const_ref&, ch, std::reference_wrapper<int>>());
// A reference parameter given a plain argument, not a std::ref.
static_assert(
    !process_needs_no_root<decltype(plain_process)&, ch, std::atomic<int>&, counter_ref>());
static_assert(!process_needs_no_root<generic&, int>());
static_assert(!process_needs_no_root<with_default&, ch>());
}  // namespace shapes

// Frames are counted only in builds with assertions (Debug, ASan, TSan);
// every build checks that each process ran once, from either kind of start.
TEST(go, a_blocked_process_costs_one_frame_when_it_needs_no_root) {
  constexpr bool counted = FJORD_ASSERTIONS != 0;
  fjord::pool p(fjord::pool_options{.workers = 2});
  constexpr int n = 1000;
  fjord::channel<int> gate(0);
  std::atomic<int> started{0};
  std::atomic<int> finished{0};
  const std::int64_t before = fjord::detail::frame_allocator::live_frames();
  for (int i = 0; i < n; ++i) {
    fjord::go(p, plain_process, gate, std::ref(started), std::ref(finished));
  }
  while (started.load() != n) {
    std::this_thread::yield();
  }
  if constexpr (counted) {
    EXPECT_EQ(fjord::detail::frame_allocator::live_frames() - before, n);
  }
  // A capturing lambda keeps a root frame that owns its captures.
  std::atomic<int>* count = &started;
  std::atomic<int>* done = &finished;
  for (int i = 0; i < n; ++i) {
    fjord::go(p, [gate, count, done]() -> fjord::task<void> {
      count->fetch_add(1);
      (void)co_await gate.receive();
      done->fetch_add(1);
    });
  }
  while (started.load() != 2 * n) {
    std::this_thread::yield();
  }
  if constexpr (counted) {
    EXPECT_EQ(fjord::detail::frame_allocator::live_frames() - before, 3 * n);
  }
  EXPECT_EQ(finished.load(), 0);
  gate.close();
  p.wait_idle();
  EXPECT_EQ(finished.load(), 2 * n);
  EXPECT_EQ(fjord::detail::frame_allocator::live_frames(), before);
}

TEST(go, a_root_free_process_reports_its_exception_to_its_pool) {
  std::atomic<int> reported{0};
  fjord::pool p(fjord::pool_options{
      .workers = 1, .unhandled_exception_handler = [&](std::exception_ptr) { reported += 1; }});
  auto failing = [](int code) -> fjord::task<int> {
    if (code != 0) {
      throw std::runtime_error("failed");
    }
    co_return code;
  };
  static_assert(fjord::detail::process_needs_no_root<decltype(failing)&, int>());
  for (int i = 0; i < 10; ++i) {
    fjord::go(p, failing, i % 2);
  }
  p.wait_idle();
  EXPECT_EQ(reported.load(), 5);
}

// Counts the processes that ran on the pool they were given, and fails
// every tenth: a process that needs no root frame (stateless, parameters
// by value), unlike the lambdas below, which capture.
fjord::task<void> counted_child(fjord::pool* home, std::atomic<int>* on_home, int i) {
  on_home->fetch_add(home == fjord::current_pool() ? 1 : 0);
  if (i % 10 == 0) {
    throw std::runtime_error("child failed");
  }
  co_return;
}

// A process started from a worker of its own pool waits to start in its own
// frame (no job is allocated for it): it runs once and reports to its pool
// also when its worker's deque is full (one worker, 64 slots: it then goes
// through the pool's queue), and a process started from another pool's
// worker runs on, and reports to, the pool it was given. Both shapes of
// process: its own coroutine, and one in a root frame.
TEST(go, processes_started_from_workers_run_once_and_report_to_their_pool) {
  static_assert(fjord::detail::process_needs_no_root<decltype(counted_child)&, fjord::pool*,
                                                     std::atomic<int>*, int>());
  std::atomic<int> reported_to_a{0};
  std::atomic<int> reported_to_b{0};
  auto count_in = [](std::atomic<int>& n) {
    return [&n](const std::exception_ptr&) { n.fetch_add(1); };
  };
  fjord::pool a(fjord::pool_options{
      .workers = 1, .deque_capacity = 64, .unhandled_exception_handler = count_in(reported_to_a)});
  fjord::pool b(
      fjord::pool_options{.workers = 1, .unhandled_exception_handler = count_in(reported_to_b)});
  constexpr int per_parent = 1000;  // many times the deque's 64 slots
  std::atomic<int> on_a{0};
  std::atomic<int> on_b{0};
  // A reference parameter: go() keeps the argument in a root frame.
  auto rooted_child = [](fjord::pool* home, std::atomic<int>* on_home,
                         const int& i) -> fjord::task<void> {
    co_await counted_child(home, on_home, i);
  };
  static_assert(!fjord::detail::process_needs_no_root<decltype(rooted_child)&, fjord::pool*,
                                                      std::atomic<int>*, int>());
  auto parent = [&](fjord::pool* target, std::atomic<int>* on_target) -> fjord::task<void> {
    for (int i = 0; i < per_parent; ++i) {
      if (i % 2 == 0) {
        fjord::go(*target, counted_child, target, on_target, i);
      } else {
        fjord::go(*target, rooted_child, target, on_target, i);
      }
    }
    co_return;
  };
  fjord::go(a, parent, &a, &on_a);
  fjord::go(a, parent, &b, &on_b);
  a.wait_idle();
  b.wait_idle();
  EXPECT_EQ(on_a.load(), per_parent);
  EXPECT_EQ(on_b.load(), per_parent);
  EXPECT_EQ(reported_to_a.load(), per_parent / 10);
  EXPECT_EQ(reported_to_b.load(), per_parent / 10);
}

// A million processes blocked on one channel cost no threads; one close()
// releases them all.
TEST(go, a_million_blocked_processes_are_released_by_one_close) {
  fjord::pool p(fjord::pool_options{.workers = 2});
  constexpr int n = 1'000'000;
  fjord::channel<int> gate(0);
  fjord::channel<int> finished(fjord::unbounded);
  std::atomic<int> started{0};
  auto process = [](fjord::channel<int> in, fjord::channel<int> out,
                    std::atomic<int>& count) -> fjord::task<void> {
    count.fetch_add(1, std::memory_order_relaxed);
    if (!(co_await in.receive())) {
      (void)out.try_send(1);
    }
  };
  for (int i = 0; i < n; ++i) {
    fjord::go(p, process, gate, finished, std::ref(started));
  }
  while (started.load() != n) {
    std::this_thread::yield();
  }
  EXPECT_LE(p.stats().workers.size(), 2U);
  gate.close();
  std::vector<int> all;
  all.reserve(n);
  while (all.size() < static_cast<std::size_t>(n)) {
    (void)finished.try_receive_n(std::back_inserter(all), n);
    std::this_thread::yield();
  }
  EXPECT_EQ(all.size(), static_cast<std::size_t>(n));
}

}  // namespace
