// A task_group in steady state allocates nothing from operator new: not its
// stop_source (made only when a token is asked for), not its children (they
// come from the worker's job heap). Its own binary, because it replaces the
// global operator new to count.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <new>
#include <stop_token>

#include "fjord/task_group.hpp"

namespace {
std::atomic<long> allocations{0};
}  // namespace

// Counting replacements of the global allocation functions, every form. g++ 12 cannot see that
// these replacements pair malloc with free and warns of a mismatch once it inlines them.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
void* operator new(std::size_t size) {
  allocations.fetch_add(1, std::memory_order_relaxed);
  if (void* p = std::malloc(size == 0 ? 1 : size)) {
    return p;
  }
  throw std::bad_alloc();
}
void operator delete(void* p) noexcept {
  std::free(p);
}
void operator delete(void* p, std::size_t) noexcept {
  std::free(p);
}
// Every other form too, so that no block from a sanitizer's own operator new
// reaches these deletes (ASan reports that as a mismatch).
void* operator new[](std::size_t size) {
  return ::operator new(size);
}
void* operator new(std::size_t size, const std::nothrow_t&) noexcept {
  allocations.fetch_add(1, std::memory_order_relaxed);
  return std::malloc(size == 0 ? 1 : size);
}
void* operator new[](std::size_t size, const std::nothrow_t& tag) noexcept {
  return ::operator new(size, tag);
}
void operator delete[](void* p) noexcept {
  std::free(p);
}
void operator delete[](void* p, std::size_t) noexcept {
  std::free(p);
}
void operator delete(void* p, const std::nothrow_t&) noexcept {
  std::free(p);
}
void operator delete[](void* p, const std::nothrow_t&) noexcept {
  std::free(p);
}
void* operator new(std::size_t size, std::align_val_t align) {
  allocations.fetch_add(1, std::memory_order_relaxed);
  const auto a = static_cast<std::size_t>(align);
  if (void* p = std::aligned_alloc(a, (size + a - 1) / a * a)) {
    return p;
  }
  throw std::bad_alloc();
}
void* operator new[](std::size_t size, std::align_val_t align) {
  return ::operator new(size, align);
}
void operator delete(void* p, std::align_val_t) noexcept {
  std::free(p);
}
void operator delete(void* p, std::size_t, std::align_val_t) noexcept {
  std::free(p);
}
void operator delete[](void* p, std::align_val_t) noexcept {
  std::free(p);
}
void operator delete[](void* p, std::size_t, std::align_val_t) noexcept {
  std::free(p);
}
#pragma GCC diagnostic pop

namespace {

// One group of `children` on the calling worker, each child adding one.
void one_group(int children, bool ask_for_a_token) {
  std::atomic<int> ran{0};
  fjord::task_group g;
  if (ask_for_a_token) {
    static_cast<void>(g.get_stop_token());
  }
  for (int i = 0; i < children; ++i) {
    g.run([&ran] { ran.fetch_add(1, std::memory_order_relaxed); });
  }
  g.wait();
  EXPECT_EQ(ran.load(), children);
}

TEST(task_group_allocation, a_group_that_hands_out_no_token_allocates_nothing) {
  fjord::pool p(fjord::pool_options{.workers = 2});
  const long counted = p.call([] {
    one_group(100, false);  // warm: the worker's job heap has its blocks now
    const long before = allocations.load(std::memory_order_relaxed);
    for (int round = 0; round < 100; ++round) {
      one_group(100, false);
    }
    return allocations.load(std::memory_order_relaxed) - before;
  });
  EXPECT_EQ(counted, 0);
}

TEST(task_group_allocation, asking_for_a_token_makes_the_stop_source_once) {
  fjord::pool p(fjord::pool_options{.workers = 1});
  const long counted = p.call([] {
    one_group(10, true);
    const long before = allocations.load(std::memory_order_relaxed);
    one_group(10, true);
    return allocations.load(std::memory_order_relaxed) - before;
  });
  // The source object and its shared stop state: a fixed cost per group
  // that asks, none per child.
  EXPECT_GE(counted, 1);
  EXPECT_LE(counted, 2);
}

}  // namespace
