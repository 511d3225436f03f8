#include "fjord/detail/job_heap.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <set>
#include <thread>
#include <vector>

namespace {

using fjord::detail::job_heap;

TEST(job_heap, blocks_are_distinct_aligned_and_recycled) {
  job_heap heap;
  std::set<void*> seen;
  std::vector<void*> blocks;
  for (int i = 0; i < 1000; ++i) {
    void* p = job_heap::allocate(&heap, 40);
    EXPECT_EQ(reinterpret_cast<std::uintptr_t>(p) % 16, 0u);
    EXPECT_TRUE(seen.insert(p).second);
    std::memset(p, 0xAB, 40);
    blocks.push_back(p);
  }
  EXPECT_EQ(heap.live_blocks(), 1000);
  for (void* p : blocks) {
    job_heap::deallocate(p);  // not the owner thread's heap: remote path
  }
  EXPECT_EQ(heap.live_blocks(), 0);
  // Freed blocks come back: after the slab's untouched tail (24 blocks of
  // 64 bytes) is used up, allocations are the freed ones, no new slab.
  std::vector<void*> again;
  std::size_t reused = 0;
  for (int i = 0; i < 1024; ++i) {
    again.push_back(job_heap::allocate(&heap, 40));
    reused += seen.count(again.back());
  }
  EXPECT_EQ(reused, 1000u);
  for (void* p : again) {
    job_heap::deallocate(p);
  }
}

TEST(job_heap, large_and_heapless_requests_use_operator_new) {
  job_heap heap;
  void* big = job_heap::allocate(&heap, 4096);
  void* none = job_heap::allocate(nullptr, 64);
  std::memset(big, 1, 4096);
  std::memset(none, 1, 64);
  EXPECT_EQ(heap.live_blocks(), 0);
  job_heap::deallocate(big);
  job_heap::deallocate(none);
}

TEST(job_heap, over_aligned_requests) {
  job_heap heap;
  for (std::size_t align : {32u, 64u, 128u, 4096u}) {
    void* p = job_heap::allocate(&heap, 100, align);
    EXPECT_EQ(reinterpret_cast<std::uintptr_t>(p) % align, 0u) << align;
    std::memset(p, 3, 100);
    job_heap::deallocate(p);
  }
  EXPECT_EQ(heap.live_blocks(), 0);
}

TEST(job_heap, every_size_class) {
  job_heap heap;
  for (std::size_t size : {1u, 48u, 49u, 112u, 240u, 496u, 497u}) {
    void* p = job_heap::allocate(&heap, size);
    std::memset(p, 7, size);
    job_heap::deallocate(p);
  }
  EXPECT_EQ(heap.live_blocks(), 0);
}

TEST(job_heap, concurrent_remote_frees) {
  job_heap heap;
  constexpr int n = 20000;
  std::vector<void*> blocks;
  for (int i = 0; i < n; ++i) {
    blocks.push_back(job_heap::allocate(&heap, 100));
  }
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = t; i < n; i += 4) {
        job_heap::deallocate(blocks[static_cast<std::size_t>(i)]);
      }
    });
  }
  for (auto& t : threads) {
    t.join();
  }
  EXPECT_EQ(heap.live_blocks(), 0);
}

}  // namespace
