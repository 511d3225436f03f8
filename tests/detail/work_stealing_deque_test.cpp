#include "fjord/detail/work_stealing_deque.hpp"

#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <cstring>
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

// Pushers call offer() after a push while the census shows idle workers,
// and owners answer requests in pop() only while somebody searches: these
// tests stand for both with explicit offers and one searcher in the census.
struct fixture {
  fixture() {
    fjord::detail::init_asymmetric_fences();
    census.add_searcher();
  }
  fjord::detail::census census;
  work_stealing_deque deque{64, census};
};

job* steal(work_stealing_deque& d) {
  job* out = nullptr;
  return d.steal(out) == steal_result::success ? out : nullptr;
}

TEST(work_stealing_deque, owner_pops_lifo) {
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
  EXPECT_FALSE(f.deque.maybe_nonempty());
}

TEST(work_stealing_deque, nothing_is_shared_until_an_offer) {
  fixture f;
  test_job a, b;
  f.deque.push(&a);
  EXPECT_FALSE(f.deque.maybe_shared());
  EXPECT_EQ(steal(f.deque), nullptr);
  f.deque.pop();
  f.deque.push(&a);
  f.deque.offer();  // nothing was shared: shares a, and only a
  EXPECT_TRUE(f.deque.maybe_shared());
  f.deque.push(&b);
  f.deque.offer();
  EXPECT_EQ(steal(f.deque), &a);
  EXPECT_EQ(f.deque.pop(), &b);
  EXPECT_EQ(steal(f.deque), nullptr);
}

TEST(work_stealing_deque, a_private_job_is_shared_only_when_a_thief_asks) {
  fixture f;
  test_job a, b, c;
  f.deque.push(&a);
  f.deque.offer();  // shared: nothing was
  f.deque.push(&b);
  f.deque.offer();  // private: a is shared and nobody asked
  EXPECT_EQ(steal(f.deque), &a);
  EXPECT_TRUE(f.deque.maybe_nonempty());
  EXPECT_FALSE(f.deque.maybe_shared());
  EXPECT_EQ(steal(f.deque), nullptr);  // nothing shared: asks
  f.deque.push(&c);
  f.deque.offer();  // answers: shares b (half of b, c)
  EXPECT_EQ(steal(f.deque), &b);
  EXPECT_EQ(f.deque.pop(), &c);
  EXPECT_EQ(f.deque.pop(), nullptr);
}

TEST(work_stealing_deque, a_pop_answers_a_request_with_half_of_the_rest) {
  fixture f;
  test_job jobs[6];
  for (auto& j : jobs) {
    f.deque.push(&j);
    f.deque.offer();
  }
  EXPECT_EQ(steal(f.deque), &jobs[0]);
  EXPECT_EQ(steal(f.deque), nullptr);  // asks
  EXPECT_EQ(f.deque.pop(), &jobs[5]);  // shares 2 of jobs[1..4]
  EXPECT_EQ(steal(f.deque), &jobs[1]);
  EXPECT_EQ(steal(f.deque), &jobs[2]);
  EXPECT_EQ(steal(f.deque), nullptr);
  EXPECT_EQ(f.deque.pop(), &jobs[4]);  // shares jobs[3], the last but ours
  EXPECT_EQ(steal(f.deque), &jobs[3]);
  EXPECT_EQ(f.deque.pop(), nullptr);
}

TEST(work_stealing_deque, the_owner_takes_shared_jobs_back_newest_first) {
  fixture f;
  test_job jobs[5];
  for (auto& j : jobs) {
    f.deque.push(&j);
  }
  f.deque.share_all();
  for (int i = 4; i >= 0; --i) {
    EXPECT_EQ(f.deque.pop(), &jobs[i]) << i;
  }
  EXPECT_EQ(f.deque.pop(), nullptr);
  EXPECT_EQ(steal(f.deque), nullptr);
}

TEST(work_stealing_deque, share_all_hands_every_job_to_thieves_oldest_first) {
  fixture f;
  test_job jobs[4];
  for (auto& j : jobs) {
    f.deque.push(&j);
  }
  f.deque.share_all();
  for (auto& j : jobs) {
    EXPECT_EQ(steal(f.deque), &j);
  }
  EXPECT_EQ(f.deque.pop(), nullptr);
}

TEST(work_stealing_deque, a_registered_thief_takes_private_jobs) {
  fixture f;
  test_job a, b, c;
  f.deque.push(&a);
  f.deque.offer();
  f.deque.push(&b);
  f.deque.push(&c);
  EXPECT_EQ(steal(f.deque), &a);
  EXPECT_EQ(steal(f.deque), nullptr);  // b and c are private
  f.census.add_thief();
  heavy_fence();
  job* out = nullptr;
  ASSERT_EQ(f.deque.steal_private(out), steal_result::success);
  EXPECT_EQ(out, &b);
  // The owner fences while the thief is registered, and races it for the
  // last job with a CAS.
  EXPECT_EQ(f.deque.pop(), &c);
  EXPECT_EQ(f.deque.steal_private(out), steal_result::empty);
  f.census.remove_thief();
  EXPECT_EQ(f.deque.pop(), nullptr);
  // Top passed the split; the deque still works from there.
  test_job d, e;
  f.deque.push(&d);
  f.deque.offer();
  f.deque.push(&e);
  EXPECT_EQ(steal(f.deque), &d);
  EXPECT_EQ(f.deque.pop(), &e);
}

TEST(work_stealing_deque, refuses_push_when_full_and_recovers) {
  fixture f;
  std::vector<test_job> jobs(65);
  for (int i = 0; i < 64; ++i) {
    ASSERT_TRUE(f.deque.push(&jobs[i])) << i;
    f.deque.offer();
  }
  EXPECT_FALSE(f.deque.push(&jobs[64]));
  EXPECT_EQ(f.deque.size_hint(), 64u);
  EXPECT_EQ(steal(f.deque), &jobs[0]);
  EXPECT_TRUE(f.deque.push(&jobs[64]));
  EXPECT_EQ(f.deque.pop(), &jobs[64]);
}

TEST(work_stealing_deque, wraps_around_the_ring_and_the_index_range) {
  for (const std::uint32_t first : {std::uint32_t{0}, std::uint32_t{0xFFFFFF00u}}) {
    fjord::detail::init_asymmetric_fences();
    fjord::detail::census census;
    work_stealing_deque deque(64, census, first);
    test_job a, b;
    for (int i = 0; i < 10000; ++i) {
      ASSERT_TRUE(deque.push(&a));
      deque.offer();
      ASSERT_TRUE(deque.push(&b));
      if (i % 2 == 0) {
        ASSERT_EQ(deque.pop(), &b);
        ASSERT_EQ(deque.pop(), &a);
      } else {
        ASSERT_EQ(steal(deque), &a) << i;
        ASSERT_EQ(deque.pop(), &b);
      }
    }
    EXPECT_FALSE(deque.maybe_nonempty());
    EXPECT_EQ(deque.size_hint(), 0u);
  }
}

// The owner pushes and pops in random bursts (and now and then shares all)
// while thieves steal shared jobs and, now and then, register and take
// private ones: every job is taken exactly once. first_index near 2^32 runs
// the race across the wrap of the indices.
void hammer(int thieves, int total, std::uint32_t first_index = 0) {
  fjord::detail::init_asymmetric_fences();
  fjord::detail::census census;
  census.add_searcher();  // so that pops answer requests
  work_stealing_deque deque(256, census, first_index);
  std::vector<test_job> jobs(static_cast<std::size_t>(total));
  std::vector<std::atomic<int>> taken(static_cast<std::size_t>(total));
  std::atomic<bool> done{false};
  std::atomic<int> started{0};
  auto index_of = [&](job* j) {
    return static_cast<std::size_t>(static_cast<test_job*>(j) - jobs.data());
  };

  std::vector<std::thread> pool;
  for (int t = 0; t < thieves; ++t) {
    pool.emplace_back([&, t] {
      started.fetch_add(1);
      std::uint32_t rng = 777u + static_cast<std::uint32_t>(t);
      while (!done.load(std::memory_order_acquire)) {
        rng = rng * 1664525u + 1013904223u;
        job* out = nullptr;
        if ((rng >> 26) == 0) {
          // A stalled-owner steal: registered, with a heavy fence.
          census.add_thief();
          heavy_fence();
          for (int k = 0; k < 8; ++k) {
            if (deque.steal_private(out) == steal_result::success) {
              taken[index_of(out)].fetch_add(1, std::memory_order_relaxed);
            }
          }
          census.remove_thief();
        } else if (deque.steal(out) == steal_result::success) {
          taken[index_of(out)].fetch_add(1, std::memory_order_relaxed);
        }
      }
    });
  }
  while (started.load() != thieves) {
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
      if ((rng & 0x1000) != 0) {
        deque.offer();
      }
      ++next;
    }
    if ((rng & 0x3F0) == 0) {
      deque.share_all();
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
  EXPECT_EQ(census.load(std::memory_order_relaxed).thieves(), 0u);
  EXPECT_FALSE(deque.maybe_nonempty());
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
TEST(work_stealing_deque, stress_exactly_once_across_the_index_wrap) {
  hammer(2, 200000, 0xFFFF0000u);
}

// How many pages of [p, p + bytes) are resident.
std::size_t resident_pages(const void* p, std::size_t bytes) {
  const auto page = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
  const std::size_t offset = reinterpret_cast<std::uintptr_t>(p) & (page - 1);
  const std::size_t length = offset + bytes;
  std::vector<unsigned char> in_core((length + page - 1) / page);
  // NOLINTNEXTLINE(cppcoreguidelines-pro-type-const-cast): mincore takes a void*, reads nothing
  void* start = const_cast<char*>(static_cast<const char*>(p) - offset);
  if (mincore(start, length, in_core.data()) != 0) {
    ADD_FAILURE() << "mincore failed, errno " << errno;
    return 0;
  }
  std::size_t n = 0;
  for (const unsigned char c : in_core) {
    n += c & 1;
  }
  return n;
}

TEST(work_stealing_deque, a_large_ring_commits_no_page_before_the_deque_reaches_it) {
  // The pool's default capacity: a 512 KiB ring per worker, made on the
  // path of every thread a pool starts. The heap is first left holding a
  // freed, dirty block of that size (glibc serves large blocks from its
  // heap once one has been freed), which a calloc'ed ring would reuse and
  // zero page by page.
  constexpr std::size_t capacity = std::size_t{1} << 16;
  constexpr std::size_t bytes = capacity * sizeof(job*);
  const auto page = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
  if (bytes / page <= 8) {
    GTEST_SKIP() << "pages of " << page << " bytes: the ring has too few to tell";
  }
  fjord::detail::census census;
  { const work_stealing_deque first(capacity, census); }
  void* dirty = std::malloc(bytes);
  ASSERT_NE(dirty, nullptr);
  std::memset(dirty, 0xA5, bytes);
  // The block is freed unread: keep the compiler from dropping the memset.
  asm volatile("" : : "r"(dirty) : "memory");
  void* after = std::malloc(64);  // keeps the freed block from being trimmed
  std::free(dirty);
  {
    work_stealing_deque deque(capacity, census);
    EXPECT_LE(resident_pages(deque.ring(), bytes), 1u);
    test_job j;
    for (std::size_t i = 0; i < std::size_t{3} * 1024;
         ++i) {  // 24 KiB of slots: a handful of pages
      ASSERT_TRUE(deque.push(&j));
    }
    EXPECT_LE(resident_pages(deque.ring(), bytes), 8u);
    while (deque.pop() != nullptr) {
    }
  }
  std::free(after);
}

}  // namespace
