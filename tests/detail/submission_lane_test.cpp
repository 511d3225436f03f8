#include "fjord/detail/submission_lane.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <random>
#include <thread>
#include <vector>

namespace {

using fjord::detail::job;
using fjord::detail::lane_ring;
using fjord::detail::run_job;
using fjord::detail::submission_lane;

// A job that counts its runs.
struct counted_job : job {
  counted_job() noexcept : job(&execute) {}
  static void execute(job* j) noexcept { static_cast<counted_job*>(j)->runs.fetch_add(1); }
  std::atomic<int> runs{0};
};

// Publishes j by pointer; false when the lane is full.
bool publish(submission_lane& lane, job* j) {
  lane.begin();
  lane_ring::slot* s = lane.next_free_slot();
  if (s != nullptr) {
    lane_ring::store_pointer(s, j);
    lane.publish(s, lane_ring::run_pointer_fn());
  }
  lane.end();
  return s != nullptr;
}

TEST(submission_lane, jobs_come_out_in_order_and_run_once) {
  submission_lane lane;
  EXPECT_FALSE(lane.maybe_nonempty());
  EXPECT_FALSE(lane.head_published());
  std::vector<counted_job> jobs(10);
  for (auto& j : jobs) {
    ASSERT_TRUE(publish(lane, &j));
  }
  EXPECT_TRUE(lane.maybe_nonempty());
  EXPECT_TRUE(lane.head_published());
  std::vector<job*> taken;
  job* batch[4];
  while (const std::size_t n = lane.take(batch, 4, 1)) {
    taken.insert(taken.end(), batch, batch + n);
  }
  ASSERT_EQ(taken.size(), jobs.size());
  for (job* slot : taken) {
    run_job(slot);  // runs the pointed-to job and frees the slot
  }
  for (auto& j : jobs) {
    EXPECT_EQ(j.runs.load(), 1);
  }
  EXPECT_FALSE(lane.maybe_nonempty());
}

TEST(submission_lane, a_shallow_lane_is_split_between_consumers) {
  submission_lane lane;
  std::vector<counted_job> jobs(6);
  for (auto& j : jobs) {
    ASSERT_TRUE(publish(lane, &j));
  }
  job* batch[16];
  // 6 waiting, 16 wanted, 2 consumers: this one takes half.
  const std::size_t n = lane.take(batch, 16, 2);
  EXPECT_EQ(n, 3u);
  for (std::size_t i = 0; i < n; ++i) {
    run_job(batch[i]);
  }
  while (const std::size_t m = lane.take(batch, 16, 1)) {
    for (std::size_t i = 0; i < m; ++i) {
      run_job(batch[i]);
    }
  }
  for (auto& j : jobs) {
    EXPECT_EQ(j.runs.load(), 1);
  }
}

// Nothing is taken while the producer keeps publishing: the lane grows ring
// by ring up to max_capacity, then reports full; the consumers get every
// job back in order, across the rings.
TEST(submission_lane, grows_until_max_capacity_then_reports_full) {
  submission_lane lane;
  const std::size_t limit = 2 * submission_lane::max_capacity;
  std::vector<counted_job> jobs(limit + 1);
  std::size_t published = 0;
  while (published < jobs.size() && publish(lane, &jobs[published])) {
    ++published;
  }
  // Every ring up to the largest filled: 256 + 512 + ... + max_capacity.
  EXPECT_EQ(published, limit - submission_lane::initial_capacity);
  std::size_t expected = 0;
  job* batch[16];
  while (const std::size_t n = lane.take(batch, 16, 1)) {
    for (std::size_t i = 0; i < n; ++i) {
      // Slots hold pointers in publication order.
      run_job(batch[i]);
      ASSERT_EQ(jobs[expected].runs.load(), 1) << expected;
      ++expected;
    }
  }
  EXPECT_EQ(expected, published);
  // Room again (in the largest ring), and nothing left over.
  ASSERT_TRUE(publish(lane, &jobs[published]));
  EXPECT_EQ(lane.take(batch, 16, 1), 1u);
  run_job(batch[0]);
  EXPECT_EQ(jobs[published].runs.load(), 1);
}

// Slots freed out of order: the producer sees its next slot busy as full
// (and grows) rather than overwriting a job that has not run.
TEST(submission_lane, out_of_order_release_never_overwrites_a_job) {
  submission_lane lane;
  constexpr std::size_t rounds = 20;
  std::vector<counted_job> jobs(rounds * submission_lane::initial_capacity);
  std::vector<job*> held;
  std::mt19937 rng(7);
  std::size_t next = 0;
  job* batch[16];
  for (std::size_t r = 0; r < rounds; ++r) {
    for (std::size_t i = 0; i < submission_lane::initial_capacity; ++i) {
      ASSERT_TRUE(publish(lane, &jobs[next++]));
    }
    while (const std::size_t n = lane.take(batch, 16, 1)) {
      held.insert(held.end(), batch, batch + n);
    }
    // Run a random half of what is held, in random order; keep the rest.
    std::shuffle(held.begin(), held.end(), rng);
    const std::size_t run = held.size() / 2;
    for (std::size_t i = 0; i < run; ++i) {
      run_job(held[i]);
    }
    held.erase(held.begin(), held.begin() + static_cast<std::ptrdiff_t>(run));
  }
  for (job* slot : held) {
    run_job(slot);
  }
  for (auto& j : jobs) {
    ASSERT_EQ(j.runs.load(), 1);
  }
}

// One producer, several consumers taking random batches and running them in
// random order on their own threads: every job runs exactly once, and the
// lane grows under the backlog.
TEST(submission_lane, stress_one_producer_many_consumers) {
  constexpr std::size_t total = 300000;
  constexpr int consumers = 3;
  submission_lane lane;
  std::vector<counted_job> jobs(total);
  std::atomic<std::size_t> ran{0};
  std::atomic<bool> produced{false};
  std::vector<std::thread> threads;
  for (int c = 0; c < consumers; ++c) {
    threads.emplace_back([&, c] {
      std::mt19937 rng(static_cast<unsigned>(c) + 1);
      job* batch[16];
      std::vector<job*> held;
      while (true) {
        const std::size_t max = rng() % 16 + 1;
        const std::size_t n = lane.take(batch, max, static_cast<std::size_t>(consumers));
        held.insert(held.end(), batch, batch + n);
        if (held.size() > 32 || (n == 0 && !held.empty())) {
          std::shuffle(held.begin(), held.end(), rng);
          for (job* slot : held) {
            run_job(slot);
          }
          ran.fetch_add(held.size());
          held.clear();
        }
        if (n == 0 && produced.load() && !lane.maybe_nonempty()) {
          break;
        }
      }
    });
  }
  std::size_t next = 0;
  while (next < total) {
    if (publish(lane, &jobs[next])) {
      ++next;
    } else {
      std::this_thread::yield();  // full at max_capacity: let consumers catch up
    }
  }
  produced = true;
  for (auto& t : threads) {
    t.join();
  }
  EXPECT_EQ(ran.load(), total);
  for (auto& j : jobs) {
    ASSERT_EQ(j.runs.load(), 1);
  }
}

TEST(submission_lane, ownership_passes_through_disown_and_adopt) {
  submission_lane lane;
  EXPECT_FALSE(lane.try_adopt());  // owned by its creator
  lane.disown();
  EXPECT_TRUE(lane.try_adopt());
  EXPECT_FALSE(lane.try_adopt());
}

}  // namespace
