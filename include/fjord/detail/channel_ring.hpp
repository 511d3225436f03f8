#pragma once

#include <atomic>
#include <bit>
#include <cstddef>
#include <memory>
#include <new>
#include <optional>
#include <thread>
#include <utility>

#include "fjord/detail/config.hpp"

namespace fjord::detail {

// What a lock-free attempt on the ring found.
enum class ring_result : unsigned char {
  done,     // the value went in (came out)
  no_room,  // the gate was open and the ring looked full (empty)
  gated,    // the gate was closed: only the lock can serve this call
};

// The lock-free buffer of a bounded channel: Dmitry Vyukov's bounded MPMC
// queue ("Bounded MPMC queue", 1024cores.net, 2010), each slot carrying a
// stamp that says whose turn it is, with positions written as
// (lap, index) so that any capacity works, not only powers of two (the
// encoding crossbeam-channel's array flavor uses).
//
// What fjord adds is a gate: one bit (`gate_bit`) in both the head and the
// tail word. While it is clear, senders and receivers move values with one
// CAS each and never touch the channel's lock. The channel sets it (close())
// whenever its lock is taken and keeps it set while anyone waits or the
// channel is closed; a fast operation's CAS then fails, and the operation
// takes the lock. So under the lock nothing new enters or leaves the ring:
// only operations whose CAS landed before the gate closed finish their slot,
// and the locked_ functions wait for them. That is what lets the waiter
// protocol of docs/channels.md run unchanged, as if the buffer were a plain
// FIFO under the lock. The protocol is in docs/channels.md.
class ring_gate {
 public:
  explicit ring_gate(std::size_t capacity) noexcept
      : capacity_(capacity), gate_bit_(std::bit_ceil(capacity + 1)), one_lap_(gate_bit_ * 2) {}

  // Under the channel's lock. Relaxed RMWs: the bit only has to be in the
  // words' modification order before the locked_ functions load them (by
  // coherence, those loads, program-ordered after, see this RMW's value or
  // a later one); values themselves are published by the slot stamps.
  void close() noexcept {
    tail_.fetch_or(gate_bit_, std::memory_order_relaxed);
    head_.fetch_or(gate_bit_, std::memory_order_relaxed);
  }
  void open() noexcept {
    tail_.fetch_and(~gate_bit_, std::memory_order_relaxed);
    head_.fetch_and(~gate_bit_, std::memory_order_relaxed);
  }

  // Under the lock, gate closed: values in the ring (in-flight operations
  // included).
  std::size_t locked_size() const noexcept {
    const std::size_t head = head_.load(std::memory_order_relaxed) & ~gate_bit_;
    const std::size_t tail = tail_.load(std::memory_order_relaxed) & ~gate_bit_;
    const std::size_t head_index = head & (gate_bit_ - 1);
    const std::size_t tail_index = tail & (gate_bit_ - 1);
    if (head_index < tail_index) {
      return tail_index - head_index;
    }
    if (head_index > tail_index) {
      return capacity_ - head_index + tail_index;
    }
    return head == tail ? 0 : capacity_;
  }
  std::size_t capacity() const noexcept { return capacity_; }

 protected:
  // 2^0 + ... + 2^6 = 127 pauses between tries, then the lock.
  static constexpr int spin_steps = 7;

  std::size_t next(std::size_t position) const noexcept {
    const std::size_t index = position & (gate_bit_ - 1);
    return index + 1 < capacity_ ? position + 1 : (position & ~(one_lap_ - 1)) + one_lap_;
  }
  std::size_t index(std::size_t position) const noexcept { return position & (gate_bit_ - 1); }

  // Retries `attempt` (a try_push or try_pop) with exponential pauses
  // between tries, while `word` (tail or head) shows the gate open.
  template <class Attempt>
  bool retry_spinning(const std::atomic<std::size_t>& word, Attempt attempt) const noexcept {
    for (int step = 0; step < spin_steps; ++step) {
      for (int i = 0; i < (1 << step); ++i) {
        cpu_relax();
      }
      if ((word.load(std::memory_order_relaxed) & gate_bit_) != 0) {
        return false;
      }
      if (attempt() == ring_result::done) {
        return true;
      }
    }
    return false;
  }

  // Spins while an operation that won its CAS before the gate closed
  // finishes its slot (a handful of instructions, unless its thread was
  // preempted: then yield).
  static void wait_a_little(int& round) noexcept {
    if (++round < 64) {
      cpu_relax();
    } else {
      std::this_thread::yield();
    }
  }

  const std::size_t capacity_;
  const std::size_t gate_bit_;  // above every index; also the gate
  const std::size_t one_lap_;   // a lap is the bit above the gate
  void* slots_ = nullptr;       // channel_ring's; here to share the read-only line
  // Apart, so that senders and receivers do not share a line, and neither
  // shares one with what both only read.
  alignas(false_sharing_range) std::atomic<std::size_t> head_{0};
  alignas(false_sharing_range) std::atomic<std::size_t> tail_{0};
};

template <class T>
class channel_ring final : public ring_gate {
 public:
  explicit channel_ring(std::size_t capacity) : ring_gate(capacity) {
    slot* all = std::allocator<slot>().allocate(capacity);
    for (std::size_t i = 0; i < capacity; ++i) {
      std::construct_at(&all[i].stamp, i);  // slot i is free for lap 0's position i
    }
    slots_ = all;
  }
  channel_ring(const channel_ring&) = delete;
  channel_ring& operator=(const channel_ring&) = delete;
  ~channel_ring() {
    // Nothing runs concurrently any more.
    std::size_t head = head_.load(std::memory_order_relaxed) & ~gate_bit_;
    for (std::size_t n = locked_size(); n != 0; --n) {
      std::destroy_at(at(head).value());
      head = next(head);
    }
    std::allocator<slot>().deallocate(static_cast<slot*>(slots_), capacity_);
  }

  // A slot holds position p's value when its stamp is p + 1, and is free
  // for position p when its stamp is p.
  //
  // Orderings: the CAS on tail (head) only has to pick one owner for a
  // position: relaxed. The value travels through the stamp: the sender's
  // release store of p + 1 after constructing it, the receiver's acquire
  // load before moving it out; and back: the receiver's release store of
  // p + one_lap after destroying it, the next lap's sender's acquire load.

  // Lock-free send: done if v went in (moved from); no_room when the gate
  // was open and the ring looked full (a receive still moving its value out
  // counts as not done yet, so "full" is a linearizable answer); gated when
  // the gate was closed.
  FJORD_ALWAYS_INLINE ring_result try_push(T& v) noexcept {
    std::size_t tail = tail_.load(std::memory_order_relaxed);
    int round = 0;
    while ((tail & gate_bit_) == 0) {
      slot& s = at(tail);
      const std::size_t stamp = s.stamp.load(std::memory_order_acquire);
      if (stamp == tail) {
        if (tail_.compare_exchange_weak(tail, next(tail), std::memory_order_relaxed,
                                        std::memory_order_relaxed)) {
          ::new (static_cast<void*>(s.storage)) T(std::move(v));
          s.stamp.store(tail + 1, std::memory_order_release);
          return ring_result::done;
        }
      } else if (stamp + one_lap_ == tail + 1) {
        return ring_result::no_room;  // last lap's value is still there
      } else {
        // Another sender moved tail on: look again.
        wait_a_little(round);
        tail = tail_.load(std::memory_order_relaxed);
      }
    }
    return ring_result::gated;
  }

  // Lock-free receive: done with the oldest value in out; no_room when the
  // gate was open and the ring looked empty (a send still constructing its
  // value counts as not done yet); gated when the gate was closed.
  FJORD_ALWAYS_INLINE ring_result try_pop(std::optional<T>& out) noexcept {
    std::size_t head = head_.load(std::memory_order_relaxed);
    int round = 0;
    while ((head & gate_bit_) == 0) {
      slot& s = at(head);
      const std::size_t stamp = s.stamp.load(std::memory_order_acquire);
      if (stamp == head + 1) {
        if (head_.compare_exchange_weak(head, next(head), std::memory_order_relaxed,
                                        std::memory_order_relaxed)) {
          take(s, head, out);
          return ring_result::done;
        }
      } else if (stamp == head) {
        return ring_result::no_room;  // not written this lap
      } else {
        // Another receiver moved head on: look again.
        wait_a_little(round);
        head = head_.load(std::memory_order_relaxed);
      }
    }
    return ring_result::gated;
  }

  // The same, retried for a moment (about a microsecond) while the ring is
  // full (empty) but the gate open: a receiver (sender) running on another
  // core is about to make room (a value), and waiting for it is far cheaper
  // than parking and being woken. Gives up at once when the gate closes
  // (someone waits: only the lock can serve this call).
  FJORD_NOINLINE bool push_after_spinning(T& v) noexcept {
    return retry_spinning(tail_, [&] { return try_push(v); });
  }
  FJORD_NOINLINE bool pop_after_spinning(std::optional<T>& out) noexcept {
    return retry_spinning(head_, [&] { return try_pop(out); });
  }

  // Under the lock, gate closed: the same, with no competitor but the
  // operations already in flight, so full and empty are exact.
  FJORD_NOINLINE bool locked_push(T& v) noexcept {
    if (locked_size() == capacity_) {
      return false;
    }
    const std::size_t tail = tail_.load(std::memory_order_relaxed) & ~gate_bit_;
    slot& s = at(tail);
    for (int round = 0; s.stamp.load(std::memory_order_acquire) != tail;) {
      wait_a_little(round);  // last lap's receiver is still moving its value out
    }
    ::new (static_cast<void*>(s.storage)) T(std::move(v));
    s.stamp.store(tail + 1, std::memory_order_release);
    tail_.store(next(tail) | gate_bit_, std::memory_order_relaxed);
    return true;
  }
  FJORD_NOINLINE bool locked_pop(std::optional<T>& out) noexcept {
    if (locked_size() == 0) {
      return false;
    }
    const std::size_t head = head_.load(std::memory_order_relaxed) & ~gate_bit_;
    slot& s = at(head);
    for (int round = 0; s.stamp.load(std::memory_order_acquire) != head + 1;) {
      wait_a_little(round);  // its sender is still constructing it
    }
    take(s, head, out);
    head_.store(next(head) | gate_bit_, std::memory_order_relaxed);
    return true;
  }

 private:
  struct slot {
    std::atomic<std::size_t> stamp;
    alignas(T) unsigned char storage[sizeof(T)];
    T* value() noexcept { return std::launder(reinterpret_cast<T*>(storage)); }
  };

  slot& at(std::size_t position) const noexcept {
    return static_cast<slot*>(slots_)[index(position)];
  }

  void take(slot& s, std::size_t position, std::optional<T>& out) noexcept {
    out.emplace(std::move(*s.value()));
    std::destroy_at(s.value());
    s.stamp.store(position + one_lap_, std::memory_order_release);
  }
};

}  // namespace fjord::detail
