#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace fjord::detail {

// Per-worker storage for heap-allocated jobs (task_group children, posted
// closures): size-class free lists refilled from 64 KiB slabs, so steady state
// never calls malloc. A block freed by another thread goes onto its owner's
// remote list (a Treiber stack, Treiber 1986); the owner takes the whole list
// with one exchange, so pops never race each other and ABA cannot arise.
//
// Blocks carry a 16-byte header naming their owner and kind, so any thread can
// free them: a worker's heap, a pool's job_recycler (blocks made by threads
// that are not workers of the pool), or plain operator new (larger requests,
// over-aligned objects, and states that may outlive the pool).
class job_heap {
 public:
  static constexpr std::size_t header_size = 16;
  static constexpr std::size_t class_count = 4;  // 64, 128, 256, 512 bytes

  job_heap() = default;
  ~job_heap();
  job_heap(const job_heap&) = delete;
  job_heap& operator=(const job_heap&) = delete;

  // Allocates from this heap (owner thread only) or, with heap == nullptr,
  // from operator new. Returns storage aligned to `align` (16 unless the
  // object is over-aligned, which always takes the operator new path).
  // The owner's common case is inline (a pop from a size class whose index
  // folds to a constant when size does); the rest is out of line.
  static void* allocate(job_heap* heap, std::size_t size, std::size_t align = 16) {
    if (heap != nullptr && align <= header_size) {
      const std::size_t cls = class_for(size + header_size);
      if (cls < class_count && heap->local_[cls] != nullptr) [[likely]] {
        block* b = heap->local_[cls];
        heap->local_[cls] = b->next;
        return heap->hand_out(b, cls);
      }
    }
    return allocate_slow(heap, size, align);
  }
  // Any thread; a block going back to the calling worker's own heap (the
  // common case) is pushed inline.
  static void deallocate(void* p) noexcept;

  // For a job that was built but never enqueued (its submission threw): frees
  // without touching the pool, which may be gone by the time the exception
  // reaches the caller. Recycled blocks are plain operator new memory.
  static void deallocate_unrun(void* p) noexcept;

  // Blocks handed out and not yet returned (for leak tests).
  std::int64_t live_blocks() const noexcept {
    return allocated_.load(std::memory_order_relaxed) -
           freed_local_.load(std::memory_order_relaxed) -
           freed_remote_.load(std::memory_order_relaxed);
  }

  // Block layout, shared with job_recycler.
  struct block {
    block* next;
  };
  enum class kind : std::uint32_t { heap, plain, aligned, recycled };
  struct header {
    void* owner;  // job_heap*, job_recycler*, or the raw allocation (aligned)
    std::uint32_t size_class;
    kind block_kind;
  };
  static_assert(sizeof(header) == header_size);

  static constexpr std::size_t class_block_size(std::size_t cls) { return std::size_t{64} << cls; }
  // The class whose blocks hold `total` bytes, or class_count if none does.
  static std::size_t class_for(std::size_t total) noexcept {
    for (std::size_t c = 0; c < class_count; ++c) {
      if (total <= class_block_size(c)) {
        return c;
      }
    }
    return class_count;
  }

 private:
  static void* allocate_slow(job_heap* heap, std::size_t size, std::size_t align);
  static void deallocate_slow(void* p) noexcept;
  void* hand_out(block* b, std::size_t cls) noexcept {
    allocated_.store(allocated_.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
    auto* h = reinterpret_cast<header*>(b);
    h->owner = this;
    h->size_class = static_cast<std::uint32_t>(cls);
    h->block_kind = kind::heap;
    return reinterpret_cast<char*>(h) + header_size;
  }
  void* allocate_from_class(std::size_t cls);
  void refill(std::size_t cls);
  void free_local(block* b, std::size_t cls) noexcept {
    b->next = local_[cls];
    local_[cls] = b;
    freed_local_.store(freed_local_.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
  }
  void free_remote(block* b, std::size_t cls) noexcept;

  std::array<block*, class_count> local_{};
  std::vector<void*> slabs_;
  std::atomic<std::int64_t> allocated_{0};    // owner-written only
  std::atomic<std::int64_t> freed_local_{0};  // owner-written only
  std::atomic<std::int64_t> freed_remote_{0};
  alignas(128) std::array<std::atomic<block*>, class_count> remote_{};
};

// The heap of the worker running on this thread, or nullptr; set with
// current_worker (set_current_worker in worker.hpp). initial-exec, as
// current_worker: one fs-relative load.
__attribute__((tls_model(
    "initial-exec"))) inline constinit thread_local job_heap* this_thread_job_heap = nullptr;

inline job_heap* current_job_heap() noexcept {
  return this_thread_job_heap;
}

inline void job_heap::deallocate(void* p) noexcept {
  auto* h = reinterpret_cast<header*>(static_cast<char*>(p) - header_size);
  if (h->block_kind == kind::heap && h->owner == this_thread_job_heap) [[likely]] {
    static_cast<job_heap*>(h->owner)->free_local(reinterpret_cast<block*>(h), h->size_class);
    return;
  }
  deallocate_slow(p);
}

}  // namespace fjord::detail
