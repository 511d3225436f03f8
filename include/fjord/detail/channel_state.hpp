#pragma once

#include <atomic>
#include <coroutine>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <optional>
#include <utility>

#include "fjord/channel_status.hpp"
#include "fjord/detail/assert.hpp"
#include "fjord/detail/channel_ring.hpp"
#include "fjord/detail/channel_waiter.hpp"
#include "fjord/detail/config.hpp"
#include "fjord/detail/frame_allocator.hpp"
#include "fjord/detail/value_ring.hpp"

namespace fjord::detail {

// The shared state behind every channel<T> handle: Go's hchan. One mutex
// guards the buffer and both waiter queues; values are handed straight from
// a waiting sender to a waiting receiver (never through the buffer), which
// keeps FIFO order and makes capacity 0 a true rendezvous. Invariants, under
// the lock: receivers wait only while the buffer is empty; senders wait only
// while it is full (always, at capacity 0); once closed, nobody waits in
// the queues (close() takes every waiter out under the lock that sets it).
//
// A bounded channel whose buffer is small enough to allocate up front
// (ring_bytes) keeps it in a lock-free ring instead: sends and receives that
// neither wait nor meet a waiter then take no lock at all (see
// channel_ring.hpp for the gate that keeps the invariants above).
template <class T>
struct channel_state : channel_base {
  // Larger buffers grow on demand under the lock, so a huge capacity costs
  // only what is buffered. Small ones stay under the lock too: a channel of
  // a few slots is most often a result slot made per process (csp_sum's
  // halves), used twice and rarely contended, and the ring's padding (about
  // 400 bytes) and two more allocations would cost it more than they save.
  static constexpr std::size_t ring_bytes = std::size_t{64} * 1024;
  static constexpr std::size_t ring_min_capacity = 16;
  // Plain waits close() claims itself per queue (one resume chain's worth);
  // a closing_walk completes the rest.
  static constexpr std::size_t close_chunk = 256;

  explicit channel_state(std::size_t limit) : capacity(limit) {
    if (limit >= ring_min_capacity && limit <= ring_bytes / (sizeof(T) + sizeof(std::size_t))) {
      ring_ = new channel_ring<T>(limit);
      gate = ring_;
    }
  }
  channel_state(const channel_state&) = delete;
  channel_state& operator=(const channel_state&) = delete;
  ~channel_state() { delete ring_; }

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
    if (ring_ != nullptr) {
      return ring_->locked_push(v) ? channel_status::ok : channel_status::full;
    }
    if (buffer_.size() < capacity) {
      buffer_.push_back(std::move(v));  // may throw bad_alloc, before moving v
      return channel_status::ok;
    }
    return channel_status::full;
  }

  // Under the lock. Receives into `out` now if it can: from the buffer (then
  // the first waiting sender, if any, moves its value into the room made),
  // else straight from a waiting sender (capacity 0). Never throws.
  channel_status try_receive_locked(std::optional<T>& out, channel_waiter*& to_wake) noexcept {
    if (ring_ != nullptr ? ring_->locked_pop(out) : take_buffered(out)) {
      if (channel_waiter* w = senders.claim_first()) {
        T& v = *static_cast<T*>(w->slot);
        if (ring_ != nullptr) {
          const bool pushed = ring_->locked_push(v);  // the room just made
          FJORD_ASSERT(pushed, "channel: no room in the ring right after a receive");
          static_cast<void>(pushed);
        } else {
          buffer_.push_back(std::move(v));  // the room just made: no growth
        }
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
  // senders with channel_status::closed. Under the lock it claims the first
  // close_chunk waiters of each queue, woken once the lock is released (the
  // coroutines of a pool in chains, see wake_list), and takes the rest out
  // of the queues at once: those are plain waits (see below), which nothing
  // but this close() can complete, so a closing_walk completes them off the
  // lock, on the workers of their pool (the closing thread pays nothing for
  // ten million waiters, and a woken coroutine that comes back to the
  // channel finds it closed and free). A select's waiter could also be won
  // through its other cases, its timer or its stop token, and nothing may
  // win such a select once this channel is seen closed (Go's closechan
  // completes every waiter at once): a queue with a select in it (even one
  // already won elsewhere and not yet taken out) is claimed whole under the
  // lock, however long. Nothing here touches the channel once the lock is
  // released: a woken waiter may drop every other handle.
  bool close() noexcept {
    channel_waiter* rest = nullptr;
    {
      wake_list woken;  // declared first: wakes after the lock is released
      const auto wake_later = [&woken](channel_waiter& w) { woken.add(&w); };
      std::lock_guard guard(*this);
      if (closed) {
        return false;
      }
      closed = true;
      // Receivers first, as Go's closechan: a select that both sends and
      // receives here completes by its receive (closed), not by a failed send.
      bool more = false;
      for (channel_waiter_queue* q : {&receivers, &senders}) {
        const std::size_t limit = q->has_selects() ? SIZE_MAX : close_chunk;
        more = q->claim_closing(wake_later, limit) || more;
      }
      if (more) {  // plain waits only (a queue with a select is empty now)
        channel_waiter* last_receiver = nullptr;
        channel_waiter* last_sender = nullptr;
        rest = receivers.take_all(last_receiver);
        channel_waiter* const senders_left = senders.take_all(last_sender);
        (rest == nullptr ? rest : last_receiver->next) = senders_left;
      }
    }
    if (rest != nullptr) {
      closing_walk::start(rest);  // touches no channel: this one may be gone
    }
    return true;
  }

  // The first half of a send that may wait: try it, and if it cannot be
  // done now queue `w` (a null w: try_send, which never queues). Returns
  // full when it could not send; with a w, the caller then waits on w's
  // parker. Once queued, the operation never touches the
  // channel again (its waker hands everything over), so it needs no
  // reference of its own. T's move is required nothrow, so only the
  // buffer's growth can throw.
  FJORD_ALWAYS_INLINE channel_status send_or_queue(T& v, channel_waiter* w) {
    const ring_result r = send_fast(v, w != nullptr);
    if (r == ring_result::done) {
      return channel_status::ok;
    }
    // no_room with the gate open: no receiver waits, so a try_send (no w)
    // is answered without the lock (taking it would close the gate on
    // everyone).
    if (r == ring_result::no_room && w == nullptr) {
      return channel_status::full;
    }
    return send_or_queue_locked(v, w);
  }
  // The lock-free path alone (spinning a moment if the ring is full): true
  // if v went into the ring (moved from).
  FJORD_ALWAYS_INLINE bool try_send_fast(T& v) noexcept {
    return send_fast(v, true) == ring_result::done;
  }
  // A coroutine's plain send passes its handle (h): its single-claimant
  // wait begins under the lock just before it is queued, so that an
  // operation that completes at once pays nothing for it.
  channel_status send_or_queue_locked(T& v, channel_waiter* w, std::coroutine_handle<> h = {}) {
    wake_list woken;
    std::lock_guard guard(*this);
    channel_waiter* to_wake = nullptr;
    const channel_status s = try_send_locked(v, to_wake);
    woken.add(to_wake);
    if (s == channel_status::full && w != nullptr) {
      queue_locked(senders, *w, &v, h);
    }
    return s;
  }

  // The receive counterpart: returns empty when w was queued.
  FJORD_ALWAYS_INLINE channel_status receive_or_queue(std::optional<T>& out,
                                                      channel_waiter* w) noexcept {
    const ring_result r = receive_fast(out, w != nullptr);
    if (r == ring_result::done) {
      return channel_status::ok;
    }
    if (r == ring_result::no_room && w == nullptr) {
      return channel_status::empty;  // the gate was open: no sender waits, not closed
    }
    return receive_or_queue_locked(out, w);
  }
  FJORD_ALWAYS_INLINE bool try_receive_fast(std::optional<T>& out) noexcept {
    return receive_fast(out, true) == ring_result::done;
  }
  channel_status receive_or_queue_locked(std::optional<T>& out, channel_waiter* w,
                                         std::coroutine_handle<> h = {}) noexcept {
    wake_list woken;
    std::lock_guard guard(*this);
    channel_waiter* to_wake = nullptr;
    const channel_status s = try_receive_locked(out, to_wake);
    woken.add(to_wake);
    if (s == channel_status::empty && w != nullptr) {
      queue_locked(receivers, *w, &out, h);
    }
    return s;
  }

  // The ring's lock-free attempt (gated: no ring, or only the lock can
  // serve the call), spinning a moment on no_room when the caller would
  // otherwise wait.
  FJORD_ALWAYS_INLINE ring_result send_fast(T& v, bool would_wait) noexcept {
    if (ring_ == nullptr) {
      return ring_result::gated;
    }
    const ring_result r = ring_->try_push(v);
    if (r == ring_result::no_room && would_wait && worth_spinning() &&
        ring_->push_after_spinning(v)) {
      return ring_result::done;
    }
    return r;
  }
  FJORD_ALWAYS_INLINE ring_result receive_fast(std::optional<T>& out, bool would_wait) noexcept {
    if (ring_ == nullptr) {
      return ring_result::gated;
    }
    const ring_result r = ring_->try_pop(out);
    if (r == ring_result::no_room && would_wait && worth_spinning() &&
        ring_->pop_after_spinning(out)) {
      return ring_result::done;
    }
    return r;
  }

  // Spinning for the other side pays only when this thread has nothing else
  // to do and the other side can run meanwhile: a plain thread, or a worker
  // of a pool of several whose own deque is empty. A worker with queued jobs
  // (a process that has just started the children it now waits for) does
  // better to suspend and run them; on a one-worker pool the other side
  // cannot run while we spin (and pausing in a loop is costly on virtual
  // machines, which may deschedule a vCPU that spins).
  static bool worth_spinning() noexcept {
    const worker* w = current_worker;
    return w == nullptr || (w->pool->size() > 1 && !w->deque.maybe_nonempty() &&
                            w->runnext.load(std::memory_order_relaxed) == nullptr);
  }

  // A handle's reference. Relaxed: taken from an existing reference (the
  // shared_ptr argument).
  void retain() noexcept { handles.fetch_add(1, std::memory_order_relaxed); }
  // Drops one; the last one destroys the channel. acq_rel: every use
  // through other references happens before the delete. A count of 1 read
  // first is ours alone: no other handle exists to copy from, so it cannot
  // rise, and the read (acquire, after the others' release decrements)
  // saves the last handle its read-modify-write (a process's result
  // channel usually dies in its maker, after the children dropped theirs).
  static void release(channel_state* s) noexcept {
    if (s == nullptr) {
      return;
    }
    if (s->handles.load(std::memory_order_acquire) == 1 ||
        s->handles.fetch_sub(1, std::memory_order_acq_rel) == 1) {
      delete s;
    }
  }

  // Under the lock: values buffered.
  std::size_t buffered() const noexcept {
    return ring_ != nullptr ? ring_->locked_size() : buffer_.size();
  }

  std::atomic<std::size_t> handles{1};
  const std::size_t capacity;

 private:
  bool take_buffered(std::optional<T>& out) noexcept {
    if (buffer_.empty()) {
      return false;
    }
    out.emplace(buffer_.pop_front());
    return true;
  }

  value_ring<T> buffer_;  // without a ring
  channel_ring<T>* ring_ = nullptr;

  static void queue_locked(channel_waiter_queue& q, channel_waiter& w, void* slot,
                           std::coroutine_handle<> h) noexcept {
    if (h) {
      w.parker->begin_single_wait(h);
    }
    w.slot = slot;
    q.push_back(w);
  }
};

}  // namespace fjord::detail
