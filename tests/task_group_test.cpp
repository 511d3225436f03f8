#include "fjord/task_group.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <stdexcept>
#include <stop_token>
#include <thread>

#include "fjord/join.hpp"

namespace {

using namespace std::chrono_literals;

TEST(task_group, runs_all_children) {
  fjord::pool p(fjord::pool_options{.workers = 2});
  fjord::task_group g(p);
  std::atomic<int> n{0};
  for (int i = 0; i < 1000; ++i) {
    g.run([&] { n.fetch_add(1); });
  }
  EXPECT_EQ(g.wait(), fjord::task_group_status::complete);
  EXPECT_EQ(n.load(), 1000);
}

TEST(task_group, reusable_after_wait) {
  fjord::pool p(fjord::pool_options{.workers = 2});
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
  const int n = p.invoke([&] {
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

TEST(task_group, nested_groups) {
  fjord::pool p(fjord::pool_options{.workers = 2});
  std::atomic<int> leaves{0};
  p.invoke([&] {
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

TEST(task_group, first_exception_rethrown_others_counted) {
  fjord::pool p(fjord::pool_options{.workers = 2});
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

TEST(task_group, children_see_the_stop_token) {
  fjord::pool p(fjord::pool_options{.workers = 2});
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

TEST(task_group, external_stop_token_cancels) {
  fjord::pool p(fjord::pool_options{.workers = 2});
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

TEST(task_group, destructor_waits_for_running_children) {
  fjord::pool p(fjord::pool_options{.workers = 2});
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

TEST(task_group, children_come_from_the_worker_heap) {
  fjord::pool p(fjord::pool_options{.workers = 1});
  p.invoke([&] {
    fjord::task_group g;
    for (int i = 0; i < 1000; ++i) {
      g.run([] {});
    }
    g.wait();
  });
  EXPECT_EQ(p.core().live_heap_blocks(), 0);
}

}  // namespace
