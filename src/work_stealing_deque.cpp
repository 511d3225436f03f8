#include "fjord/detail/work_stealing_deque.hpp"

#include <sys/mman.h>

#include <new>

namespace fjord::detail {

namespace {

// Below this a ring comes from calloc: its pages are few, and mapping them
// apart would cost more than zeroing them.
constexpr std::size_t mapped_ring_bytes = std::size_t{64} * 1024;

}  // namespace

job** work_stealing_deque::allocate_slots(std::size_t capacity) {
  const std::size_t bytes = capacity * sizeof(job*);
  if (bytes < mapped_ring_bytes) {
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
  return static_cast<job**>(p);
}

void work_stealing_deque::free_slots(job** slots, std::size_t capacity) noexcept {
  const std::size_t bytes = capacity * sizeof(job*);
  if (bytes < mapped_ring_bytes) {
    std::free(slots);
  } else {
    ::munmap(slots, bytes);
  }
}

}  // namespace fjord::detail
