#include "fjord/detail/memory_heap.hpp"

#include <time.h>

#include <algorithm>
#include <bit>
#include <new>

#include "fjord/detail/os_memory.hpp"

namespace fjord::detail {

namespace {

// A span holds at least eight blocks of its class (so a run of same-sized
// allocations maps a fresh span at most every eighth one), between one and
// sixteen pages.
constexpr std::size_t span_pages_for(std::size_t block_size) noexcept {
  const std::size_t pages = (block_size * 8 + segment_page_size - 1) / segment_page_size;
  return std::clamp<std::size_t>(pages, 1, 16);
}

constexpr std::uint64_t page_run(std::size_t first, std::size_t count) noexcept {
  return ((std::uint64_t{1} << count) - 1) << first;
}

// The first page of `count` free pages in a row, or 0 (page 0 is never free).
std::size_t find_free_run(std::uint64_t free_pages, std::size_t count) noexcept {
  const std::uint64_t want = (std::uint64_t{1} << count) - 1;
  for (std::size_t i = 1; i + count <= pages_per_segment; ++i) {
    if (((free_pages >> i) & want) == want) {
      return i;
    }
  }
  return 0;
}

// The cache's clock. Coarse (a few ms of resolution, no syscall, about as
// cheap as a load): it only has to measure a delay of the order of a second.
std::int64_t coarse_now_ns() noexcept {
  timespec t{};
#ifdef CLOCK_MONOTONIC_COARSE
  clock_gettime(CLOCK_MONOTONIC_COARSE, &t);
#else
  clock_gettime(CLOCK_MONOTONIC, &t);
#endif
  return std::int64_t{t.tv_sec} * 1'000'000'000 + t.tv_nsec;
}

segment* segment_of(span* s) noexcept {
  // Descriptors live in their segment's header page.
  const std::uintptr_t offset = reinterpret_cast<std::uintptr_t>(s) & (segment_size - 1);
  return reinterpret_cast<segment*>(reinterpret_cast<char*>(s) - offset);
}

void reset_page(segment* seg, std::size_t i) noexcept {
  span& p = seg->spans[i];
  p.free = nullptr;
  p.used = 0;
  p.carved = 0;
  p.capacity = 0;
  p.block_size = 0;
  p.size_class = 0;
  p.page_count = 0;
  seg->page_lead[i] = static_cast<std::uint8_t>(i);
  p.state = span_state::unused;
  p.next = nullptr;
  p.prev = nullptr;
  p.start = nullptr;
  p.thread_free.store(nullptr, std::memory_order_relaxed);
  p.next_notified = nullptr;
}

}  // namespace

bool memory_heap::deallocate_remote(memory_heap* owner, span* s, void* p) noexcept {
  auto* b = static_cast<free_block*>(p);
  free_block* const flag = span::notify_full();
  free_block* old = s->thread_free.load(std::memory_order_relaxed);
  do {
    b->next = old == flag ? nullptr : old;
    // Release: the owner takes the stack with an acquire exchange (collect)
    // and so sees this link. Acquire: if we read the flag, we read it from
    // the owner's release CAS that set it (try_mark_full), which the owner
    // made after draining the span's previous push: so the previous
    // pusher's write of next_notified happens before ours. Whoever replaces
    // the flag hands the span back, and that is us if we saw it.
  } while (!s->thread_free.compare_exchange_weak(old, b, std::memory_order_acq_rel,
                                                 std::memory_order_relaxed));
  if (old != flag) {
    // The span was not full, or another free already handed it back. The
    // span may be retired the moment the CAS lands: touch it no more.
    return false;
  }
  // The span is full, off every list, and stays so until its owner drains
  // the notified stack, which is after this push: its memory is safe here.
  span* top = owner->notified_.load(std::memory_order_relaxed);
  do {
    s->next_notified = top;
    // seq_cst: the store half of the Dekker pair with heap_registry's
    // abandon (store `abandoned`, then load `notified_`): either we see the
    // heap abandoned and reclaim it, or its last owner sees our push.
  } while (!owner->notified_.compare_exchange_weak(top, s, std::memory_order_seq_cst,
                                                   std::memory_order_relaxed));
  return owner->abandoned.load(std::memory_order_seq_cst);
}

void memory_heap::drain_notified() noexcept {
  // Acquire: pairs with the pushers' CAS, for their next_notified links.
  span* s = notified_.exchange(nullptr, std::memory_order_acquire);
  while (s != nullptr) {
    span* next = s->next_notified;
    make_available(s);
    collect(s);  // the blocks that came back count as free from now
    // As after a local free: one empty span per class stays (s is the head
    // of its class's list now), others go back.
    if (s->used == 0 && s->next != nullptr) {
      retire(s, true);
    }
    s = next;
  }
}

bool memory_heap::collect(span* s) noexcept {
  if (s->thread_free.load(std::memory_order_relaxed) == nullptr) {
    return false;
  }
  // Acquire: pairs with the remote frees' release CAS, for their links.
  // Only called on a span that is not flagged, so the word is a stack.
  free_block* head = s->thread_free.exchange(nullptr, std::memory_order_acquire);
  std::uint32_t n = 1;
  free_block* tail = head;
  while (tail->next != nullptr) {
    tail = tail->next;
    ++n;
  }
  tail->next = s->free;
  s->free = head;
  s->used -= n;
  count(freed_, std::size_t{n} * s->block_size);
  return true;
}

void memory_heap::extend(span* s) noexcept {
  const std::uint32_t left = s->capacity - s->carved;
  if (left == 0) {
    return;
  }
  // Cut about one OS page of blocks at a time, so that a fresh span costs
  // page faults only as it fills.
  const std::uint32_t n = std::min(
      left, std::max<std::uint32_t>(1, static_cast<std::uint32_t>(os_page_size) / s->block_size));
  char* first = s->start + std::size_t{s->carved} * s->block_size;
  for (std::uint32_t i = 0; i + 1 < n; ++i) {
    reinterpret_cast<free_block*>(first + std::size_t{i} * s->block_size)->next =
        reinterpret_cast<free_block*>(first + std::size_t{i + 1} * s->block_size);
  }
  reinterpret_cast<free_block*>(first + std::size_t{n - 1} * s->block_size)->next = s->free;
  s->free = reinterpret_cast<free_block*>(first);
  s->carved += n;
}

void memory_heap::unlink(span* s) noexcept {
  if (s->prev != nullptr) {
    s->prev->next = s->next;
  } else {
    available_[s->size_class] = s->next;
  }
  if (s->next != nullptr) {
    s->next->prev = s->prev;
  }
  s->next = nullptr;
  s->prev = nullptr;
}

void memory_heap::make_available(span* s) noexcept {
  s->state = span_state::available;
  s->prev = nullptr;
  s->next = available_[s->size_class];
  if (s->next != nullptr) {
    s->next->prev = s;
  }
  available_[s->size_class] = s;
}

bool memory_heap::try_mark_full(span* s) noexcept {
  free_block* expected = nullptr;
  // Release: the free that replaces the flag acquires it, and so writes the
  // span's next_notified after our drain read it (see deallocate_remote).
  if (s->thread_free.compare_exchange_strong(
          expected, span::notify_full(), std::memory_order_release, std::memory_order_relaxed)) {
    if (s->state == span_state::available) {
      unlink(s);
    }
    s->state = span_state::full;
    return true;
  }
  collect(s);  // blocks came back meanwhile: the span is not full
  return false;
}

void* memory_heap::allocate_slow(unsigned size_class) noexcept {
  if (notified_.load(std::memory_order_relaxed) != nullptr) {
    drain_notified();
  }
  span* s = available_[size_class];
  while (s != nullptr) {
    if (s->free == nullptr && !collect(s)) {
      extend(s);
    }
    if (s->free != nullptr) {
      if (s != available_[size_class]) {
        unlink(s);
        make_available(s);
      }
      return allocate(size_class);
    }
    span* next = s->next;
    if (try_mark_full(s)) {
      s = next;
    }
  }
  s = new_span(size_class);
  if (s == nullptr) {
    return nullptr;
  }
  extend(s);
  return allocate(size_class);
}

void memory_heap::after_local_free(span* s) noexcept {
  if (s->state == span_state::full) {
    free_block* expected = span::notify_full();
    // Relaxed: taking the flag back publishes nothing. If the CAS fails, a remote free has
    // replaced the flag and is handing the span back through notified_:
    // the span must wait for that, or it would be listed twice.
    if (!s->thread_free.compare_exchange_strong(expected, nullptr, std::memory_order_relaxed,
                                                std::memory_order_relaxed)) {
      return;
    }
    make_available(s);
  }
  // Keep one empty span per class, so that a loop that allocates and frees
  // one block does not map and unmap a span each time; give back others.
  if (s->used == 0 && (available_[s->size_class] != s || s->next != nullptr)) {
    retire(s, true);
  }
}

segment* memory_heap::new_segment() noexcept {
  void* memory = os_map(segment_size, segment_size);
  if (memory == nullptr) {
    return nullptr;
  }
  auto* seg = new (memory) segment();
  seg->kind = region_kind::segment;
  seg->owner = this;
  seg->free_pages = all_span_pages;
  for (std::size_t i = 0; i < pages_per_segment; ++i) {
    seg->page_lead[i] = static_cast<std::uint8_t>(i);
  }
  return seg;
}

span* memory_heap::new_span(unsigned size_class) noexcept {
  const std::size_t block_size = class_block_size(size_class);
  const std::size_t pages = span_pages_for(block_size);
  segment* seg = segments_;
  std::size_t first = 0;
  for (; seg != nullptr; seg = seg->next) {
    if (static_cast<std::size_t>(std::popcount(seg->free_pages)) < pages) {
      continue;  // the common case for a full segment: one instruction
    }
    first = find_free_run(seg->free_pages, pages);
    if (first != 0) {
      break;
    }
  }
  if (seg == nullptr) {
    if (cached_ != nullptr) {
      // The newest: the most likely to be still in the TLB and the caches,
      // and the older ones are the next to expire.
      seg = unlink_cached(cached_);
    } else if (spare_ != nullptr) {
      seg = spare_;
      spare_ = nullptr;
    } else {
      seg = new_segment();
      if (seg == nullptr) {
        return nullptr;
      }
    }
    seg->prev = nullptr;
    seg->next = segments_;
    if (segments_ != nullptr) {
      segments_->prev = seg;
    }
    segments_ = seg;
    first = 1;
  }
  span& s = seg->spans[first];
  s.free = nullptr;
  s.used = 0;
  s.carved = 0;
  s.capacity = static_cast<std::uint32_t>(pages * segment_page_size / block_size);
  s.block_size = static_cast<std::uint32_t>(block_size);
  s.size_class = static_cast<std::uint16_t>(size_class);
  s.page_count = static_cast<std::uint8_t>(pages);
  s.start = reinterpret_cast<char*>(seg) + first * segment_page_size;
  s.thread_free.store(nullptr, std::memory_order_relaxed);
  for (std::size_t i = first; i < first + pages; ++i) {
    seg->page_lead[i] = static_cast<std::uint8_t>(first);
  }
  seg->free_pages &= ~page_run(first, pages);
  make_available(&s);
  // After taking a segment, not before: a heap that has not needed one for
  // longer than the delay reuses its newest rather than dropping them all
  // and mapping a fresh one.
  if (cached_oldest_ != nullptr) {
    purge_expired();
  }
  return &s;
}

bool memory_heap::retire(span* s, bool keep_segment) noexcept {
  if (s->state == span_state::available) {
    unlink(s);
  }
  segment* seg = segment_of(s);
  const auto first = static_cast<std::size_t>(s - seg->spans);
  const std::size_t pages = s->page_count;
  for (std::size_t i = first; i < first + pages; ++i) {
    reset_page(seg, i);
  }
  seg->free_pages |= page_run(first, pages);
  if (seg->free_pages != all_span_pages) {
    return false;
  }
  if (seg->prev != nullptr) {
    seg->prev->next = seg->next;
  } else {
    segments_ = seg->next;
  }
  if (seg->next != nullptr) {
    seg->next->prev = seg->prev;
  }
  seg->next = nullptr;
  seg->prev = nullptr;
  if (keep_segment) {
    cache(seg);
  } else {
    os_unmap(seg, segment_size);
  }
  return true;
}

void memory_heap::cache(segment* seg) noexcept {
  seg->emptied_at = coarse_now_ns();
  seg->prev = nullptr;
  seg->next = cached_;
  if (cached_ != nullptr) {
    cached_->prev = seg;
  } else {
    cached_oldest_ = seg;
  }
  cached_ = seg;
  // Past the process-wide bound, this heap gives back its oldest (the one
  // just cached, if it has no other): only the owner may touch a heap's
  // cache. Relaxed: a statistic and a bound, which racing heaps may pass by
  // a segment each for a moment.
  const std::size_t total = cached_bytes.fetch_add(segment_size, std::memory_order_relaxed);
  if (total + segment_size > max_cached_bytes.load(std::memory_order_relaxed)) {
    drop(unlink_cached(cached_oldest_));
  }
  purge_expired();
}

segment* memory_heap::unlink_cached(segment* seg) noexcept {
  (seg->prev != nullptr ? seg->prev->next : cached_) = seg->next;
  (seg->next != nullptr ? seg->next->prev : cached_oldest_) = seg->prev;
  seg->next = nullptr;
  seg->prev = nullptr;
  cached_bytes.fetch_sub(segment_size, std::memory_order_relaxed);
  return seg;
}

void memory_heap::purge_expired() noexcept {
  // No overflow: the clock is positive and the delay at most INT64_MAX.
  purge_cached(coarse_now_ns() - purge_delay_ns.load(std::memory_order_relaxed));
}

void memory_heap::purge_cached(std::int64_t cutoff) noexcept {
  while (cached_oldest_ != nullptr && cached_oldest_->emptied_at <= cutoff) {
    drop(unlink_cached(cached_oldest_));
  }
}

void memory_heap::drop(segment* seg) noexcept {
  if (spare_ == nullptr) {
    // Keep the address range, give back the memory.
    os_decommit(reinterpret_cast<char*>(seg) + segment_page_size, segment_size - segment_page_size);
    spare_ = seg;
  } else {
    os_unmap(seg, segment_size);
  }
}

template <class F>
void memory_heap::for_each_span(F f) noexcept {
  for (segment* seg = segments_; seg != nullptr;) {
    segment* next = seg->next;
    for (std::size_t i = 1; i < pages_per_segment;) {
      span& s = seg->spans[i];
      if (s.page_count == 0 || seg->page_lead[i] != i) {
        ++i;
        continue;
      }
      const std::size_t step = s.page_count;
      if (f(&s)) {
        break;  // the segment has gone
      }
      i += step;
    }
    seg = next;
  }
}

void memory_heap::release_unused() noexcept {
  drain_notified();
  for_each_span([this](span* s) {
    if (s->state != span_state::available) {
      return false;
    }
    collect(s);
    return s->used == 0 && retire(s, false);
  });
  return_free_memory();
}

void memory_heap::return_free_memory() noexcept {
  while (cached_ != nullptr) {
    os_unmap(unlink_cached(cached_), segment_size);
  }
  if (spare_ != nullptr) {
    os_unmap(spare_, segment_size);
    spare_ = nullptr;
  }
  // Free pages of live segments go back to the OS; their addresses stay.
  for (segment* seg = segments_; seg != nullptr; seg = seg->next) {
    for (std::size_t i = 1; i < pages_per_segment;) {
      if ((seg->free_pages >> i & 1) == 0) {
        ++i;
        continue;
      }
      std::size_t end = i;
      while (end < pages_per_segment && (seg->free_pages >> end & 1) != 0) {
        ++end;
      }
      os_decommit(reinterpret_cast<char*>(seg) + i * segment_page_size,
                  (end - i) * segment_page_size);
      i = end;
    }
  }
}

void memory_heap::on_abandon() noexcept {
  drain_notified();
  for_each_span([this](span* s) {
    if (s->state != span_state::available) {
      return false;  // full and flagged already
    }
    collect(s);
    // Flag every live span, so that any remote free hands it back through
    // notified_ and whoever holds the heap then can give memory back.
    while (s->used != 0) {
      if (try_mark_full(s)) {
        return false;
      }
    }
    return retire(s, false);
  });
  return_free_memory();
}

void memory_heap::after_fork_in_child() noexcept {
  drain_notified();
  for_each_span([this](span* s) {
    // Full but unflagged, and not on the stack just drained: the free that
    // replaced the flag ran on a thread the child does not have.
    if (s->state == span_state::full &&
        s->thread_free.load(std::memory_order_relaxed) != span::notify_full()) {
      make_available(s);
      collect(s);
    }
    return false;
  });
}

void memory_heap::on_adopt() noexcept {
  for_each_span([this](span* s) {
    free_block* expected = span::notify_full();
    // A failed CAS means a remote free replaced the flag: the span is on,
    // or about to be on, the notified stack, and comes back from there.
    if (s->state == span_state::full &&
        s->thread_free.compare_exchange_strong(expected, nullptr, std::memory_order_relaxed,
                                               std::memory_order_relaxed)) {
      make_available(s);
    }
    return false;
  });
  drain_notified();
}

bool memory_heap::collect_abandoned() noexcept {
  span* s = notified_.exchange(nullptr, std::memory_order_acquire);
  const bool any = s != nullptr;
  while (s != nullptr) {
    span* next = s->next_notified;
    // The span is full (off every list) with its sentinel replaced by the free
    // that pushed it. Take its blocks back; give it to the OS if none is in
    // use, else flag it again for the next free.
    collect(s);
    while (s->used != 0 && !try_mark_full(s)) {
    }
    if (s->used == 0) {
      retire(s, false);
    }
    s = next;
  }
  return any;
}

}  // namespace fjord::detail
