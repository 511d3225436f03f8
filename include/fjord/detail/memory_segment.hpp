#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

namespace fjord::detail {

// Memory layout of the scalable allocator (docs/allocator.md). The OS gives
// memory in segments of 4 MiB aligned to 4 MiB, so the segment of any
// small block is its address with the low 22 bits cleared. A segment is 64
// pages of 64 KiB; page 0 holds the segment's header, and the others are
// grouped into spans, runs of pages that serve one size class of one heap.
inline constexpr std::size_t segment_size = std::size_t{4} << 20;
inline constexpr std::size_t segment_page_size = std::size_t{64} << 10;
inline constexpr std::size_t pages_per_segment = segment_size / segment_page_size;
inline constexpr std::size_t os_page_size = 4096;

class memory_heap;

struct free_block {
  free_block* next;
};

enum class region_kind : std::uint32_t { segment = 0x5E6E17u, large = 0x1A26Eu };

enum class span_state : std::uint8_t {
  unused,     // the page belongs to no span
  available,  // on its heap's list for its class: may have free blocks
  full,       // off every list; its owner asked to be told of a remote free
};

// A span's descriptor. The owner heap's thread alone touches everything
// but thread_free and next_notified (and any thread may touch those two
// only in the protocol of docs/allocator.md).
struct span {
  free_block* free = nullptr;  // blocks the owner may hand out now
  std::uint32_t used = 0;      // blocks handed out and not back on `free`
  std::uint32_t carved = 0;    // blocks cut from the span so far
  std::uint32_t capacity = 0;  // blocks the span holds
  std::uint32_t block_size = 0;
  std::uint16_t size_class = 0;
  std::uint8_t page_count = 0;  // on a span's first page: its pages
  span_state state = span_state::unused;
  span* next = nullptr;  // the heap's list for the class
  span* prev = nullptr;
  char* start = nullptr;  // the first block
  // Blocks freed by threads other than the owner: a Treiber stack, or
  // notify_full() when the span is full and its owner asked to be told.
  // On a cache line of its own, so that remote frees do not take the line
  // the owner's fast path reads and writes.
  alignas(64) std::atomic<free_block*> thread_free{nullptr};
  span* next_notified = nullptr;  // link in the owner's notified stack

  // The value of thread_free set by the owner when the span becomes full
  // (the stack is empty then): the next remote free replaces it and pushes
  // the span onto the owner's notified stack, so a full span comes back to
  // its owner without the owner ever scanning for it. An address no block
  // can have.
  static free_block* notify_full() noexcept {
    static free_block sentinel{};
    return &sentinel;
  }
};

// Both a segment's header and a large block's header start with their kind.
struct region_header {
  region_kind kind;
};

struct segment : region_header {
  memory_heap* owner = nullptr;  // never changes: heaps are adopted whole
  segment* next = nullptr;       // the owner's segments
  segment* prev = nullptr;
  std::uint64_t free_pages = 0;  // bit i set: page i is in no span
  // While the segment sits empty in its heap's cache: when it got there
  // (CLOCK_MONOTONIC_COARSE, ns), for the purge delay.
  std::int64_t emptied_at = 0;
  // Page i belongs to the span whose descriptor is spans[page_lead[i]].
  // Apart from the descriptors, whose first line the owner writes on every
  // call, since every remote free reads it.
  alignas(64) std::uint8_t page_lead[pages_per_segment] = {};
  span spans[pages_per_segment];
};
static_assert(sizeof(segment) <= segment_page_size);

// A block larger than the biggest size class gets a mapping of its own.
struct large_header : region_header {
  void* base = nullptr;    // the mapping
  std::size_t mapped = 0;  // its length
  std::size_t usable = 0;  // bytes from the block to the mapping's end
};

inline constexpr std::uint64_t all_span_pages = ~std::uint64_t{1};  // page 0 is the header

inline region_header* region_of(void* p) noexcept {
  const std::uintptr_t offset = reinterpret_cast<std::uintptr_t>(p) & (segment_size - 1);
  // A segment-aligned block is a large block aligned to 4 MiB or more; its
  // header sits one segment below it (no small block is segment-aligned,
  // since page 0 of a segment is its header).
  char* header = static_cast<char*>(p) - (offset == 0 ? segment_size : offset);
  return reinterpret_cast<region_header*>(header);
}

inline span* span_of(segment* s, const void* p) noexcept {
  const auto index = (reinterpret_cast<std::uintptr_t>(p) - reinterpret_cast<std::uintptr_t>(s)) /
                     segment_page_size;
  return &s->spans[s->page_lead[index]];
}

}  // namespace fjord::detail
