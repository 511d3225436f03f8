#include "fjord/detail/os_memory.hpp"

#include <sys/mman.h>

#include <atomic>
#include <cstdint>
#include <cstdlib>

#include "fjord/detail/config.hpp"

namespace fjord::detail {

namespace {

// Relaxed: a statistic, read without ordering against anything.
std::atomic<std::size_t> mapped_bytes{0};

}  // namespace

void* os_map(std::size_t size, std::size_t alignment) noexcept {
#if FJORD_ASAN
  // AddressSanitizer aborts on absurd sizes instead of failing them.
  if (size > (std::size_t{1} << 40)) {
    return nullptr;
  }
  void* p = nullptr;
  if (::posix_memalign(&p, alignment, size) != 0) {
    return nullptr;
  }
  mapped_bytes.fetch_add(size, std::memory_order_relaxed);
  return p;
#else
  // Map more than asked and trim both ends to the alignment.
  const std::size_t padded = size + alignment;
  if (padded < size) {
    return nullptr;
  }
  void* raw = ::mmap(nullptr, padded, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (raw == MAP_FAILED) {
    return nullptr;
  }
  char* const begin = static_cast<char*>(raw);
  const std::size_t misalignment = reinterpret_cast<std::uintptr_t>(raw) & (alignment - 1);
  char* const aligned = misalignment == 0 ? begin : begin + (alignment - misalignment);
  if (aligned != begin) {
    ::munmap(begin, static_cast<std::size_t>(aligned - begin));
  }
  char* const end = begin + padded;
  if (end != aligned + size) {
    ::munmap(aligned + size, static_cast<std::size_t>(end - (aligned + size)));
  }
  mapped_bytes.fetch_add(size, std::memory_order_relaxed);
  return aligned;
#endif
}

void os_unmap(void* p, std::size_t size) noexcept {
  mapped_bytes.fetch_sub(size, std::memory_order_relaxed);
#if FJORD_ASAN
  std::free(p);
#else
  ::munmap(p, size);
#endif
}

void os_decommit(void* p, std::size_t size) noexcept {
#if FJORD_ASAN
  (void)p;
  (void)size;
#else
  // The pages read back as zeros and are no longer resident; the mapping
  // and its address range stay ours.
  ::madvise(p, size, MADV_DONTNEED);
#endif
}

std::size_t os_mapped_bytes() noexcept {
  return mapped_bytes.load(std::memory_order_relaxed);
}

}  // namespace fjord::detail
