#include "fjord/detail/work_stealing_deque.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <memory>
#include <thread>
#include <vector>

#include "fjord/detail/pool_core.hpp"

namespace {

using fjord::detail::heavy_fence;
using fjord::detail::job;
using fjord::detail::work_stealing_deque;
using steal_result = work_stealing_deque::steal_result;

void noop(job*) noexcept {}

struct test_job : job {
  test_job() noexcept : job(&noop) {}
};

struct fixture {
  fjord::detail::census census;
  work_stealing_deque deque{64, census};
};

TEST(work_stealing_deque, owner_pops_lifo) {
  fjord::detail::init_asymmetric_fences();
  fixture f;
  test_job a, b, c;
  ASSERT_TRUE(f.deque.push(&a));
  ASSERT_TRUE(f.deque.push(&b));
  ASSERT_TRUE(f.deque.push(&c));
  EXPECT_EQ(f.deque.pop(), &c);
  EXPECT_EQ(f.deque.pop(), &b);
  EXPECT_EQ(f.deque.pop(), &a);
  EXPECT_EQ(f.deque.pop(), nullptr);
  EXPECT_EQ(f.deque.pop(), nullptr);
}

TEST(work_stealing_deque, thief_steals_fifo) {
  fixture f;
  test_job a, b;
  f.deque.push(&a);
  f.deque.push(&b);
  job* out = nullptr;
  ASSERT_EQ(f.deque.steal(out), steal_result::success);
  EXPECT_EQ(out, &a);
  EXPECT_EQ(f.deque.pop(), &b);
  EXPECT_EQ(f.deque.steal(out), steal_result::empty);
}

TEST(work_stealing_deque, refuses_push_when_full_and_recovers) {
  fixture f;
  std::vector<test_job> jobs(65);
  for (int i = 0; i < 64; ++i) {
    ASSERT_TRUE(f.deque.push(&jobs[i])) << i;
  }
  EXPECT_FALSE(f.deque.push(&jobs[64]));
  job* out = nullptr;
  ASSERT_EQ(f.deque.steal(out), steal_result::success);
  EXPECT_EQ(out, &jobs[0]);
  EXPECT_TRUE(f.deque.push(&jobs[64]));
  EXPECT_EQ(f.deque.pop(), &jobs[64]);
}

TEST(work_stealing_deque, wraps_around_many_times) {
  fixture f;
  test_job a;
  for (int i = 0; i < 10000; ++i) {
    ASSERT_TRUE(f.deque.push(&a));
    if (i % 2 == 0) {
      ASSERT_EQ(f.deque.pop(), &a);
    } else {
      job* out = nullptr;
      ASSERT_EQ(f.deque.steal(out), steal_result::success);
    }
  }
  EXPECT_FALSE(f.deque.maybe_nonempty());
}

TEST(work_stealing_deque, a_held_registration_lapses_after_its_fenced_pops) {
  fixture f;
  test_job jobs[5];
  for (auto& j : jobs) {
    ASSERT_TRUE(f.deque.push(&j));
  }
  f.census.add_thief();  // the owner registers, as become_thief does
  f.deque.hold_registration(3);
  EXPECT_TRUE(f.deque.owner_registered());
  // Every pop fences while a thief (the owner itself) is registered, and the
  // third one ends the hold and the registration.
  EXPECT_EQ(f.deque.pop(), &jobs[4]);
  EXPECT_EQ(f.deque.pop(), &jobs[3]);
  EXPECT_TRUE(f.deque.owner_registered());
  EXPECT_EQ(f.census.load(std::memory_order_relaxed).thieves(), 1u);
  EXPECT_EQ(f.deque.pop(), &jobs[2]);
  EXPECT_FALSE(f.deque.owner_registered());
  EXPECT_EQ(f.census.load(std::memory_order_relaxed).thieves(), 0u);
  // Without a registered thief the next pops skip the fence and count nothing.
  EXPECT_EQ(f.deque.pop(), &jobs[1]);
  EXPECT_EQ(f.census.load(std::memory_order_relaxed).thieves(), 0u);
  EXPECT_EQ(f.deque.pop(), &jobs[0]);
}

TEST(work_stealing_deque, dropping_a_held_registration_deregisters_once) {
  fixture f;
  f.census.add_thief();
  f.deque.hold_registration(100);
  f.deque.drop_registration();
  EXPECT_FALSE(f.deque.owner_registered());
  EXPECT_EQ(f.census.load(std::memory_order_relaxed).thieves(), 0u);
  f.deque.drop_registration();  // not registered: nothing to give back
  EXPECT_EQ(f.census.load(std::memory_order_relaxed).thieves(), 0u);
}

// Owner pushes and pops while registered thieves steal: every job is taken
// exactly once. Run with asymmetric and with symmetric fences. With
// owner_holds, the owner also registers as a thief now and then with a short
// hold, so that registrations lapse inside its own pops, mid-race.
void hammer(int thieves, int rounds, bool owner_holds = false) {
  fjord::detail::init_asymmetric_fences();
  fjord::detail::census census;
  work_stealing_deque deque(256, census);
  const int total = rounds;
  std::vector<test_job> jobs(static_cast<std::size_t>(total));
  std::vector<std::atomic<int>> taken(static_cast<std::size_t>(total));
  std::atomic<bool> done{false};
  std::atomic<int> registered{0};
  auto index_of = [&](job* j) {
    return static_cast<std::size_t>(static_cast<test_job*>(j) - jobs.data());
  };

  std::vector<std::thread> pool;
  for (int t = 0; t < thieves; ++t) {
    pool.emplace_back([&] {
      // Register on and off, as searching workers do.
      while (!done.load(std::memory_order_acquire)) {
        census.add_searcher();
        census.add_thief();
        heavy_fence();
        registered.fetch_add(1);
        for (int k = 0; k < 200; ++k) {
          job* out = nullptr;
          if (deque.steal(out) == steal_result::success) {
            taken[index_of(out)].fetch_add(1, std::memory_order_relaxed);
          }
        }
        census.remove_searcher();
        census.remove_thief();
      }
    });
  }
  while (registered.load() == 0) {
    std::this_thread::yield();
  }
  int next = 0;
  std::uint32_t rng = 12345;
  while (next < total) {
    rng = rng * 1664525u + 1013904223u;
    const int burst = 1 + static_cast<int>(rng >> 28);
    for (int k = 0; k < burst && next < total; ++k) {
      if (!deque.push(&jobs[static_cast<std::size_t>(next)])) {
        break;
      }
      ++next;
    }
    if (owner_holds && !deque.owner_registered() && (rng & 0xF0) == 0) {
      census.add_thief();
      heavy_fence();
      deque.hold_registration(1 + ((rng >> 8) & 7));
    }
    const int pops = static_cast<int>((rng >> 24) & 7);
    for (int k = 0; k < pops; ++k) {
      if (job* j = deque.pop()) {
        taken[index_of(j)].fetch_add(1, std::memory_order_relaxed);
      }
    }
  }
  while (job* j = deque.pop()) {
    taken[index_of(j)].fetch_add(1, std::memory_order_relaxed);
  }
  done.store(true, std::memory_order_release);
  for (auto& t : pool) {
    t.join();
  }
  deque.drop_registration();
  EXPECT_EQ(census.load(std::memory_order_relaxed).thieves(), 0u);
  for (int i = 0; i < total; ++i) {
    ASSERT_EQ(taken[static_cast<std::size_t>(i)].load(), 1) << "job " << i;
  }
}

TEST(work_stealing_deque, stress_exactly_once_one_thief) {
  hammer(1, 200000);
}
TEST(work_stealing_deque, stress_exactly_once_three_thieves) {
  hammer(3, 200000);
}
TEST(work_stealing_deque, stress_exactly_once_while_the_owner_holds_registrations) {
  hammer(2, 200000, /*owner_holds=*/true);
}

}  // namespace
