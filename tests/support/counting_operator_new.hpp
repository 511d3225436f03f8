#pragma once

// Replacements of every form of the global operator new and delete that
// count allocations and can make one of them fail, for the tests that count
// what a path allocates or inject std::bad_alloc into it. Include it in
// exactly one file of a test binary: it defines the replacements.

#include <atomic>
#include <cstddef>
#include <cstdlib>
#include <new>

namespace test_support {

// Every allocation made through operator new, from any thread.
inline std::atomic<long> allocations{0};

// Armed when positive: the allocation that counts it down to zero fails
// (std::bad_alloc, or nullptr for the nothrow forms); later ones succeed.
inline std::atomic<long> fail_countdown{0};

// Makes the n-th allocation from now fail (n >= 1); 0 disarms.
inline void fail_allocation_number(long n) {
  fail_countdown.store(n, std::memory_order_relaxed);
}

// Whether the allocation being made now is the one to fail.
inline bool count_allocation() {
  allocations.fetch_add(1, std::memory_order_relaxed);
  long left = fail_countdown.load(std::memory_order_relaxed);
  while (left > 0) {
    if (fail_countdown.compare_exchange_weak(left, left - 1, std::memory_order_relaxed)) {
      return left == 1;
    }
  }
  return false;
}

inline void* allocate_or_null(std::size_t size) {
  return count_allocation() ? nullptr : std::malloc(size == 0 ? 1 : size);
}

inline void* allocate_aligned_or_null(std::size_t size, std::align_val_t align) {
  const auto a = static_cast<std::size_t>(align);
  return count_allocation() ? nullptr : std::aligned_alloc(a, (size + a - 1) / a * a);
}

}  // namespace test_support

// g++ 12 cannot see that these replacements pair malloc with free and warns
// of a mismatch once it inlines them.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
void* operator new(std::size_t size) {
  if (void* p = test_support::allocate_or_null(size)) {
    return p;
  }
  throw std::bad_alloc();
}
// Every other form too, so that no block from a sanitizer's own operator new
// reaches these deletes (ASan reports that as a mismatch).
void* operator new[](std::size_t size) {
  return ::operator new(size);
}
void* operator new(std::size_t size, const std::nothrow_t&) noexcept {
  return test_support::allocate_or_null(size);
}
void* operator new[](std::size_t size, const std::nothrow_t& tag) noexcept {
  return ::operator new(size, tag);
}
void* operator new(std::size_t size, std::align_val_t align) {
  if (void* p = test_support::allocate_aligned_or_null(size, align)) {
    return p;
  }
  throw std::bad_alloc();
}
void* operator new[](std::size_t size, std::align_val_t align) {
  return ::operator new(size, align);
}
void* operator new(std::size_t size, std::align_val_t align, const std::nothrow_t&) noexcept {
  return test_support::allocate_aligned_or_null(size, align);
}
void* operator new[](std::size_t size, std::align_val_t align, const std::nothrow_t& tag) noexcept {
  return ::operator new(size, align, tag);
}
void operator delete(void* p) noexcept {
  std::free(p);
}
void operator delete(void* p, std::size_t) noexcept {
  std::free(p);
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
void operator delete(void* p, std::align_val_t, const std::nothrow_t&) noexcept {
  std::free(p);
}
void operator delete[](void* p, std::align_val_t, const std::nothrow_t&) noexcept {
  std::free(p);
}
#pragma GCC diagnostic pop
