#include "fjord/detail/frame_allocator.hpp"

#include <pthread.h>

#include <algorithm>
#include <atomic>
#include <mutex>
#include <new>
#include <vector>

#include "fjord/detail/per_thread.hpp"
#include "fjord/scalable_memory.hpp"

namespace fjord::detail {

namespace {

// A thread caches at most this many bytes per class (and at least 64 blocks)
// before handing half of them to the central list: a chain of a thousand
// 100-byte frames stays within one thread's cache.
constexpr std::size_t cache_bytes_per_class = std::size_t{128} * 1024;
constexpr std::size_t min_cached_blocks = 64;
// The central lists keep at most this many bytes per class; beyond that,
// surplus blocks go back to the scalable allocator.
constexpr std::size_t central_bytes_per_class = std::size_t{2} * 1024 * 1024;
// Blocks made at once when both the cache and the central list are empty.
constexpr std::size_t fresh_batch = 16;

std::size_t block_size(std::size_t cls) {
  return (cls + 1) * frame_allocator::class_step;
}

}  // namespace

// Central free lists, one per class, each a chain of blocks under a mutex.
// Immortal on purpose: threads may free frames during static destruction.
struct central_lists {
  struct list {
    std::mutex mutex;
    void* head = nullptr;  // blocks linked through their first word
    std::size_t count = 0;
  };
  list lists[frame_allocator::class_count];

  static central_lists& get() {
    static central_lists* instance = make();
    return *instance;
  }

 private:
  // fork() while another thread holds a list's mutex would leave it held
  // forever in the child: hold them all across the fork (taken in index
  // order, and nothing else takes two), then release them in the parent and
  // make them anew in the child.
  static central_lists* make() {
    auto* lists = new central_lists;
    pthread_atfork(
        [] {
          for (auto& l : get().lists) {
            l.mutex.lock();
          }
        },
        [] {
          for (auto& l : get().lists) {
            l.mutex.unlock();
          }
        },
        [] {
          for (auto& l : get().lists) {
            ::new (static_cast<void*>(&l.mutex)) std::mutex;
          }
        });
    return lists;
  }
};

namespace {

// Relaxed: a count for tests, read once the work it counts has finished
// (after pool::wait_idle, which orders the frees before it).
std::atomic<std::int64_t> live_frame_count{0};

}  // namespace

std::int64_t frame_allocator::live_frames() noexcept {
  return live_frame_count.load(std::memory_order_relaxed);
}

void frame_allocator::count_live(std::int64_t delta) noexcept {
  live_frame_count.fetch_add(delta, std::memory_order_relaxed);
}

namespace {

// Runs at thread exit: returns the cache and makes later blocks come from
// and go to the central list one at a time (limit 0), since the
// thread_local cache is about to vanish.
// per_thread marks it gone before this runs, so the flush leaves no room.
struct exit_hook {
  bool armed = false;
  ~exit_hook() {
    if (armed) {
      frame_allocator::flush_this_thread();
    }
  }
};
using exit_hook_of_this_thread = per_thread<exit_hook>;

// Whether this thread's cache is in use: armed, and not past its exit hook.
bool cache_armed() noexcept {
  const exit_hook* h = exit_hook_of_this_thread::get();
  return h != nullptr && h->armed;
}

void push_chain(central_lists::list& l, void* first, void* last, std::size_t n, std::size_t cls) {
  std::unique_lock lock(l.mutex);
  if ((l.count + n) * block_size(cls) > central_bytes_per_class) {
    lock.unlock();
    while (first != nullptr) {
      void* next = first == last ? nullptr : *static_cast<void**>(first);
      scalable_deallocate(first);
      first = next;
    }
    return;
  }
  *static_cast<void**>(last) = l.head;
  l.head = first;
  l.count += n;
}

}  // namespace

namespace {

std::uint32_t limit_of(std::size_t cls) {
  return static_cast<std::uint32_t>(
      std::max(min_cached_blocks, cache_bytes_per_class / block_size(cls)));
}

}  // namespace

std::size_t frame_allocator::cached_by_this_thread() noexcept {
  if (!cache_armed()) {
    return 0;
  }
  std::size_t n = 0;
  for (std::size_t cls = 0; cls < class_count; ++cls) {
    n += limit_of(cls) - thread_cache.room[cls];
  }
  return n;
}

void frame_allocator::flush_this_thread() noexcept {
  cache& c = thread_cache;
  for (std::size_t cls = 0; cls < class_count; ++cls) {
    if (c.head[cls] != nullptr) {
      std::size_t n = 1;
      block* last = c.head[cls];
      while (last->next != nullptr) {
        last = last->next;
        ++n;
      }
      push_chain(central_lists::get().lists[cls], c.head[cls], last, n, cls);
    }
    c.head[cls] = nullptr;
    c.room[cls] = cache_armed() ? limit_of(cls) : 0;
  }
}

namespace {

// Arms the exit hook on a thread's first use and gives every class its room.
// Returns false once the thread is past its exit hook (use the central list
// directly then).
bool ensure_cache_ready(std::uint32_t* room) {
  exit_hook* h = exit_hook_of_this_thread::get();
  if (h == nullptr) {
    return false;
  }
  if (h->armed) {
    return true;
  }
  h->armed = true;
  for (std::size_t cls = 0; cls < frame_allocator::class_count; ++cls) {
    room[cls] = limit_of(cls);
  }
  return true;
}

}  // namespace

void* frame_allocator::refill(std::size_t cls) {
  cache& c = thread_cache;
  central_lists::list& l = central_lists::get().lists[cls];
  if (!ensure_cache_ready(c.room)) {
    // Past the thread's exit hook (a static destructor after main's
    // thread_locals): one block from the central list, where such frees go,
    // since the scalable allocator serves such a thread only by borrowing a
    // heap for each block, which walks all of that heap's spans.
    {
      std::lock_guard lock(l.mutex);
      if (auto* b = static_cast<block*>(l.head); b != nullptr) {
        l.head = b->next;
        --l.count;
        return b;
      }
    }
    return scalable_allocate(block_size(cls));
  }
  // Take up to half a cache's worth from the central list.
  {
    const std::size_t want = limit_of(cls) / 2;
    std::lock_guard lock(l.mutex);
    std::size_t taken = 0;
    while (l.head != nullptr && taken < want) {
      auto* b = static_cast<block*>(l.head);
      l.head = b->next;
      b->next = c.head[cls];
      c.head[cls] = b;
      ++taken;
    }
    l.count -= taken;
    c.room[cls] -= static_cast<std::uint32_t>(taken);
  }
  if (c.head[cls] == nullptr) {
    for (std::size_t i = 0; i < fresh_batch; ++i) {
      auto* b = static_cast<block*>(scalable_allocate(block_size(cls)));
      b->next = c.head[cls];
      c.head[cls] = b;
      --c.room[cls];
    }
  }
  block* b = c.head[cls];
  c.head[cls] = b->next;
  ++c.room[cls];
  return b;
}

void frame_allocator::overflow(void* p, std::size_t cls) noexcept {
  cache& c = thread_cache;
  const bool was_armed = cache_armed();
  if (!ensure_cache_ready(c.room)) {
    // Past the exit hook: to the central list (see refill), or the scalable
    // allocator once that is full.
    push_chain(central_lists::get().lists[cls], p, p, 1, cls);
    return;
  }
  if (!was_armed) {  // the first free on this thread: there is room now
    auto* b = static_cast<block*>(p);
    b->next = c.head[cls];
    c.head[cls] = b;
    --c.room[cls];
    return;
  }
  // Full: keep the recent (warm) half, hand the older half and p to the
  // central list.
  const std::uint32_t keep = limit_of(cls) / 2;
  block* last_kept = c.head[cls];
  for (std::uint32_t i = 1; i < keep; ++i) {
    last_kept = last_kept->next;
  }
  auto* first = static_cast<block*>(p);
  first->next = last_kept->next;
  block* last = first;
  std::size_t moved = 1;
  while (last->next != nullptr) {
    last = last->next;
    ++moved;
  }
  last_kept->next = nullptr;
  c.room[cls] = limit_of(cls) - keep;
  push_chain(central_lists::get().lists[cls], first, last, moved, cls);
}

}  // namespace fjord::detail
