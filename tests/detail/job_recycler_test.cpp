#include "fjord/detail/job_recycler.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <cstring>
#include <set>
#include <thread>
#include <vector>

namespace {

using fjord::detail::job_heap;
using fjord::detail::job_recycler;

TEST(job_recycler, blocks_freed_elsewhere_come_back) {
  job_recycler r;
  std::vector<void*> first;
  for (int i = 0; i < 100; ++i) {
    void* p = r.allocate(40, 16);
    EXPECT_EQ(reinterpret_cast<std::uintptr_t>(p) % 16, 0u);
    std::memset(p, 1, 40);
    first.push_back(p);
  }
  // Freed on another thread, as a worker would.
  std::thread([&] {
    for (void* p : first) {
      job_heap::deallocate(p);
    }
  }).join();
  std::set<void*> seen(first.begin(), first.end());
  std::size_t reused = 0;
  std::vector<void*> second;
  for (int i = 0; i < 100; ++i) {
    second.push_back(r.allocate(40, 16));
    reused += seen.count(second.back());
  }
  EXPECT_EQ(reused, 100u);
  for (void* p : second) {
    job_heap::deallocate(p);
  }
}

TEST(job_recycler, large_and_over_aligned_requests_bypass_it) {
  job_recycler r;
  void* big = r.allocate(2000, 16);
  void* aligned = r.allocate(64, 128);
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(aligned) % 128, 0u);
  std::memset(big, 2, 2000);
  job_heap::deallocate(big);
  job_heap::deallocate(aligned);
}

TEST(job_recycler, a_thread_moving_between_recyclers_drops_its_cache) {
  // Each recycler's blocks stay its own; ASan reports any block leaked when
  // a thread's cache switches recyclers or the thread exits.
  for (int round = 0; round < 10; ++round) {
    job_recycler a;
    job_recycler b;
    std::vector<void*> blocks;
    for (int i = 0; i < 50; ++i) {
      blocks.push_back(a.allocate(100, 16));
      blocks.push_back(b.allocate(100, 16));
    }
    for (void* p : blocks) {
      job_heap::deallocate(p);
    }
    void* again = a.allocate(100, 16);  // takes a's whole stack into the cache
    job_heap::deallocate(again);
  }
}

TEST(job_recycler, stress_producers_and_consumers) {
  job_recycler r;
  constexpr int per_producer = 20000;
  std::atomic<int> freed{0};
  std::vector<std::atomic<void*>> slots(1024);
  std::atomic<bool> done{false};
  std::thread consumer([&] {
    while (!done.load() || freed.load() < 2 * per_producer) {
      for (auto& s : slots) {
        if (void* p = s.exchange(nullptr)) {
          job_heap::deallocate(p);
          freed.fetch_add(1);
        }
      }
    }
  });
  std::vector<std::thread> producers;
  for (int t = 0; t < 2; ++t) {
    producers.emplace_back([&, t] {
      for (int i = 0; i < per_producer; ++i) {
        void* p = r.allocate(32 + (i % 3) * 100, 16);
        std::memset(p, t, 32);
        auto& s = slots[static_cast<std::size_t>((i * 2 + t) % 1024)];
        void* expected = nullptr;
        while (!s.compare_exchange_weak(expected, p)) {
          expected = nullptr;
          std::this_thread::yield();
        }
      }
    });
  }
  for (auto& p : producers) {
    p.join();
  }
  done = true;
  consumer.join();
  EXPECT_EQ(freed.load(), 2 * per_producer);
}

}  // namespace
