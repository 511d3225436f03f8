#include "fjord/scalable_memory.hpp"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <bit>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <limits>
#include <mutex>
#include <new>
#include <random>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "fjord/detail/memory_heap.hpp"
#include "fjord/detail/size_classes.hpp"
#include "fjord/pool.hpp"

namespace {

using fjord::scalable_allocate;
using fjord::scalable_deallocate;
using fjord::scalable_memory_statistics;
using fjord::scalable_usable_size;

std::size_t in_use() {
  return scalable_memory_statistics().bytes_in_use;
}
std::size_t mapped() {
  return scalable_memory_statistics().bytes_mapped;
}
std::size_t cached() {
  return scalable_memory_statistics().bytes_cached;
}

constexpr std::size_t segment_bytes = std::size_t{4} << 20;

// Sets the purge delay for one test and puts the old one back.
class purge_delay_for_this_test {
 public:
  explicit purge_delay_for_this_test(std::chrono::milliseconds delay)
      : old_(fjord::scalable_memory_purge_delay()) {
    fjord::scalable_memory_set_purge_delay(delay);
  }
  purge_delay_for_this_test(const purge_delay_for_this_test&) = delete;
  purge_delay_for_this_test& operator=(const purge_delay_for_this_test&) = delete;
  ~purge_delay_for_this_test() { fjord::scalable_memory_set_purge_delay(old_); }

 private:
  std::chrono::milliseconds old_;
};
constexpr std::chrono::hours forever{1};

TEST(size_classes, every_size_gets_the_smallest_class_that_holds_it) {
  using fjord::detail::class_block_size;
  using fjord::detail::size_class_of;
  for (std::size_t n = 1; n <= fjord::detail::max_class_size; ++n) {
    const unsigned c = size_class_of(n);
    ASSERT_LT(c, fjord::detail::size_class_count) << n;
    ASSERT_GE(class_block_size(c), n) << n;
    if (c > 0) {
      ASSERT_LT(class_block_size(c - 1), n) << n;
    }
  }
  EXPECT_EQ(size_class_of(fjord::detail::max_class_size), fjord::detail::size_class_count - 1);
}

TEST(size_classes, powers_of_two_are_classes_and_big_classes_are_whole_pages) {
  using fjord::detail::class_block_size;
  using fjord::detail::size_class_of;
  for (std::size_t p = 16; p <= fjord::detail::max_class_size; p *= 2) {
    EXPECT_EQ(class_block_size(size_class_of(p)), p);
  }
  for (unsigned c = 0; c < fjord::detail::size_class_count; ++c) {
    EXPECT_EQ(class_block_size(c) % 16, 0u);
    if (class_block_size(c) >= std::size_t{32} * 1024) {
      EXPECT_EQ(class_block_size(c) % 4096, 0u) << class_block_size(c);
    }
  }
}

TEST(scalable_memory, blocks_are_distinct_aligned_and_hold_what_was_asked) {
  std::vector<std::pair<char*, std::size_t>> blocks;
  for (std::size_t n = 0; n <= 3 * fjord::detail::max_class_size; n = n * 5 / 4 + 1) {
    auto* p = static_cast<char*>(scalable_allocate(n));
    ASSERT_EQ(reinterpret_cast<std::uintptr_t>(p) % 16, 0u) << n;
    ASSERT_GE(scalable_usable_size(p), n);
    std::memset(p, static_cast<int>(n & 0xFF), std::max<std::size_t>(n, 1));
    blocks.emplace_back(p, scalable_usable_size(p));
  }
  auto sorted = blocks;
  std::sort(sorted.begin(), sorted.end());
  for (std::size_t i = 1; i < sorted.size(); ++i) {
    EXPECT_LE(sorted[i - 1].first + sorted[i - 1].second, sorted[i].first);
  }
  for (auto [p, size] : blocks) {
    scalable_deallocate(p);
  }
}

TEST(scalable_memory, honours_every_power_of_two_alignment) {
  for (std::size_t a = 1; a <= (std::size_t{16} << 20); a *= 2) {
    for (std::size_t n : {0UL, 1UL, 24UL, 100UL, 5000UL, 70000UL, 600000UL}) {
      auto* p = static_cast<char*>(scalable_allocate(n, a));
      ASSERT_EQ(reinterpret_cast<std::uintptr_t>(p) % a, 0u) << "size " << n << " alignment " << a;
      ASSERT_GE(scalable_usable_size(p), n);
      std::memset(p, 0x5A, std::max<std::size_t>(n, 1));
      scalable_deallocate(p);
    }
  }
}

TEST(scalable_memory, an_alignment_that_is_no_power_of_two_is_named_in_the_error) {
  try {
    (void)scalable_allocate(64, 24);
    FAIL() << "no exception";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("alignment 24"), std::string::npos) << e.what();
  }
  EXPECT_THROW((void)scalable_allocate(64, 0), std::invalid_argument);
}

TEST(scalable_memory, a_size_the_os_cannot_meet_throws_bad_alloc) {
  EXPECT_THROW((void)scalable_allocate(std::numeric_limits<std::size_t>::max()), std::bad_alloc);
  EXPECT_THROW((void)scalable_allocate(std::size_t{1} << 61), std::bad_alloc);
  EXPECT_THROW((void)scalable_allocate(std::numeric_limits<std::size_t>::max() - 4095, 8192),
               std::bad_alloc);
}

TEST(scalable_memory, null_is_ignored) {
  scalable_deallocate(nullptr);
  EXPECT_EQ(scalable_usable_size(nullptr), 0u);
}

TEST(scalable_memory, large_blocks_start_on_a_page_and_go_back_to_the_os) {
  const std::size_t before = mapped();
  std::vector<char*> blocks;
  for (std::size_t n :
       {std::size_t{600} << 10, std::size_t{12} << 20, (std::size_t{12} << 20) + 4}) {
    auto* p = static_cast<char*>(scalable_allocate(n));
    EXPECT_EQ(reinterpret_cast<std::uintptr_t>(p) % 4096, 0u);
    std::memset(p, 1, n);
    blocks.push_back(p);
  }
  EXPECT_GE(mapped(), before + (std::size_t{24} << 20));
  for (char* p : blocks) {
    scalable_deallocate(p);
  }
  EXPECT_EQ(mapped(), before);
}

TEST(scalable_memory, statistics_count_the_usable_bytes_in_use) {
  const std::size_t before = in_use();
  std::vector<void*> blocks;
  for (int i = 0; i < 1000; ++i) {
    blocks.push_back(scalable_allocate(100));
  }
  void* large = scalable_allocate(std::size_t{1} << 20);
  EXPECT_EQ(in_use(), before + 1000 * scalable_usable_size(blocks[0]) + (std::size_t{1} << 20));
  EXPECT_EQ(scalable_usable_size(blocks[0]), 112u);
  for (void* p : blocks) {
    scalable_deallocate(p);
  }
  scalable_deallocate(large);
  EXPECT_EQ(in_use(), before);
  EXPECT_GE(scalable_memory_statistics().heaps, 1u);
}

TEST(scalable_memory, blocks_freed_by_another_thread_come_back_to_their_heap) {
  const std::size_t before_use = in_use();
  std::vector<void*> blocks;
  for (int i = 0; i < 100000; ++i) {
    blocks.push_back(scalable_allocate(48));
  }
  // Every hundredth block stays live, so no span empties (an empty one
  // would go back to the OS instead of being reused).
  std::vector<void*> kept;
  std::vector<void*> freed;
  for (std::size_t i = 0; i < blocks.size(); ++i) {
    (i % 100 == 0 ? kept : freed).push_back(blocks[i]);
  }
  std::thread([&] {
    for (void* p : freed) {
      scalable_deallocate(p);
    }
  }).join();
  // The owner hands out the same memory again.
  std::vector<void*> again;
  for (std::size_t i = 0; i < freed.size(); ++i) {
    again.push_back(scalable_allocate(48));
  }
  std::sort(freed.begin(), freed.end());
  std::size_t reused = 0;
  for (void* p : again) {
    reused += std::binary_search(freed.begin(), freed.end(), p) ? 1 : 0;
  }
  EXPECT_GT(reused, freed.size() * 95 / 100);
  again.insert(again.end(), kept.begin(), kept.end());
  std::thread([&] {
    for (void* p : again) {
      scalable_deallocate(p);
    }
  }).join();
  // Remote frees count as in use until the owner takes them back.
  EXPECT_GT(in_use(), before_use);
  fjord::scalable_memory_release();
  EXPECT_EQ(in_use(), before_use);
}

TEST(scalable_memory, a_loop_that_allocates_and_frees_one_block_keeps_its_span) {
  void* first = scalable_allocate(300000);
  scalable_deallocate(first);
  const std::size_t before = mapped();
  for (int i = 0; i < 1000; ++i) {
    void* p = scalable_allocate(300000);
    ASSERT_EQ(p, first);
    scalable_deallocate(p);
    ASSERT_EQ(mapped(), before);
  }
}

// 200,000 blocks of 256 bytes: about 50 MiB, a dozen segments.
std::vector<void*> burst_of_256_byte_blocks() {
  std::vector<void*> blocks;
  blocks.reserve(200000);
  for (int i = 0; i < 200000; ++i) {
    blocks.push_back(scalable_allocate(256));
  }
  return blocks;
}

TEST(scalable_memory, with_no_purge_delay_a_burst_freed_by_its_own_thread_goes_back_at_once) {
  const purge_delay_for_this_test no_delay(std::chrono::milliseconds(0));
  fjord::scalable_memory_release();
  const std::size_t before = mapped();
  const std::vector<void*> blocks = burst_of_256_byte_blocks();
  EXPECT_GT(mapped(), before + (std::size_t{40} << 20));
  for (void* p : blocks) {
    scalable_deallocate(p);
  }
  // One span kept for the class, and one spare segment: two segments at most.
  EXPECT_LE(mapped(), before + 2 * (std::size_t{4} << 20));
}

TEST(scalable_memory, a_burst_freed_by_another_thread_goes_back_once_its_owner_allocates_again) {
  const purge_delay_for_this_test no_delay(std::chrono::milliseconds(0));
  fjord::scalable_memory_release();
  const std::size_t before = mapped();
  const std::vector<void*> blocks = burst_of_256_byte_blocks();
  EXPECT_GT(mapped(), before + (std::size_t{40} << 20));
  std::thread([&] {
    for (void* p : blocks) {
      scalable_deallocate(p);
    }
  }).join();
  // More than a span's worth (256 blocks of 256 bytes), so the owner runs
  // out of carved blocks and takes the remote frees back.
  std::vector<void*> more;
  for (int i = 0; i < 600; ++i) {
    more.push_back(scalable_allocate(256));
  }
  for (void* p : more) {
    scalable_deallocate(p);
  }
  EXPECT_LE(mapped(), before + 2 * (std::size_t{4} << 20));
}

TEST(scalable_memory, the_default_purge_delay_is_one_second) {
  EXPECT_EQ(fjord::scalable_memory_purge_delay(), std::chrono::seconds(1));
}

TEST(scalable_memory, a_negative_purge_delay_is_named_in_the_error_and_a_long_one_saturates) {
  const purge_delay_for_this_test restore(fjord::scalable_memory_purge_delay());
  try {
    fjord::scalable_memory_set_purge_delay(std::chrono::milliseconds(-7));
    ADD_FAILURE() << "a negative delay was accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("-7 ms"), std::string::npos) << e.what();
  }
  fjord::scalable_memory_set_purge_delay(std::chrono::milliseconds::max());
  EXPECT_EQ(fjord::scalable_memory_purge_delay().count(),
            std::numeric_limits<std::int64_t>::max() / 1'000'000);
  fjord::scalable_memory_set_purge_delay(std::chrono::milliseconds(0));
  EXPECT_EQ(fjord::scalable_memory_purge_delay().count(), 0);
}

TEST(scalable_memory, a_burst_freed_by_its_own_thread_stays_committed_and_is_reused) {
  const purge_delay_for_this_test long_delay(forever);
  fjord::scalable_memory_release();
  const std::size_t before = mapped();
  const std::size_t cached_before = cached();
  std::vector<void*> blocks = burst_of_256_byte_blocks();
  const std::size_t peak = mapped();
  EXPECT_GT(peak, before + (std::size_t{40} << 20));
  for (void* p : blocks) {
    scalable_deallocate(p);
  }
  EXPECT_EQ(mapped(), peak);  // nothing unmapped
  EXPECT_GE(cached(), cached_before + (std::size_t{40} << 20));
  blocks = burst_of_256_byte_blocks();  // from the cached segments
  EXPECT_EQ(mapped(), peak);
  EXPECT_LE(cached(), cached_before + segment_bytes);
  for (void* p : blocks) {
    scalable_deallocate(p);
  }
  fjord::scalable_memory_release();
  EXPECT_EQ(cached(), cached_before);
  EXPECT_LE(mapped(), before + segment_bytes);
}

// Waits until the pool's workers have given their memory back, as they do
// when they park or retire (at the latest a spin budget after their last
// job): a generous deadline, so a loaded machine does not fail the test.
void expect_given_back_by_a_worker(std::size_t mapped_bound, std::size_t cached_bound) {
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while ((mapped() > mapped_bound || cached() > cached_bound) &&
         std::chrono::steady_clock::now() < give_up) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  EXPECT_LE(cached(), cached_bound);
  EXPECT_LE(mapped(), mapped_bound);
}

// The delay is long enough that a burst's frees, under a sanitizer on a
// loaded machine, end before the first segments they cache expire; the sleep
// is long enough that they all have.
constexpr std::chrono::milliseconds test_delay{300};
constexpr std::chrono::milliseconds past_test_delay{1000};

TEST(scalable_memory, cached_segments_go_back_once_the_purge_delay_has_passed) {
  const purge_delay_for_this_test delay(test_delay);
  fjord::scalable_memory_release();
  const std::size_t before = mapped();
  const std::size_t cached_before = cached();
  for (void* p : burst_of_256_byte_blocks()) {
    scalable_deallocate(p);
  }
  EXPECT_GE(cached(), cached_before + (std::size_t{40} << 20));
  std::this_thread::sleep_for(past_test_delay);
  // Needing a fresh span purges: 600 blocks are more than the span kept
  // for the class holds.
  std::vector<void*> more;
  for (int i = 0; i < 600; ++i) {
    more.push_back(scalable_allocate(256));
  }
  EXPECT_EQ(cached(), cached_before);
  // Left: the segment with the 600 blocks and the spare.
  EXPECT_LE(mapped(), before + 2 * segment_bytes);
  for (void* p : more) {
    scalable_deallocate(p);
  }
}

TEST(scalable_memory, emptying_a_segment_purges_the_cached_ones_past_the_delay) {
  const purge_delay_for_this_test delay(test_delay);
  fjord::scalable_memory_release();
  const std::size_t cached_before = cached();
  const std::vector<void*> first = burst_of_256_byte_blocks();
  const std::vector<void*> second = burst_of_256_byte_blocks();
  for (void* p : first) {
    scalable_deallocate(p);
  }
  EXPECT_GE(cached(), cached_before + (std::size_t{40} << 20));
  std::this_thread::sleep_for(past_test_delay);
  // No allocation from here on: only the frees that empty the second
  // burst's segments can purge the first burst's.
  for (void* p : second) {
    scalable_deallocate(p);
  }
  // One burst is about 50 MiB; both would be 100.
  EXPECT_LE(cached(), cached_before + (std::size_t{60} << 20));
  fjord::scalable_memory_release();
}

TEST(scalable_memory, all_heaps_together_keep_at_most_the_cache_bound) {
  const purge_delay_for_this_test long_delay(forever);
  // 1 GiB in use; lowered so that the test maps little.
  const std::size_t bound = std::size_t{64} << 20;
  const std::size_t old_bound = fjord::detail::max_cached_bytes.exchange(bound);
  fjord::scalable_memory_release();
  const std::size_t before = mapped();
  const std::size_t cached_before = cached();
  const std::vector<void*> first = burst_of_256_byte_blocks();
  const std::vector<void*> second = burst_of_256_byte_blocks();
  for (void* p : first) {
    scalable_deallocate(p);
  }
  for (void* p : second) {
    scalable_deallocate(p);
  }
  // 100 MiB freed: the cache filled up to the bound and no further.
  EXPECT_GE(cached(), bound - 2 * segment_bytes);
  EXPECT_LE(cached(), bound);
  // Another heap's frees do not add to it either.
  std::thread([&] {
    for (void* p : burst_of_256_byte_blocks()) {
      scalable_deallocate(p);
    }
    EXPECT_LE(cached(), bound);
  }).join();
  fjord::scalable_memory_release();
  EXPECT_EQ(cached(), cached_before);
  EXPECT_LE(mapped(), before + segment_bytes);
  fjord::detail::max_cached_bytes.store(old_bound);
}

TEST(scalable_memory, a_retiring_worker_gives_back_its_cached_segments) {
  const purge_delay_for_this_test long_delay(forever);
  fjord::pool pool(fjord::pool_options{.workers = 2});
  const std::size_t before = mapped();
  const std::size_t cached_before = cached();
  // Both workers cache a burst and wait in their job until the pool has
  // shrunk, so that the one that leaves retires straight from its job.
  std::atomic<int> cached_bursts{0};
  std::atomic<bool> shrunk{false};
  for (std::size_t t = 0; t < 2; ++t) {
    pool.post_to(t, [&] {
      for (void* p : burst_of_256_byte_blocks()) {
        scalable_deallocate(p);
      }
      cached_bursts.fetch_add(1);
      while (!shrunk.load()) {
        std::this_thread::yield();
      }
    });
  }
  while (cached_bursts.load() != 2) {
    std::this_thread::yield();
  }
  EXPECT_GE(cached(), cached_before + (std::size_t{80} << 20));
  pool.resize(1);
  shrunk.store(true);
  const std::size_t bound = before + 4 * segment_bytes;
  expect_given_back_by_a_worker(bound, cached_before);
}

TEST(scalable_memory, a_worker_that_goes_idle_gives_back_its_cached_segments) {
  const purge_delay_for_this_test long_delay(forever);
  // Calls on the worker (not the caller), whose caches are the subject.
  fjord::pool pool(fjord::pool_options{.workers = 1, .callers_join = false});
  const std::size_t before = mapped();
  const std::size_t cached_before = cached();
  const std::size_t peak = pool.call([] {
    const std::vector<void*> blocks = burst_of_256_byte_blocks();
    const std::size_t at_peak = mapped();
    for (void* p : blocks) {
      scalable_deallocate(p);  // local frees: the segments go to the cache
    }
    return at_peak;
  });
  EXPECT_GT(peak, before + (std::size_t{40} << 20));
  const std::size_t bound = before + 2 * segment_bytes;
  expect_given_back_by_a_worker(bound, cached_before);
}

TEST(scalable_memory, a_worker_that_goes_idle_takes_back_a_burst_freed_elsewhere) {
  fjord::pool pool(fjord::pool_options{.workers = 1, .callers_join = false});
  const std::size_t before = mapped();
  const std::size_t cached_before = cached();
  const std::vector<void*> blocks = pool.call([] { return burst_of_256_byte_blocks(); });
  EXPECT_GT(mapped(), before + (std::size_t{40} << 20));
  for (void* p : blocks) {
    scalable_deallocate(p);  // remote frees, from this thread
  }
  pool.post([] {});  // wakes the worker, which parks again afterwards
  // What may stay: the empty span kept for the class, the spare segment,
  // and the span the worker was still allocating from (its remote frees
  // come back when the worker next allocates from it): three segments.
  expect_given_back_by_a_worker(before + 3 * segment_bytes, cached_before);
}

TEST(scalable_memory, release_gives_a_burst_back_to_the_os) {
  fjord::scalable_memory_release();
  const std::size_t before = mapped();
  std::vector<void*> blocks;
  for (int i = 0; i < 200000; ++i) {
    blocks.push_back(scalable_allocate(static_cast<std::size_t>(16 + i % 2000)));
  }
  EXPECT_GT(mapped(), before + (std::size_t{64} << 20));
  for (void* p : blocks) {
    scalable_deallocate(p);
  }
  fjord::scalable_memory_release();
  EXPECT_LE(mapped(), before + (std::size_t{8} << 20));
}

TEST(scalable_memory, memory_of_an_exited_thread_goes_back_when_its_blocks_are_freed) {
  void* mine = scalable_allocate(8);  // this thread has a heap of its own
  const std::size_t before_mapped = mapped();
  const std::size_t before_use = in_use();
  std::vector<void*> blocks;
  std::thread([&] {
    for (int i = 0; i < 50000; ++i) {
      blocks.push_back(scalable_allocate(static_cast<std::size_t>(64 + i % 900)));
    }
  }).join();
  EXPECT_GT(mapped(), before_mapped + (std::size_t{8} << 20));
  for (void* p : blocks) {
    scalable_deallocate(p);
  }
  EXPECT_EQ(in_use(), before_use);
  EXPECT_EQ(mapped(), before_mapped);
  scalable_deallocate(mine);
}

// Several threads free into one abandoned heap at once, so that reclaims
// race each other and the segments go back to the OS under their feet.
TEST(scalable_memory, racing_frees_into_an_exited_thread_give_all_memory_back) {
  void* mine = scalable_allocate(8);
  for (int round = 0; round < 5; ++round) {
    const std::size_t before_mapped = mapped();
    const std::size_t before_use = in_use();
    std::vector<void*> blocks;
    std::thread([&] {
      for (int i = 0; i < 60000; ++i) {
        blocks.push_back(scalable_allocate(static_cast<std::size_t>(16 + (i * 131) % 3000)));
      }
    }).join();
    constexpr int freers = 4;
    std::vector<std::thread> threads;
    for (int t = 0; t < freers; ++t) {
      threads.emplace_back([&, t] {
        for (std::size_t i = static_cast<std::size_t>(t); i < blocks.size(); i += freers) {
          scalable_deallocate(blocks[i]);
        }
      });
    }
    for (auto& th : threads) {
      th.join();
    }
    EXPECT_EQ(in_use(), before_use) << "round " << round;
    EXPECT_EQ(mapped(), before_mapped) << "round " << round;
  }
  scalable_deallocate(mine);
}

TEST(scalable_memory, threads_that_come_one_after_another_share_one_heap) {
  std::thread([] { scalable_deallocate(scalable_allocate(8)); }).join();
  const std::size_t heaps = scalable_memory_statistics().heaps;
  for (int i = 0; i < 20; ++i) {
    std::thread([] { scalable_deallocate(scalable_allocate(8)); }).join();
  }
  EXPECT_EQ(scalable_memory_statistics().heaps, heaps);
}

// Many threads allocate blocks of random sizes, stamp them, and pass them
// through shared slots to be freed by whichever thread comes next: every
// block is checked intact and freed exactly once, and when all have exited
// the allocator holds no byte and no mapping more than before.
TEST(scalable_memory, stress_allocate_here_free_there_exactly_once) {
  constexpr int threads = 6;
  constexpr int per_thread = 40000;
  constexpr std::size_t slots = 64;
  struct stamp {
    std::uint64_t serial;
    std::uint64_t size;
  };
  struct slot {
    std::mutex lock;
    std::vector<char*> blocks;
  };
  std::vector<slot> shared(slots);
  std::vector<std::atomic<int>> freed(static_cast<std::size_t>(threads) * per_thread);
  std::thread([] { scalable_deallocate(scalable_allocate(8)); }).join();
  const std::size_t before_use = in_use();
  const std::size_t before_mapped = mapped();

  auto free_checked = [&](char* p) {
    stamp s{};
    std::memcpy(&s, p, sizeof s);
    for (std::size_t i = sizeof s; i < s.size; ++i) {
      if (p[i] != static_cast<char>(s.serial + i)) {
        ADD_FAILURE() << "block " << s.serial << " overwritten at " << i;
        break;
      }
    }
    freed[s.serial].fetch_add(1, std::memory_order_relaxed);
    scalable_deallocate(p);
  };
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&, t] {
      std::mt19937_64 rng(static_cast<std::uint64_t>(t) * 7919);
      for (int i = 0; i < per_thread; ++i) {
        const std::uint64_t serial = static_cast<std::uint64_t>(t) * per_thread + i;
        const int kind = static_cast<int>(rng() % 1000);
        const std::size_t size = kind == 0   ? 600000 + rng() % 100000
                                 : kind < 50 ? 1024 + rng() % 60000
                                             : sizeof(stamp) + rng() % 300;
        auto* p = static_cast<char*>(scalable_allocate(size));
        const stamp s{serial, size};
        std::memcpy(p, &s, sizeof s);
        for (std::size_t b = sizeof s; b < size; ++b) {
          p[b] = static_cast<char>(serial + b);
        }
        slot& sl = shared[rng() % slots];
        std::vector<char*> mine;
        {
          const std::lock_guard guard(sl.lock);
          sl.blocks.push_back(p);
          if (sl.blocks.size() > 8 || rng() % 3 == 0) {
            mine.swap(sl.blocks);
          }
        }
        for (char* q : mine) {
          free_checked(q);
        }
      }
    });
  }
  for (auto& th : pool) {
    th.join();
  }
  for (slot& sl : shared) {
    for (char* q : sl.blocks) {
      free_checked(q);
    }
  }
  for (std::size_t i = 0; i < freed.size(); ++i) {
    ASSERT_EQ(freed[i].load(), 1) << "block " << i;
  }
  EXPECT_EQ(in_use(), before_use);
  EXPECT_EQ(mapped(), before_mapped);
}

// A thread_local made before the thread's first allocation is destroyed
// after the allocator has let go of the thread's heap.
std::atomic<void*> block_made_at_exit{nullptr};

struct allocates_at_exit {
  allocates_at_exit() = default;
  allocates_at_exit(const allocates_at_exit&) = delete;
  allocates_at_exit& operator=(const allocates_at_exit&) = delete;
  ~allocates_at_exit() {
    void* p = scalable_allocate(40);
    std::memset(p, 7, 40);
    block_made_at_exit = scalable_allocate(2000);
    scalable_deallocate(p);
  }
};

TEST(scalable_memory, allocates_and_frees_during_thread_exit) {
  std::thread([] { scalable_deallocate(scalable_allocate(8)); }).join();
  const std::size_t before = in_use();
  std::thread([] {
    thread_local allocates_at_exit at_exit;
    (void)&at_exit;
    scalable_deallocate(scalable_allocate(100));
  }).join();
  void* late = block_made_at_exit.load();
  ASSERT_NE(late, nullptr);
  EXPECT_EQ(in_use(), before + 2048);
  scalable_deallocate(late);
  EXPECT_EQ(in_use(), before);
}

TEST(scalable_memory, a_forked_child_counts_but_does_not_reuse_another_threads_cache) {
  const purge_delay_for_this_test long_delay(forever);
  fjord::scalable_memory_release();
  std::atomic<bool> cached_burst{false};
  std::atomic<bool> forked{false};
  std::thread other([&] {
    for (void* p : burst_of_256_byte_blocks()) {
      scalable_deallocate(p);
    }
    cached_burst.store(true);
    while (!forked.load()) {
      std::this_thread::yield();
    }
  });
  while (!cached_burst.load()) {
    std::this_thread::yield();
  }
  const std::size_t cached_at_fork = cached();
  ASSERT_GE(cached_at_fork, std::size_t{40} << 20);
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    // The other thread's heap is lost to the child: its cache still counts,
    // and a burst here maps segments of its own.
    const bool counted = cached() == cached_at_fork;
    const std::size_t before = mapped();
    const std::vector<void*> blocks = burst_of_256_byte_blocks();
    const bool mapped_afresh = mapped() > before + (std::size_t{40} << 20);
    for (void* p : blocks) {
      scalable_deallocate(p);
    }
    ::_exit(counted && mapped_afresh ? 0 : 1);
  }
  forked.store(true);
  other.join();
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

TEST(scalable_memory, a_forked_child_allocates_while_the_parent_has_threads) {
  std::atomic<bool> stop{false};
  std::thread busy([&] {
    while (!stop.load()) {
      scalable_deallocate(scalable_allocate(64));
      scalable_deallocate(scalable_allocate(1 << 20));
    }
  });
  for (int round = 0; round < 20; ++round) {
    const pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      std::vector<void*> v;
      for (int i = 0; i < 10000; ++i) {
        v.push_back(scalable_allocate(static_cast<std::size_t>(i % 700)));
      }
      for (void* p : v) {
        scalable_deallocate(p);
      }
      ::_exit(0);
    }
    int status = 0;
    ASSERT_EQ(::waitpid(pid, &status, 0), pid);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  }
  stop = true;
  busy.join();
}

}  // namespace
