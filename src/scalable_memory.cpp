#include "fjord/scalable_memory.hpp"

#include <pthread.h>

#include <atomic>
#include <bit>
#include <chrono>
#include <cstdint>
#include <limits>
#include <new>
#include <stdexcept>
#include <string>

#include "fjord/detail/config.hpp"
#include "fjord/detail/heap_registry.hpp"
#include "fjord/detail/memory_heap.hpp"
#include "fjord/detail/os_memory.hpp"
#include "fjord/detail/per_thread.hpp"
#include "fjord/scalable_memory_resource.hpp"

namespace fjord {

namespace {

using detail::memory_heap;

// The calling thread's heap. Trivially destructible, so reading it costs no
// guard; heap_binding's destructor, registered when the thread first binds
// a heap, abandons the heap at thread exit.
thread_local memory_heap* thread_heap = nullptr;
struct heap_binding {
  heap_binding() = default;
  heap_binding(const heap_binding&) = delete;
  heap_binding& operator=(const heap_binding&) = delete;
  ~heap_binding() {
    memory_heap* h = thread_heap;
    thread_heap = nullptr;
    if (h != nullptr) {
      detail::heap_registry::abandon(h);
    }
  }
};
// Gone at thread exit: allocations made later in the thread's exit (by
// other thread_local destructors) borrow a heap per call.
using binding_of_this_thread = detail::per_thread<heap_binding>;

// In a child of fork() only the forking thread lives on, so a span whose
// flag a remote free in the parent had replaced, without yet handing the
// span back, would never come back to the heap: list it again.
[[maybe_unused]] const int atfork_registered = pthread_atfork(nullptr, nullptr, [] {
  if (memory_heap* h = thread_heap; h != nullptr) {
    h->after_fork_in_child();
  }
});

// Usable bytes of the large blocks in use. Relaxed: a statistic.
std::atomic<std::size_t> large_in_use{0};

void* allocate_from(memory_heap* h, unsigned size_class) {
  if (void* p = h->allocate(size_class); p != nullptr) {
    return p;
  }
  throw std::bad_alloc();
}

void* allocate_small(std::size_t bytes) {
  const unsigned size_class = detail::size_class_of(bytes);
  if (memory_heap* h = thread_heap; h != nullptr) {
    return allocate_from(h, size_class);
  }
  if (!binding_of_this_thread::gone()) {
    memory_heap* h = detail::heap_registry::acquire();
    if (h == nullptr) {
      throw std::bad_alloc();
    }
    // Made here, so its destructor runs at thread exit.
    static_cast<void>(binding_of_this_thread::get());
    thread_heap = h;
    return allocate_from(h, size_class);
  }
  // Past this thread's exit: borrow a heap for this one block.
  memory_heap* h = detail::heap_registry::acquire();
  if (h == nullptr) {
    throw std::bad_alloc();
  }
  void* p = h->allocate(size_class);
  detail::heap_registry::abandon(h);
  if (p == nullptr) {
    throw std::bad_alloc();
  }
  return p;
}

void* allocate_large(std::size_t bytes, std::size_t alignment) {
  using detail::os_page_size;
  using detail::segment_size;
  // The block starts `offset` bytes into its mapping, on a page boundary.
  // Its header is at the mapping's start, which is segment-aligned, so
  // region_of finds it by masking; a block aligned to a segment or more
  // would mask to itself, so its header sits one segment below it.
  const std::size_t offset = alignment > os_page_size ? alignment : os_page_size;
  const std::size_t map_alignment = alignment > segment_size ? alignment : segment_size;
  constexpr std::size_t limit = std::size_t{1} << 62;
  if (bytes > limit || offset > limit) {
    throw std::bad_alloc();
  }
  const std::size_t body = (bytes + os_page_size - 1) & ~(os_page_size - 1);
  const std::size_t mapped = offset + body;
  char* base = static_cast<char*>(detail::os_map(mapped, map_alignment));
  if (base == nullptr) {
    throw std::bad_alloc();
  }
  char* block = base + offset;
  void* header_at = alignment >= segment_size ? block - segment_size : base;
  auto* header = new (header_at) detail::large_header();
  header->kind = detail::region_kind::large;
  header->base = base;
  header->mapped = mapped;
  header->usable = body;
  large_in_use.fetch_add(body, std::memory_order_relaxed);
  return block;
}

}  // namespace

void* scalable_allocate(std::size_t bytes) {
  if (bytes - 1 < detail::max_class_size) [[likely]] {  // 0 wraps round to the slow path
    if (memory_heap* h = thread_heap; h != nullptr) [[likely]] {
      return allocate_from(h, detail::size_class_of(bytes));
    }
    return allocate_small(bytes);
  }
  return bytes == 0 ? allocate_small(1) : allocate_large(bytes, detail::min_block_alignment);
}

void* scalable_allocate(std::size_t bytes, std::size_t alignment) {
  if (!std::has_single_bit(alignment)) {
    throw std::invalid_argument("fjord::scalable_allocate: alignment " + std::to_string(alignment) +
                                " is not a power of two");
  }
  if (alignment <= detail::min_block_alignment) {
    return scalable_allocate(bytes);
  }
  // A span starts on a 64 KiB boundary and a power-of-two class is aligned
  // to its size within its span, so a class that is a multiple of the
  // alignment gives an aligned block.
  std::size_t size = bytes < alignment ? alignment : bytes;
  if (alignment <= detail::segment_page_size && size <= detail::max_class_size) {
    if (detail::class_block_size(detail::size_class_of(size)) % alignment != 0) {
      size = std::bit_ceil(size);
    }
    if (size <= detail::max_class_size) {
      return allocate_small(size);
    }
  }
  return allocate_large(bytes == 0 ? 1 : bytes, alignment);
}

void scalable_deallocate(void* p) noexcept {
  if (p == nullptr) {
    return;
  }
  detail::region_header* region = detail::region_of(p);
  if (region->kind == detail::region_kind::segment) [[likely]] {
    auto* seg = static_cast<detail::segment*>(region);
    detail::span* s = detail::span_of(seg, p);
    // Read once: after a remote free lands, another thread may retire the
    // span and unmap the segment (the heap itself is immortal).
    memory_heap* const owner = seg->owner;
    if (owner == thread_heap) [[likely]] {
      owner->deallocate_local(s, p);
    } else if (memory_heap::deallocate_remote(owner, s, p)) {
      detail::heap_registry::reclaim(owner);
    }
    return;
  }
  auto* header = static_cast<detail::large_header*>(region);
  large_in_use.fetch_sub(header->usable, std::memory_order_relaxed);
  detail::os_unmap(header->base, header->mapped);
}

std::size_t scalable_usable_size(const void* p) noexcept {
  if (p == nullptr) {
    return 0;
  }
  // Only read through: the const_cast spares region_of a second overload.
  detail::region_header* region = detail::region_of(const_cast<void*>(p));
  if (region->kind == detail::region_kind::segment) {
    auto* seg = static_cast<detail::segment*>(region);
    return detail::span_of(seg, p)->block_size;
  }
  return static_cast<detail::large_header*>(region)->usable;
}

scalable_memory_stats scalable_memory_statistics() noexcept {
  scalable_memory_stats stats;
  stats.bytes_in_use =
      detail::heap_registry::bytes_in_use() + large_in_use.load(std::memory_order_relaxed);
  stats.bytes_mapped = detail::os_mapped_bytes();
  stats.bytes_cached = detail::cached_bytes.load(std::memory_order_relaxed);
  stats.heaps = detail::heap_registry::heap_count();
  return stats;
}

namespace detail {

void take_back_remote_frees_of_this_thread() noexcept {
  if (memory_heap* h = thread_heap; h != nullptr) {
    h->take_back_remote_frees();
  }
}

void release_cached_memory_of_this_thread() noexcept {
  if (memory_heap* h = thread_heap; h != nullptr) {
    h->release_cached();
  }
}

}  // namespace detail

void scalable_memory_release() noexcept {
  if (memory_heap* h = thread_heap; h != nullptr) {
    h->release_unused();
  }
}

void scalable_memory_set_purge_delay(std::chrono::milliseconds delay) {
  if (delay.count() < 0) {
    throw std::invalid_argument("fjord::scalable_memory_set_purge_delay: delay of " +
                                std::to_string(delay.count()) + " ms is negative");
  }
  constexpr std::int64_t ns_per_ms = 1'000'000;
  constexpr std::int64_t longest = std::numeric_limits<std::int64_t>::max();
  const std::int64_t ns = delay.count() > longest / ns_per_ms
                              ? longest
                              : static_cast<std::int64_t>(delay.count()) * ns_per_ms;
  detail::purge_delay_ns.store(ns, std::memory_order_relaxed);
}

std::chrono::milliseconds scalable_memory_purge_delay() noexcept {
  return std::chrono::milliseconds(detail::purge_delay_ns.load(std::memory_order_relaxed) /
                                   1'000'000);
}

std::pmr::memory_resource* scalable_resource() noexcept {
  // Never destroyed: containers in static storage may free into it late.
  alignas(scalable_memory_resource) static unsigned char storage[sizeof(scalable_memory_resource)];
  static auto* const resource = new (storage) scalable_memory_resource();
  return resource;
}

}  // namespace fjord
