#include "fjord/detail/work_stealing_deque.hpp"

#include <sys/mman.h>

#include <cstdlib>
#include <new>

#include "fjord/detail/config.hpp"

namespace fjord::detail {

namespace {

// Below this a ring comes from calloc: its pages are few, and mapping them
// apart would cost more than zeroing them.
constexpr std::size_t mapped_ring_bytes = std::size_t{64} * 1024;

// Under AddressSanitizer every ring comes from calloc: LeakSanitizer scans
// heap blocks for pointers but not anonymous mappings, and a ring holds the
// only pointer to a job handed over and not yet taken.
constexpr bool ring_is_mapped(std::size_t bytes) noexcept {
  return !FJORD_ASAN && bytes >= mapped_ring_bytes;
}

}  // namespace

job** work_stealing_deque::allocate_slots(std::size_t capacity) {
  const std::size_t bytes = capacity * sizeof(job*);
  if (!ring_is_mapped(bytes)) {
    auto* slots = static_cast<job**>(std::calloc(capacity, sizeof(job*)));
    if (slots == nullptr) {
      throw std::bad_alloc();
    }
    return slots;
  }
  // A mapping of its own, not calloc: once a large block has been freed,
  // glibc serves the next from its heap (its mmap threshold rises to the
  // freed size) and calloc then zeroes all of it, 512 KiB for the default
  // capacity, on the path of every thread a pool starts (a stand-in for a
  // blocked worker waits for it). Fresh pages cost only as the deque reaches them.
  void* p = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) {
    throw std::bad_alloc();
  }
  // Where transparent huge pages are "always", neighbouring rings could merge
  // into one region backed by 2 MiB pages and commit it whole. Advice only:
  // a kernel without THP refuses it harmlessly.
  ::madvise(p, bytes, MADV_NOHUGEPAGE);
  return static_cast<job**>(p);
}

void work_stealing_deque::free_slots(job** slots, std::size_t capacity) noexcept {
  const std::size_t bytes = capacity * sizeof(job*);
  if (!ring_is_mapped(bytes)) {
    std::free(slots);
  } else {
    ::munmap(slots, bytes);
  }
}

}  // namespace fjord::detail
