#include "fjord/task_group.hpp"

#include <gtest/gtest.h>

#include <array>
#include <atomic>
#include <chrono>
#include <exception>
#include <functional>
#include <future>
#include <latch>
#include <stdexcept>
#include <stop_token>
#include <thread>
#include <vector>

#include "fjord/detail/submission_lane.hpp"
#include "fjord/detail/sync_wait_loop.hpp"
#include "fjord/join.hpp"
#include "fjord/sync_wait.hpp"
#include "fjord/task.hpp"
#include "support/pool_fixture.hpp"
#include "support/throwing_copy.hpp"

namespace fjord::detail {
struct task_group_test_access {
  // The latch's count, including children run inline and not yet settled.
  static std::uint32_t raw_count(const task_group& g) { return g.latch_.count(); }
};
}  // namespace fjord::detail

namespace {

// Runs on pools of 1, 2 and 4 workers and checks that nothing is left behind.
class task_group_on_pools : public fjord_test::pool_fixture {};
class task_group_wait_for_on_pools : public fjord_test::pool_fixture {};
class task_group_on_finish_on_pools : public fjord_test::pool_fixture {};

using namespace std::chrono_literals;

TEST_P(task_group_on_pools, runs_all_children) {
  fjord::pool& p = pool();
  fjord::task_group g(p);
  std::atomic<int> n{0};
  for (int i = 0; i < 1000; ++i) {
    g.run([&] { n.fetch_add(1); });
  }
  EXPECT_EQ(g.wait(), fjord::task_group_status::complete);
  EXPECT_EQ(n.load(), 1000);
}

TEST_P(task_group_on_pools, reusable_after_wait) {
  fjord::pool& p = pool();
  fjord::task_group g(p);
  std::atomic<int> n{0};
  for (int round = 0; round < 10; ++round) {
    for (int i = 0; i < 10; ++i) {
      g.run([&] { n.fetch_add(1); });
    }
    g.wait();
    EXPECT_EQ(n.load(), (round + 1) * 10);
  }
}

TEST(task_group, inside_a_worker_uses_that_pool_and_helps) {
  fjord::pool p(fjord::pool_options{.workers = 1});
  const int n = p.call([&] {
    fjord::task_group g;  // the calling worker's pool
    std::atomic<int> c{0};
    for (int i = 0; i < 100; ++i) {
      g.run([&] { c.fetch_add(p.owns_current_thread() ? 1 : 1000); });
    }
    g.wait();
    return c.load();
  });
  EXPECT_EQ(n, 100);
}

TEST_P(task_group_on_pools, nested_groups) {
  fjord::pool& p = pool();
  std::atomic<int> leaves{0};
  p.call([&] {
    fjord::task_group outer;
    for (int i = 0; i < 20; ++i) {
      outer.run([&] {
        fjord::task_group inner;
        for (int k = 0; k < 20; ++k) {
          inner.run([&] { leaves.fetch_add(1); });
        }
        inner.wait();
      });
    }
    outer.wait();
  });
  EXPECT_EQ(leaves.load(), 400);
}

TEST_P(task_group_on_pools, first_exception_rethrown_others_counted) {
  fjord::pool& p = pool();
  fjord::task_group g(p);
  for (int i = 0; i < 10; ++i) {
    g.run([] { throw std::runtime_error("child"); });
  }
  EXPECT_THROW(g.wait(), std::runtime_error);
  // The throwing children that started before the stop each count once,
  // except the first which was rethrown; the others were skipped.
  const auto suppressed = p.stats().suppressed_exceptions;
  EXPECT_LE(suppressed, 9u);
  // After the rethrow the group is clean again.
  EXPECT_EQ(g.wait(), fjord::task_group_status::canceled);
}

TEST(task_group, cancel_skips_children_not_started) {
  fjord::pool p(fjord::pool_options{.workers = 1});
  fjord::task_group g(p);
  std::atomic<bool> release{false};
  std::atomic<int> ran{0};
  g.run([&] {
    while (!release.load()) {
      std::this_thread::sleep_for(100us);
    }
    ran.fetch_add(1);
  });
  for (int i = 0; i < 100; ++i) {
    g.run([&] { ran.fetch_add(1); });
  }
  g.cancel();
  release = true;
  EXPECT_EQ(g.wait(), fjord::task_group_status::canceled);
  EXPECT_LT(ran.load(), 101);
}

TEST_P(task_group_on_pools, children_see_the_stop_token) {
  fjord::pool& p = pool();
  fjord::task_group g(p);
  std::atomic<bool> saw_stop{false};
  std::atomic<bool> started{false};
  g.run([&](std::stop_token st) {
    started = true;
    while (!st.stop_requested()) {
      std::this_thread::sleep_for(100us);
    }
    saw_stop = true;
  });
  while (!started.load()) {
    std::this_thread::yield();
  }
  g.cancel();
  EXPECT_EQ(g.wait(), fjord::task_group_status::canceled);
  EXPECT_TRUE(saw_stop.load());
}

TEST_P(task_group_on_pools, external_stop_token_cancels) {
  fjord::pool& p = pool();
  std::stop_source source;
  fjord::task_group g(p, source.get_token());
  std::atomic<bool> started{false};
  g.run([&](std::stop_token st) {
    started = true;
    while (!st.stop_requested()) {
      std::this_thread::sleep_for(100us);
    }
  });
  while (!started.load()) {
    std::this_thread::yield();
  }
  source.request_stop();
  EXPECT_EQ(g.wait(), fjord::task_group_status::canceled);
}

TEST_P(task_group_on_pools, destructor_waits_for_running_children) {
  fjord::pool& p = pool();
  std::atomic<int> n{0};
  {
    fjord::task_group g(p);
    for (int i = 0; i < 50; ++i) {
      g.run([&] {
        std::this_thread::sleep_for(50us);
        n.fetch_add(1);
      });
    }
  }
  EXPECT_EQ(n.load(), 50);
}

// From outside the pool a small child goes in a slot of the caller's
// submission lane; a paused pool lets the lane fill (its rings double up to
// max_capacity, fewer than 2 * max_capacity slots in all), so the later
// children take the heap-job path. Each runs once.
TEST_P(task_group_on_pools, children_from_outside_run_once_each_past_a_full_lane) {
  fjord::pool& p = pool();
  constexpr int children =
      2 * static_cast<int>(fjord::detail::submission_lane::max_capacity) + 10'000;
  std::vector<std::atomic<int>> runs(children);
  fjord::task_group g(p);
  p.pause();
  for (int i = 0; i < children; ++i) {
    g.run([&runs, i] { runs[static_cast<std::size_t>(i)].fetch_add(1); });
  }
  p.resume();
  EXPECT_EQ(g.wait(), fjord::task_group_status::complete);
  int wrong = 0;
  for (const auto& r : runs) {
    wrong += r.load() == 1 ? 0 : 1;
  }
  EXPECT_EQ(wrong, 0);
}

// A callable too large for a lane slot takes the heap-job path from outside.
TEST_P(task_group_on_pools, a_large_child_from_outside_runs) {
  fjord::pool& p = pool();
  std::array<long, 16> payload{};
  payload.fill(3);
  std::atomic<long> sum{0};
  fjord::task_group g(p);
  for (int i = 0; i < 100; ++i) {
    g.run([payload, &sum] {
      long s = 0;
      for (long v : payload) {
        s += v;
      }
      sum.fetch_add(s);
    });
  }
  EXPECT_EQ(g.wait(), fjord::task_group_status::complete);
  EXPECT_EQ(sum.load(), 100 * 16 * 3);
}

// A child whose copy throws inside run(): the exception reaches the caller,
// the group's count is given back, and the other children still run.
TEST_P(task_group_on_pools, a_child_that_throws_when_copied_in_leaves_the_group_whole) {
  using fjord_test::throwing_copy;
  fjord::pool& p = pool();
  std::atomic<int> ran{0};
  fjord::task_group g(p);
  const throwing_copy good(&ran, false);
  const throwing_copy bad(&ran, true);
  for (int i = 0; i < 50; ++i) {
    g.run(good);
    EXPECT_THROW(g.run(bad), std::runtime_error);
  }
  EXPECT_EQ(g.wait(), fjord::task_group_status::complete);
  EXPECT_EQ(ran.load(), 50);
}

// A callable whose copy constructor is explicit is stored as a heap job's
// is, by direct initialisation, on the lane path too.
TEST_P(task_group_on_pools, a_child_with_an_explicit_copy_constructor_from_outside) {
  struct explicit_copy {
    std::atomic<int>* ran;
    explicit explicit_copy(std::atomic<int>* r) : ran(r) {}
    explicit explicit_copy(const explicit_copy&) = default;
    void operator()() const { ran->fetch_add(1); }
  };
  fjord::pool& p = pool();
  std::atomic<int> ran{0};
  const explicit_copy child(&ran);
  fjord::task_group g(p);
  for (int i = 0; i < 10; ++i) {
    g.run(child);
  }
  EXPECT_EQ(g.wait(), fjord::task_group_status::complete);
  EXPECT_EQ(ran.load(), 10);
}

// A worker of one pool running a group on another is outside that pool.
TEST(task_group, children_from_a_worker_of_another_pool) {
  fjord::pool a(fjord::pool_options{.workers = 1});
  fjord::pool b(fjord::pool_options{.workers = 2});
  const int ran = a.call([&b] {
    std::atomic<int> n{0};
    fjord::task_group g(b);
    for (int i = 0; i < 1000; ++i) {
      g.run([&n, &b] { n.fetch_add(b.owns_current_thread() ? 1 : 1000); });
    }
    g.wait();
    return n.load();
  });
  EXPECT_EQ(ran, 1000);
}

TEST(task_group, children_come_from_the_worker_heap) {
  fjord::pool p(fjord::pool_options{.workers = 1});
  p.call([&] {
    fjord::task_group g;
    for (int i = 0; i < 1000; ++i) {
      g.run([] {});
    }
    g.wait();
  });
  EXPECT_EQ(fjord::detail::pool_access::core(p).live_heap_blocks(), 0);
}

TEST(task_group_wait_for, a_timeout_cancels_nothing) {
  fjord::pool p(fjord::pool_options{.workers = 2});
  fjord::task_group g(p);
  std::atomic<bool> release{false};
  std::atomic<int> ran{0};
  g.run([&] {
    while (!release.load()) {
      std::this_thread::sleep_for(1ms);
    }
    ran.fetch_add(1);
  });
  EXPECT_EQ(g.wait_for(20ms), fjord::task_group_status::timeout);
  EXPECT_EQ(g.wait_until(std::chrono::system_clock::now() - 1h), fjord::task_group_status::timeout);
  EXPECT_FALSE(g.is_canceling());
  g.run([&] { ran.fetch_add(1); });  // still open
  release = true;
  EXPECT_EQ(g.wait_for(std::chrono::hours::max()), fjord::task_group_status::complete);
  EXPECT_EQ(ran.load(), 2);
}

TEST_P(task_group_wait_for_on_pools, an_empty_group_is_complete_at_once) {
  fjord::pool& p = pool();
  fjord::task_group g(p);
  EXPECT_EQ(g.wait_for(0s), fjord::task_group_status::complete);
  EXPECT_EQ(g.wait_until(std::chrono::steady_clock::time_point::min()),
            fjord::task_group_status::complete);
}

TEST_P(task_group_wait_for_on_pools, rethrows_when_done_in_time_and_reports_cancellation) {
  fjord::pool& p = pool();
  fjord::task_group g(p);
  g.run([] { throw std::runtime_error("child"); });
  EXPECT_THROW(g.wait_for(10s), std::runtime_error);
  fjord::task_group h(p);
  h.cancel();
  h.run([] {});
  EXPECT_EQ(h.wait_for(10s), fjord::task_group_status::canceled);
}

TEST(task_group_wait_for, on_a_worker_helps_until_the_deadline) {
  fjord::pool p(fjord::pool_options{.workers = 2});
  p.call([&] {
    fjord::task_group g(p);
    std::atomic<int> ran{0};
    for (int i = 0; i < 100; ++i) {
      g.run([&] { ran.fetch_add(1); });
    }
    EXPECT_EQ(g.wait_for(10s), fjord::task_group_status::complete);
    EXPECT_EQ(ran.load(), 100);
    // A child that the other worker runs (it started while this one was
    // busy here) and that outlasts the deadline: the helping wait times out.
    std::atomic<bool> started{false};
    std::atomic<bool> release{false};
    g.run([&] {
      started = true;
      while (!release.load()) {
        std::this_thread::sleep_for(1ms);
      }
    });
    while (!started.load()) {
      std::this_thread::yield();
    }
    EXPECT_EQ(g.wait_for(20ms), fjord::task_group_status::timeout);
    release = true;
    EXPECT_EQ(g.wait(), fjord::task_group_status::complete);
  });
}

TEST_P(task_group_on_finish_on_pools, runs_once_after_every_child_with_the_status) {
  fjord::pool& p = pool();
  std::atomic<int> calls{0};
  std::atomic<int> ran{0};
  std::atomic<int> ran_at_callback{-1};
  fjord::task_group g(p);
  for (int i = 0; i < 1000; ++i) {
    g.run([&] { ran.fetch_add(1); });
  }
  g.on_finish([&](fjord::task_group_status s, std::exception_ptr e) {
    EXPECT_EQ(s, fjord::task_group_status::complete);
    EXPECT_EQ(e, nullptr);
    ran_at_callback = ran.load();
    calls.fetch_add(1);
  });
  EXPECT_EQ(g.wait(), fjord::task_group_status::complete);
  // wait() returned after the callback did.
  EXPECT_EQ(calls.load(), 1);
  EXPECT_EQ(ran_at_callback.load(), 1000);
}

TEST(task_group_on_finish, with_nothing_pending_runs_at_once_on_the_caller) {
  fjord::pool p(fjord::pool_options{.workers = 1});
  fjord::task_group g(p);
  const std::thread::id me = std::this_thread::get_id();
  std::thread::id ran_on;
  g.on_finish(
      [&](fjord::task_group_status, std::exception_ptr) { ran_on = std::this_thread::get_id(); });
  EXPECT_EQ(ran_on, me);
}

TEST_P(task_group_on_finish_on_pools,
       receives_the_first_exception_which_wait_then_does_not_rethrow) {
  fjord::pool& p = pool();
  fjord::task_group g(p);
  std::exception_ptr got;
  fjord::task_group_status got_status = fjord::task_group_status::complete;
  g.run([] { throw std::runtime_error("first"); });
  g.on_finish([&](fjord::task_group_status s, std::exception_ptr e) {
    got_status = s;
    got = std::move(e);
  });
  EXPECT_EQ(g.wait(), fjord::task_group_status::canceled);
  ASSERT_NE(got, nullptr);
  EXPECT_THROW(std::rethrow_exception(got), std::runtime_error);
  EXPECT_EQ(got_status, fjord::task_group_status::canceled);
  EXPECT_EQ(p.stats().suppressed_exceptions, 0u);
}

TEST_P(task_group_on_finish_on_pools, run_after_the_finish_and_a_second_on_finish_throw) {
  fjord::pool& p = pool();
  fjord::task_group g(p);
  g.run([] {});
  g.on_finish([](fjord::task_group_status, std::exception_ptr) {});
  EXPECT_THROW(g.on_finish([](fjord::task_group_status, std::exception_ptr) {}), std::logic_error);
  g.wait();
  try {
    g.run([] {});
    ADD_FAILURE() << "run() after the finish did not throw";
  } catch (const std::logic_error& e) {
    EXPECT_NE(std::string(e.what()).find("finished"), std::string::npos) << e.what();
  }
  EXPECT_EQ(g.wait(), fjord::task_group_status::complete);  // the refused child left no count
}

TEST_P(task_group_on_finish_on_pools, children_added_by_children_are_waited_for) {
  fjord::pool& p = pool();
  fjord::task_group g(p);
  std::atomic<int> leaves{0};
  std::atomic<int> leaves_at_callback{-1};
  std::function<void(int)> spread = [&](int depth) {
    if (depth == 0) {
      leaves.fetch_add(1);
      return;
    }
    g.run([&spread, depth] { spread(depth - 1); });
    g.run([&spread, depth] { spread(depth - 1); });
  };
  g.run([&] { spread(10); });
  g.on_finish(
      [&](fjord::task_group_status, std::exception_ptr) { leaves_at_callback = leaves.load(); });
  g.wait();
  EXPECT_EQ(leaves_at_callback.load(), 1024);
}

TEST_P(task_group_on_finish_on_pools, exactly_once_racing_cancellation) {
  fjord::pool& p = pool();
  for (int trial = 0; trial < 300; ++trial) {
    std::atomic<int> calls{0};
    std::atomic<int> ran{0};
    fjord::task_group_status status = fjord::task_group_status::timeout;
    {
      fjord::task_group g(p);
      std::latch go(2);
      std::thread canceler([&] {
        go.arrive_and_wait();
        if (trial % 3 != 0) {
          g.cancel();
        }
      });
      for (int i = 0; i < 50; ++i) {
        g.run([&] { ran.fetch_add(1); });
      }
      go.arrive_and_wait();
      g.on_finish([&](fjord::task_group_status s, std::exception_ptr) {
        status = s;
        calls.fetch_add(1);
      });
      canceler.join();
    }  // the destructor waits for the callback
    ASSERT_EQ(calls.load(), 1) << "trial " << trial;
    if (status == fjord::task_group_status::complete) {
      EXPECT_EQ(ran.load(), 50);
    } else {
      EXPECT_EQ(status, fjord::task_group_status::canceled);
    }
  }
}

TEST(task_group_on_finish, a_throwing_callback_goes_to_the_pools_handler) {
  std::atomic<int> handled{0};
  fjord::pool p(fjord::pool_options{
      .workers = 2,
      .unhandled_exception_handler = [&](std::exception_ptr) { handled.fetch_add(1); }});
  fjord::task_group g(p);
  g.run([] {});
  g.on_finish([](fjord::task_group_status, std::exception_ptr) { throw std::runtime_error("cb"); });
  g.wait();
  EXPECT_EQ(handled.load(), 1);
}

TEST_P(task_group_on_finish_on_pools, a_move_only_callback) {
  fjord::pool& p = pool();
  std::promise<fjord::task_group_status> done;
  std::future<fjord::task_group_status> result = done.get_future();
  fjord::task_group g(p);
  g.run([] {});
  g.on_finish([d = std::move(done)](fjord::task_group_status s, std::exception_ptr) mutable {
    d.set_value(s);
  });
  EXPECT_EQ(result.get(), fjord::task_group_status::complete);
  g.wait();
}

// A worker's wait() runs the children still on its own deque without
// counting them down (the group owes those count-downs until the next
// sleep, on_finish or the destructor): the tests below use a group after
// such a wait in every other way.

// Three rounds of run and wait on a worker (or a caller joining the pool),
// whose children are mostly run inline by the wait.
void run_inline_waits(fjord::pool& p, fjord::task_group& g) {
  std::atomic<int> ran{0};
  p.call([&] {
    for (int round = 0; round < 3; ++round) {
      for (int i = 0; i < 20; ++i) {
        g.run([&] { ran.fetch_add(1); });
      }
      g.wait();
    }
  });
  EXPECT_EQ(ran.load(), 60);
}

// A child that sets `done` 20 ms from now.
void run_slow_child(fjord::task_group& g, std::atomic<bool>& done) {
  g.run([&done] {
    std::this_thread::sleep_for(20ms);
    done = true;
  });
}

// wait() returns only once a slow child has finished.
void expect_wait_to_wait_for_a_slow_child(fjord::task_group& g) {
  std::atomic<bool> done{false};
  run_slow_child(g, done);
  EXPECT_EQ(g.wait(), fjord::task_group_status::complete);
  EXPECT_TRUE(done.load());
}

TEST_P(task_group_on_pools, a_wait_from_outside_after_inline_waits_waits_for_new_children) {
  fjord::pool& p = pool();
  fjord::task_group g(p);
  run_inline_waits(p, g);
  expect_wait_to_wait_for_a_slow_child(g);
}

TEST_P(task_group_on_pools, a_timed_wait_from_outside_after_inline_waits_waits_for_new_children) {
  fjord::pool& p = pool();
  fjord::task_group g(p);
  run_inline_waits(p, g);
  g.run([] { std::this_thread::sleep_for(200ms); });
  EXPECT_EQ(g.wait_for(1ms), fjord::task_group_status::timeout);
  EXPECT_EQ(g.wait_for(10s), fjord::task_group_status::complete);
  expect_wait_to_wait_for_a_slow_child(g);
}

TEST_P(task_group_on_pools, the_destructor_after_inline_waits_waits_for_new_children) {
  fjord::pool& p = pool();
  std::atomic<bool> slow_done{false};
  {
    fjord::task_group g(p);
    run_inline_waits(p, g);
    run_slow_child(g, slow_done);
  }
  EXPECT_TRUE(slow_done.load());
}

TEST_P(task_group_on_finish_on_pools, after_inline_waits_with_nothing_pending_runs_at_once) {
  fjord::pool& p = pool();
  const bool ran_at_once = p.call([&] {
    fjord::task_group g;
    std::atomic<int> ran{0};
    for (int i = 0; i < 20; ++i) {
      g.run([&] { ran.fetch_add(1); });
    }
    g.wait();
    bool called = false;
    g.on_finish([&](fjord::task_group_status, std::exception_ptr) { called = true; });
    return called && ran.load() == 20;
  });
  EXPECT_TRUE(ran_at_once);
}

TEST_P(task_group_on_finish_on_pools, a_worker_waiting_under_a_finish_hold_runs_the_callback) {
  fjord::pool& p = pool();
  const int ran_at_callback = p.call([&] {
    fjord::task_group g;
    std::atomic<int> ran{0};
    int seen = -1;
    for (int i = 0; i < 100; ++i) {
      g.run([&] { ran.fetch_add(1); });
    }
    g.on_finish([&](fjord::task_group_status, std::exception_ptr) { seen = ran.load(); });
    EXPECT_EQ(g.wait(), fjord::task_group_status::complete);
    return seen;  // wait() returned after the callback did
  });
  EXPECT_EQ(ran_at_callback, 100);
}

TEST(task_group, a_group_reused_forever_keeps_its_count_bounded) {
  // One worker running the call itself: every child runs inline in wait(),
  // and the count owed for them must be settled now and then, or the
  // latch would report "more than 2147483647 pending children" one day.
  fjord::pool p(fjord::pool_options{.workers = 1, .callers_join = false});
  const std::uint32_t count = p.call([&] {
    fjord::task_group g;
    for (int i = 0; i < 200'000; ++i) {
      g.run([] {});
      g.wait();
    }
    return fjord::detail::task_group_test_access::raw_count(g);
  });
  EXPECT_LE(count, std::uint32_t{1} << 16);
}

TEST(task_group_on_finish, called_by_a_child_run_inline_by_the_waiter) {
  fjord::pool p(fjord::pool_options{.workers = 1, .callers_join = false});
  const int calls = p.call([&] {
    fjord::task_group g;
    int n = 0;
    g.run([&] { g.on_finish([&](fjord::task_group_status, std::exception_ptr) { ++n; }); });
    g.run([] {});  // popped first: one inline child owed before on_finish
    g.wait();
    return n;
  });
  EXPECT_EQ(calls, 1);
}

TEST(task_group, children_run_inline_do_not_see_a_sync_wait_on_the_thread) {
  fjord::pool p(fjord::pool_options{.workers = 1, .callers_join = false});
  const bool hidden = p.call([&] {
    const void* seen = &p;
    fjord::sync_wait([&]() -> fjord::task<void> {
      fjord::task_group g;
      g.run([&] { seen = fjord::detail::sync_wait_loop::current(); });
      g.wait();
      co_return;
    }());
    return seen == nullptr;
  });
  EXPECT_TRUE(hidden);
}

TEST(task_group, a_wait_runs_another_groups_child_as_that_groups) {
  // One worker, running the call itself: g2's wait pops g1's child (g2's
  // only child came from outside) and must count it for g1, not for itself.
  fjord::pool p(fjord::pool_options{.workers = 1, .callers_join = false});
  const bool ok = p.call([&] {
    std::atomic<int> ran1{0};
    std::atomic<int> ran2{0};
    fjord::task_group g1;
    g1.run([&] { ran1.fetch_add(1); });
    fjord::task_group g2;
    std::thread outside([&] {
      g2.run([&] {
        std::this_thread::sleep_for(5ms);
        ran2.fetch_add(1);
      });
    });
    outside.join();
    g2.wait();
    const bool g2_waited = ran2.load() == 1;
    g1.wait();
    return g2_waited && ran1.load() == 1;
  });
  EXPECT_TRUE(ok);
}

INSTANTIATE_TEST_SUITE_P(workers, task_group_on_pools, fjord_test::worker_counts,
                         fjord_test::worker_count_name);
INSTANTIATE_TEST_SUITE_P(workers, task_group_wait_for_on_pools, fjord_test::worker_counts,
                         fjord_test::worker_count_name);
INSTANTIATE_TEST_SUITE_P(workers, task_group_on_finish_on_pools, fjord_test::worker_counts,
                         fjord_test::worker_count_name);

}  // namespace
