#pragma once

#include <cstddef>
#include <cstdint>
#include <new>

#include "fjord/detail/assert.hpp"
#include "fjord/detail/config.hpp"

namespace fjord::detail {

// Memory for coroutine frames: a per-thread cache of free blocks in 64 size
// classes (16 to 1024 bytes, 16 apart: a chain's working set is its frames,
// so rounding a 72-byte frame up to 128 would cost cache misses), in the manner of a thread-caching
// malloc. A frame is freed into the cache of the thread that frees it, not
// of the one that allocated it, so a frame made on one worker and destroyed
// on another costs no synchronisation at all; a cache that grows past its
// bound hands a batch to a central list per class (one mutex, taken once per
// batch), from which caches that run dry refill. Steady state never calls
// malloc, whichever threads allocate and free.
//
// Every block is its own allocation from fjord's scalable allocator, so any
// block may be given back to it at any time: a thread that has exited frees
// straight to it, and a central list past its bound frees the surplus. A block
// freed there by another thread than the one that made it goes home with one
// atomic push (docs/allocator.md, "Remote frees"), where malloc took its arena's
// lock: ten million processes made on one thread and ended on the workers
// paid that lock for most of their frames. Under AddressSanitizer the cache
// and the scalable allocator are bypassed altogether (operator new), so that
// a use after free of a frame is caught and a frame never freed is reported
// by LeakSanitizer.
class frame_allocator {
 public:
  static constexpr std::size_t class_step = 16;
  static constexpr std::size_t class_count = 64;
  static constexpr std::size_t max_cached_size = class_step * class_count;

  static FJORD_ALWAYS_INLINE void* allocate(std::size_t size) {
#if FJORD_ASSERTIONS
    void* p = allocate_block(size);
    count_live(1);  // once the allocation succeeded
    return p;
#else
    return allocate_block(size);
#endif
  }

  static FJORD_ALWAYS_INLINE void deallocate(void* p, std::size_t size) noexcept {
#if FJORD_ASSERTIONS
    count_live(-1);
#endif
#if !FJORD_ASAN
    if (size <= max_cached_size) [[likely]] {
      const std::size_t cls = (size - 1) / class_step;
      cache& c = thread_cache;
      if (c.room[cls] != 0) [[likely]] {
        auto* b = static_cast<block*>(p);
        b->next = c.head[cls];
        c.head[cls] = b;
        --c.room[cls];
        return;
      }
      overflow(p, cls);
      return;
    }
#endif
    (void)size;  // clang enables sized deallocation only on request
    ::operator delete(p);
  }

  // Blocks cached by the calling thread, all classes (for tests).
  static std::size_t cached_by_this_thread() noexcept;
  // Returns the calling thread's cache to the central lists (for tests).
  static void flush_this_thread() noexcept;

  // Frames allocated and not yet freed, process-wide, counted only by code
  // built with assertions on (Debug, ASan, TSan): the test fixtures check
  // that a test leaves none behind. Out of line, so this header needs no
  // <atomic>, and a release build pays nothing.
  static std::int64_t live_frames() noexcept;
  static void count_live(std::int64_t delta) noexcept;

 private:
  static FJORD_ALWAYS_INLINE void* allocate_block(std::size_t size) {
#if !FJORD_ASAN
    if (size <= max_cached_size) [[likely]] {
      const std::size_t cls = (size - 1) / class_step;
      cache& c = thread_cache;
      if (block* b = c.head[cls]; b != nullptr) [[likely]] {
        c.head[cls] = b->next;
        ++c.room[cls];
        return b;
      }
      return refill(cls);
    }
#endif
    return ::operator new(size);
  }

  struct block {
    block* next;
  };
  // Trivially constructible, so the thread_local needs no guard on access.
  // room[] counts the blocks a class may still take before it is full (one
  // counter instead of a count and a limit: a load fewer per free). It is 0,
  // which sends frees to the slow path, until the thread's first use arms
  // its exit hook, and again after the hook ran (blocks then come from and
  // go to the central list one at a time, the scalable allocator past it).
  struct cache {
    block* head[class_count];
    std::uint32_t room[class_count];
  };

  static void* refill(std::size_t cls);
  static void overflow(void* p, std::size_t cls) noexcept;

  __attribute__((
      tls_model("initial-exec"))) static inline constinit thread_local cache thread_cache{};
};

}  // namespace fjord::detail
