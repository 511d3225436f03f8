#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <limits>

#include "fjord/detail/config.hpp"
#include "fjord/detail/memory_segment.hpp"
#include "fjord/detail/size_classes.hpp"

namespace fjord::detail {

// One thread's heap in the scalable allocator: for every size class a list
// of spans with blocks to hand out, and the segments those spans live in.
// Only the owning thread allocates from it or frees into it directly;
// every other thread frees through the span's thread_free stack (lock-free,
// see deallocate_remote). Heaps are never destroyed: a thread that exits
// abandons its heap, and the next thread that needs one adopts it whole,
// segments, spans and all, so a segment's owner never changes and a remote
// free may always read it. The protocol is argued in docs/allocator.md.
class memory_heap {
 public:
  memory_heap() = default;
  memory_heap(const memory_heap&) = delete;
  memory_heap& operator=(const memory_heap&) = delete;

  // Owner only. nullptr when the OS has no memory left.
  FJORD_ALWAYS_INLINE void* allocate(unsigned size_class) noexcept {
    span* s = available_[size_class];
    if (s != nullptr && s->free != nullptr) [[likely]] {
      free_block* b = s->free;
      s->free = b->next;
      ++s->used;
      count(allocated_, s->block_size);
      return b;
    }
    return allocate_slow(size_class);
  }

  // Owner only: p lies in span s of one of this heap's segments.
  FJORD_ALWAYS_INLINE void deallocate_local(span* s, void* p) noexcept {
    auto* b = static_cast<free_block*>(p);
    b->next = s->free;
    s->free = b;
    count(freed_, s->block_size);
    if (--s->used == 0 || s->state != span_state::available) [[unlikely]] {
      after_local_free(s);
    }
  }

  // Any thread but the owner's. Lock-free: one CAS, and one more push the
  // first time a full span gets a block back. Returns true when the owner
  // is abandoned and was not seen collecting afterwards: the caller must
  // then call heap_registry's reclaim (see docs/allocator.md).
  static bool deallocate_remote(memory_heap* owner, span* s, void* p) noexcept;

  // Owner only: gives back to the OS every span with no block in use, the
  // cached and spare segments, and the free pages of live segments.
  void release_unused() noexcept;

  // Owner only, when its thread goes idle (a pool worker about to park
  // with no work, or retiring): takes back remote frees, and gives every
  // cached segment back at once rather than after the purge delay, since
  // nothing may come to reuse it.
  void release_cached() noexcept {
    take_back_remote_frees();
    if (cached_ != nullptr) {
      purge_cached(std::numeric_limits<std::int64_t>::max());
    }
  }

  // Owner only: takes back the blocks other threads freed into its full
  // spans (those on the notified stack), giving back spans left empty.
  void take_back_remote_frees() noexcept {
    if (notified_.load(std::memory_order_relaxed) != nullptr) {
      drain_notified();
    }
  }

  // Owner only, in the child of a fork (see scalable_memory.cpp).
  void after_fork_in_child() noexcept;

  // Ownership changes, made by heap_registry under its lock.
  void on_adopt() noexcept;    // by the new owner, after taking it
  void on_abandon() noexcept;  // by the owner, before giving it up
  // By a thread that holds an abandoned heap for a moment: processes the
  // spans remote frees have handed back. Returns true if it did any.
  bool collect_abandoned() noexcept;
  [[nodiscard]] bool has_notified() const noexcept {
    // seq_cst: the load half of the Dekker pair in docs/allocator.md.
    return notified_.load(std::memory_order_seq_cst) != nullptr;
  }

  // Bytes handed out and not yet freed back to this heap.
  [[nodiscard]] std::size_t bytes_in_use() const noexcept {
    // Acquire, freed first: the owner stored every allocation a free
    // undoes before the free itself, so the difference never goes below 0.
    const std::size_t freed = freed_.load(std::memory_order_acquire);
    return allocated_.load(std::memory_order_relaxed) - freed;
  }

  // heap_registry's fields, under its lock.
  memory_heap* next_heap = nullptr;
  memory_heap* next_abandoned = nullptr;
  std::atomic<bool> abandoned{false};

 private:
  // Owner-written statistics: a load and a store, no read-modify-write.
  // Release (a plain store on x86) for bytes_in_use's acquire.
  static FJORD_ALWAYS_INLINE void count(std::atomic<std::size_t>& c, std::size_t n) noexcept {
    c.store(c.load(std::memory_order_relaxed) + n, std::memory_order_release);
  }

  void* allocate_slow(unsigned size_class) noexcept;
  void after_local_free(span* s) noexcept;
  void drain_notified() noexcept;
  void return_free_memory() noexcept;  // the spare segment, and free pages
  bool collect(span* s) noexcept;
  void extend(span* s) noexcept;
  bool try_mark_full(span* s) noexcept;
  void make_available(span* s) noexcept;
  void unlink(span* s) noexcept;
  span* new_span(unsigned size_class) noexcept;
  segment* new_segment() noexcept;
  // Returns true if the span's segment went back to the OS with it.
  bool retire(span* s, bool keep_segment) noexcept;
  template <class F>
  void for_each_span(F f) noexcept;
  void cache(segment* seg) noexcept;
  segment* unlink_cached(segment* seg) noexcept;  // off the cache, still mapped
  // Gives back the cached segments that went empty at or before `cutoff`.
  void purge_cached(std::int64_t cutoff) noexcept;
  void purge_expired() noexcept;
  void drop(segment* seg) noexcept;  // to the spare slot, or to the OS

  span* available_[size_class_count] = {};
  segment* segments_ = nullptr;
  // Empty segments still committed, newest first (linked through next and
  // prev, like segments_): a heap that empties and refills within the purge
  // delay reuses them without a page fault (docs/allocator.md, "Returning
  // memory to the OS").
  segment* cached_ = nullptr;
  segment* cached_oldest_ = nullptr;
  segment* spare_ = nullptr;  // one empty segment, decommitted, kept for reuse
  std::atomic<std::size_t> allocated_{0};
  std::atomic<std::size_t> freed_{0};
  // Full spans that got a block back from another thread (Treiber stack:
  // many pushers, and one consumer that takes the whole stack at once, so
  // there is no ABA). Away from the counters the owner stores to on every
  // call, since other threads push here.
  alignas(64) std::atomic<span*> notified_{nullptr};
};

// The calling thread's heap, if it has one, takes back what other threads
// freed into its full spans. A pool worker calls it before it parks in a
// wait, so a burst allocated on a worker and freed elsewhere goes back to
// the OS even if that worker allocates nothing more of that size.
void take_back_remote_frees_of_this_thread() noexcept;

// The same, and the heap gives its cached segments back to the OS. A pool
// worker calls it when it parks for want of work or retires: nothing on it
// may come to reuse them.
void release_cached_memory_of_this_thread() noexcept;

// How long an empty segment stays committed in its heap's cache, in ns
// (scalable_memory_set_purge_delay). Relaxed: each heap reads it on its
// slow path, and a change needs to reach it only eventually.
inline std::atomic<std::int64_t> purge_delay_ns{1'000'000'000};

// Bytes of the segments in heap caches, process-wide. Relaxed: a statistic.
inline std::atomic<std::size_t> cached_bytes{0};

// The most all heaps together keep cached (1 GiB), however long the delay:
// threads that free bursts and then stop calling the allocator hold no more
// than that. A variable so that a test can lower it.
inline std::atomic<std::size_t> max_cached_bytes{std::size_t{1} << 30};

}  // namespace fjord::detail
