#pragma once

#include <cstddef>

namespace fjord::detail {

class memory_heap;

// Every heap the scalable allocator has made, and the abandoned ones that
// wait for a thread to adopt them (docs/allocator.md).
namespace heap_registry {

// An abandoned heap, adopted, or a new one; nullptr if out of memory.
memory_heap* acquire() noexcept;
// Gives up the calling thread's heap (at thread exit).
void abandon(memory_heap* h) noexcept;
// Called after a remote free handed a span back to an abandoned heap:
// holds the heap for a moment and gives back what its owner would have.
void reclaim(memory_heap* h) noexcept;

std::size_t bytes_in_use() noexcept;
std::size_t heap_count() noexcept;

}  // namespace heap_registry

}  // namespace fjord::detail
