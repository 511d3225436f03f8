#include "fjord/detail/frame_allocator.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <cstring>
#include <set>
#include <thread>
#include <vector>

#include "fjord/detail/assert.hpp"
#include "fjord/detail/config.hpp"
#include "fjord/scalable_memory.hpp"

namespace {

using fjord::detail::frame_allocator;

TEST(frame_allocator, blocks_are_distinct_and_writable) {
  std::vector<std::pair<void*, std::size_t>> blocks;
  for (std::size_t size = 1; size <= 2 * frame_allocator::max_cached_size; size += 37) {
    void* p = frame_allocator::allocate(size);
    std::memset(p, 0xAB, size);
    blocks.emplace_back(p, size);
  }
  std::set<void*> distinct;
  for (auto [p, size] : blocks) {
    distinct.insert(p);
    EXPECT_EQ(reinterpret_cast<std::uintptr_t>(p) % alignof(std::max_align_t), 0u);
  }
  EXPECT_EQ(distinct.size(), blocks.size());
  for (auto [p, size] : blocks) {
    frame_allocator::deallocate(p, size);
  }
}

TEST(frame_allocator, reuses_freed_blocks_on_the_same_thread) {
  void* a = frame_allocator::allocate(100);
  frame_allocator::deallocate(a, 100);
  if (FJORD_ASAN) {
    // Bypassed under AddressSanitizer, so that it sees every use after free.
    EXPECT_EQ(frame_allocator::cached_by_this_thread(), 0u);
    return;
  }
  EXPECT_GE(frame_allocator::cached_by_this_thread(), 1u);
  void* b = frame_allocator::allocate(110);  // same 112-byte class
  EXPECT_EQ(a, b);
  frame_allocator::deallocate(b, 110);
}

TEST(frame_allocator, cache_stays_bounded) {
  // Blocks earlier tests left in this thread's cache (any class) do not count.
  frame_allocator::flush_this_thread();
  std::vector<void*> blocks;
  for (int i = 0; i < 100'000; ++i) {
    blocks.push_back(frame_allocator::allocate(64));
  }
  for (void* p : blocks) {
    frame_allocator::deallocate(p, 64);
  }
  // 128 KiB of 64-byte blocks at most (none under AddressSanitizer).
  EXPECT_LE(frame_allocator::cached_by_this_thread(), FJORD_ASAN ? 0u : 2048u);
  frame_allocator::flush_this_thread();
  EXPECT_EQ(frame_allocator::cached_by_this_thread(), 0u);
}

// Producers allocate, consumers free (the frames of when_all children do
// this across workers); every block comes back exactly once and nothing
// leaks (LeakSanitizer checks the last part in the ASan build).
TEST(frame_allocator, cross_thread_frees) {
  constexpr int producers = 4;
  constexpr int per_producer = 50'000;
  std::vector<std::atomic<void*>> slots(std::size_t{producers} * per_producer);
  std::atomic<int> mixed_up{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < producers; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < per_producer; ++i) {
        const std::size_t size = 16 + static_cast<std::size_t>(i % 64) * 16;
        auto* p = static_cast<std::size_t*>(frame_allocator::allocate(size));
        p[0] = size;
        p[1] = (static_cast<std::size_t>(t) * per_producer + i);  // whose block
        slots[(static_cast<std::size_t>(t) * per_producer + i)].store(p, std::memory_order_release);
      }
    });
    threads.emplace_back([&, t] {
      for (int i = 0; i < per_producer; ++i) {
        auto& slot = slots[(static_cast<std::size_t>(t) * per_producer + i)];
        void* p = nullptr;
        while ((p = slot.exchange(nullptr, std::memory_order_acquire)) == nullptr) {
          std::this_thread::yield();
        }
        // A block handed to two owners at once shows as another's tag.
        const auto* words = static_cast<const std::size_t*>(p);
        if (words[1] != (static_cast<std::size_t>(t) * per_producer + i)) {
          mixed_up.fetch_add(1, std::memory_order_relaxed);
        }
        frame_allocator::deallocate(p, words[0]);
      }
    });
  }
  for (auto& t : threads) {
    t.join();
  }
  EXPECT_EQ(mixed_up.load(), 0);
}

// Blocks beyond the caches come from fjord's scalable allocator, not from
// malloc: ten million processes made on one thread and ended on the workers
// then cost one atomic push per frame freed past the caches instead of a
// malloc arena's lock. The memory goes back to the allocating thread's heap:
// once it takes its remote frees back, what stays in use is what the caches
// and the central list may keep (2 MiB of a class centrally, 128 KiB per
// thread), and a second round maps no more than the first.
TEST(frame_allocator, blocks_past_the_caches_come_from_the_scalable_allocator) {
  constexpr std::size_t size = 224;
  constexpr std::size_t n = 200'000;  // 43 MiB: far past every cache
  frame_allocator::flush_this_thread();
  fjord::scalable_memory_release();
  const std::size_t in_use_before = fjord::scalable_memory_statistics().bytes_in_use;
  std::size_t first_round_peak = 0;
  for (int round = 0; round < 2; ++round) {
    std::vector<void*> blocks(n);
    for (void*& p : blocks) {
      p = frame_allocator::allocate(size);
      std::memset(p, 0x5A, size);
    }
    const std::size_t in_use = fjord::scalable_memory_statistics().bytes_in_use;
    if (FJORD_ASAN) {
      EXPECT_LE(in_use, in_use_before);  // operator new, so that ASan sees every frame
    } else {
      EXPECT_GE(in_use, in_use_before + n * size * 9 / 10);
    }
    const std::size_t mapped = fjord::scalable_memory_statistics().bytes_mapped;
    if (round == 0) {
      first_round_peak = mapped;
    } else {  // nothing of the first round stayed behind (a segment of slack)
      EXPECT_LE(mapped, first_round_peak + (std::size_t{4} << 20));
    }
    std::thread([&] {
      for (void* p : blocks) {
        frame_allocator::deallocate(p, size);
      }
    }).join();  // the thread's cache goes to the central list as it exits
    frame_allocator::flush_this_thread();
    fjord::scalable_memory_release();  // takes the other thread's frees back
    EXPECT_LE(fjord::scalable_memory_statistics().bytes_in_use,
              in_use_before + (std::size_t{4} << 20))
        << "round " << round;
  }
}

}  // namespace

// The live count the test fixtures check: kept by code built with
// assertions on, whichever thread frees, big frames included.
TEST(frame_allocator, counts_live_frames_when_assertions_are_on) {
  using fjord::detail::frame_allocator;
  const std::int64_t before = frame_allocator::live_frames();
  void* small = frame_allocator::allocate(48);
  void* big = frame_allocator::allocate(frame_allocator::max_cached_size + 1);
  const std::int64_t expected = FJORD_ASSERTIONS ? 2 : 0;
  EXPECT_EQ(frame_allocator::live_frames() - before, expected);
  std::thread([&] { frame_allocator::deallocate(small, 48); }).join();
  frame_allocator::deallocate(big, frame_allocator::max_cached_size + 1);
  EXPECT_EQ(frame_allocator::live_frames(), before);
}
