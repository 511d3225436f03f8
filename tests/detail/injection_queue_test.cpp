#include "fjord/detail/injection_queue.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <thread>
#include <vector>

namespace {

using fjord::detail::injection_queue;
using fjord::detail::job;

void noop(job*) noexcept {}

struct test_job : job {
  test_job() noexcept : job(&noop) {}
};

TEST(injection_queue, fifo_single_thread) {
  injection_queue q;
  EXPECT_FALSE(q.maybe_nonempty());
  std::vector<test_job> jobs(5);
  for (auto& j : jobs) {
    q.push(&j);
  }
  EXPECT_TRUE(q.maybe_nonempty());
  ASSERT_TRUE(q.try_lock_consumer());
  EXPECT_FALSE(q.try_lock_consumer());
  for (auto& j : jobs) {
    EXPECT_EQ(q.pop(), &j);
  }
  EXPECT_EQ(q.pop(), nullptr);
  q.unlock_consumer();
  EXPECT_FALSE(q.maybe_nonempty());
}

TEST(injection_queue, chains_keep_their_order) {
  injection_queue q;
  std::vector<test_job> jobs(4);
  for (std::size_t i = 0; i + 1 < jobs.size(); ++i) {
    jobs[i].next().store(&jobs[i + 1]);
  }
  q.push_chain(&jobs.front(), &jobs.back(), jobs.size());
  EXPECT_EQ(q.depth(), 4u);
  ASSERT_TRUE(q.try_lock_consumer());
  for (auto& j : jobs) {
    EXPECT_EQ(q.pop(), &j);
  }
  EXPECT_EQ(q.pop(), nullptr);
  EXPECT_EQ(q.depth(), 0u) << "the sentinel's re-insertion is not a job";
  q.unlock_consumer();
}

// Many producers (single and chained pushes), several consumers taking turns:
// each job comes out exactly once, and each producer's jobs in order.
TEST(injection_queue, stress_many_producers_many_consumers) {
  constexpr int producers = 4;
  constexpr int per_producer = 50000;
  injection_queue q;
  std::vector<test_job> jobs(std::size_t{producers} * per_producer);
  std::vector<std::atomic<int>> seen(jobs.size());
  std::atomic<int> consumed{0};
  std::vector<std::thread> threads;
  for (int p = 0; p < producers; ++p) {
    threads.emplace_back([&, p] {
      test_job* base = &jobs[static_cast<std::size_t>(p) * per_producer];
      int i = 0;
      while (i < per_producer) {
        const int chain = (i % 7 == 0) ? std::min(5, per_producer - i) : 1;
        for (int k = 0; k + 1 < chain; ++k) {
          base[i + k].next().store(&base[i + k + 1], std::memory_order_relaxed);
        }
        q.push_chain(&base[i], &base[i + chain - 1], static_cast<std::uint64_t>(chain));
        i += chain;
      }
    });
  }
  for (int c = 0; c < 3; ++c) {
    threads.emplace_back([&] {
      // Trust maybe_nonempty() as the workers do: if it ever said "empty"
      // with jobs left behind, this loop would never finish.
      while (consumed.load() < static_cast<int>(jobs.size())) {
        if (!q.maybe_nonempty() || !q.try_lock_consumer()) {
          continue;
        }
        while (job* j = q.pop()) {
          const auto idx = static_cast<std::size_t>(static_cast<test_job*>(j) - jobs.data());
          seen[idx].fetch_add(1);
          consumed.fetch_add(1);
        }
        q.unlock_consumer();
      }
    });
  }
  for (auto& t : threads) {
    t.join();
  }
  for (std::size_t i = 0; i < jobs.size(); ++i) {
    ASSERT_EQ(seen[i].load(), 1) << i;
  }
  EXPECT_FALSE(q.maybe_nonempty());
  EXPECT_EQ(q.depth(), 0u);
}

// Small bursts consumed as they come: the consumer often reaches the last
// node while a producer is between its exchange and its link, the case where
// the sentinel goes back behind an unlinked node.
TEST(injection_queue, stress_consumer_on_the_last_node) {
  injection_queue q;
  constexpr int total = 200000;
  std::vector<test_job> jobs(total);
  std::atomic<int> consumed{0};
  std::thread producer([&] {
    for (int i = 0; i < total; ++i) {
      q.push(&jobs[static_cast<std::size_t>(i)]);
    }
  });
  std::thread consumer([&] {
    while (consumed.load(std::memory_order_relaxed) < total) {
      if (!q.maybe_nonempty()) {
        continue;
      }
      ASSERT_TRUE(q.try_lock_consumer());
      while (q.pop() != nullptr) {
        consumed.fetch_add(1, std::memory_order_relaxed);
      }
      q.unlock_consumer();
    }
  });
  producer.join();
  consumer.join();
  EXPECT_EQ(consumed.load(), total);
  EXPECT_FALSE(q.maybe_nonempty());
}

}  // namespace
