#pragma once

#include <atomic>
#include <cstddef>
#include <mutex>
#include <optional>
#include <utility>

#include "fjord/channel_status.hpp"
#include "fjord/detail/channel_waiter.hpp"
#include "fjord/detail/frame_allocator.hpp"
#include "fjord/detail/value_ring.hpp"

namespace fjord::detail {

// The shared state behind every channel<T> handle: Go's hchan. One mutex
// guards the buffer and both waiter queues; values are handed straight from
// a waiting sender to a waiting receiver (never through the buffer), which
// keeps FIFO order and makes capacity 0 a true rendezvous. Invariants, under
// the lock: receivers wait only while the buffer is empty; senders wait only
// while it is full (always, at capacity 0); a closed channel has no senders
// waiting.
template <class T>
struct channel_state : channel_base {
  explicit channel_state(std::size_t limit) noexcept : capacity(limit) {}

  // From the per-thread caches coroutine frames use: a process that makes a
  // channel per call (a tree of processes reporting to their parents)
  // should not pay malloc twice per node.
  static void* operator new(std::size_t size) { return frame_allocator::allocate(size); }
  static void operator delete(void* p, std::size_t size) noexcept {
    frame_allocator::deallocate(p, size);
  }

  // Under the lock. Sends v now if it can: to a waiting receiver (set in
  // *to_wake, to be woken once the lock is released), else into the buffer.
  // v is moved from only when it returns ok.
  channel_status try_send_locked(T& v, channel_waiter*& to_wake) {
    if (closed) {
      return channel_status::closed;
    }
    if (channel_waiter* w = receivers.claim_first()) {
      static_cast<std::optional<T>*>(w->slot)->emplace(std::move(v));
      to_wake = w;
      return channel_status::ok;
    }
    if (buffer.size() < capacity) {
      buffer.push_back(std::move(v));  // may throw bad_alloc, before moving v
      return channel_status::ok;
    }
    return channel_status::full;
  }

  // Under the lock. Receives into `out` now if it can: from the buffer (then
  // the first waiting sender, if any, moves its value into the room made),
  // else straight from a waiting sender (capacity 0). Never throws.
  channel_status try_receive_locked(std::optional<T>& out, channel_waiter*& to_wake) noexcept {
    if (!buffer.empty()) {
      out.emplace(buffer.pop_front());
      if (channel_waiter* w = senders.claim_first()) {
        buffer.push_back(std::move(*static_cast<T*>(w->slot)));  // the room just made: no growth
        to_wake = w;
      }
      return channel_status::ok;
    }
    if (channel_waiter* w = senders.claim_first()) {
      out.emplace(std::move(*static_cast<T*>(w->slot)));
      to_wake = w;
      return channel_status::ok;
    }
    return closed ? channel_status::closed : channel_status::empty;
  }

  // close(): false if it was closed already. Every waiter completes: the
  // receivers with nothing (the buffer is empty while they wait), the
  // senders with channel_status::closed.
  bool close() noexcept {
    channel_waiter* woken = nullptr;
    {
      std::lock_guard guard(lock);
      if (closed) {
        return false;
      }
      closed = true;
      woken = receivers.claim_all();
      channel_waiter** tail = &woken;
      while (*tail != nullptr) {
        tail = &(*tail)->next;
      }
      *tail = senders.claim_all();
      for (channel_waiter* w = woken; w != nullptr; w = w->next) {
        w->closed = true;
      }
    }
    while (woken != nullptr) {
      channel_waiter* next = woken->next;
      woken->parker->wake();  // the waiter may be gone after this
      woken = next;
    }
    return true;
  }

  // The first half of a send that may wait: try it, and if it cannot be
  // done now queue `w`. Returns full when w was queued (the caller then
  // waits on w's parker). T's move is required nothrow, so only the
  // buffer's growth can throw.
  channel_status send_or_queue(T& v, channel_waiter& w) {
    channel_waiter* to_wake = nullptr;
    channel_status s;
    {
      std::lock_guard guard(lock);
      s = try_send_locked(v, to_wake);
      if (s == channel_status::full) {
        w.slot = &v;
        senders.push_back(w);
        return s;
      }
    }
    if (to_wake != nullptr) {
      to_wake->parker->wake();
    }
    return s;
  }

  // The receive counterpart: returns empty when w was queued.
  channel_status receive_or_queue(std::optional<T>& out, channel_waiter& w) noexcept {
    channel_waiter* to_wake = nullptr;
    channel_status s;
    {
      std::lock_guard guard(lock);
      s = try_receive_locked(out, to_wake);
      if (s == channel_status::empty) {
        w.slot = &out;
        receivers.push_back(w);
        return s;
      }
    }
    if (to_wake != nullptr) {
      to_wake->parker->wake();
    }
    return s;
  }

  std::atomic<std::size_t> handles{1};
  const std::size_t capacity;
  value_ring<T> buffer;
};

}  // namespace fjord::detail
