#pragma once

#include <atomic>
#include <coroutine>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <new>
#include <type_traits>

#include "fjord/detail/assert.hpp"
#include "fjord/detail/channel_ring.hpp"
#include "fjord/detail/chrono.hpp"
#include "fjord/detail/futex_mutex.hpp"
#include "fjord/detail/parker.hpp"
#include "fjord/detail/resume_job.hpp"

namespace fjord::detail {

// Who waits for a channel operation or a select: one coroutine or one
// thread (Go's g, with its selectDone flag). Several waiters (one per case of
// a select, each queued on its own channel) share one parker, and exactly one
// of the parties that could complete the wait (a channel operation on another
// thread, close(), the select's timer, its stop callback) claims it. The
// protocol is in docs/channels.md.
class channel_parker {
 public:
  static constexpr int unclaimed = -1;

  // single: the wait has one waiter on one channel and nothing else that
  // could end it (a plain send or receive), so it is only ever claimed
  // under that channel's lock, by the one call that also takes the waiter
  // out of its queue. Such a wait needs neither the claim's CAS nor, for a
  // coroutine, the phase exchange (see begin_single_wait()).
  enum class claimants : bool { several, single };

  channel_parker(bool on_thread, claimants who) noexcept
      : on_thread_(on_thread), single_(who == claimants::single) {}
  channel_parker(const channel_parker&) = delete;
  channel_parker& operator=(const channel_parker&) = delete;

  // Decides which case completes the wait; true for the one caller that gets
  // it. Relaxed: the CAS only has to be atomic (one location, one winner);
  // what the winner writes before wake() is published by wake() itself.
  // With a single claimant there is no race to decide: the channel's lock
  // orders it after the queuing, and the waiter leaves the queue with the
  // claim, so a plain store does (one locked instruction less per wake).
  bool claim(int index) noexcept {
    if (single_) {
      FJORD_ASSERT(selected_.load(std::memory_order_relaxed) == unclaimed,
                   "channel_parker: a single-claimant wait claimed twice");
      selected_.store(index, std::memory_order_relaxed);
      return true;
    }
    int expected = unclaimed;
    return selected_.compare_exchange_strong(expected, index, std::memory_order_relaxed,
                                             std::memory_order_relaxed);
  }

  // The case that won (after the wait ended; unclaimed before).
  int selected() const noexcept { return selected_.load(std::memory_order_relaxed); }

  // A coroutine about to suspend: records where it resumes. Any time before
  // finish_suspend(): a wake() that comes first only marks the parker.
  void prepare(std::coroutine_handle<> h) noexcept { coroutine_.begin_wait(h); }

  // A single-claimant coroutine wait, under the channel's lock just before
  // its waiter is queued: records where it resumes. Once the lock is
  // released, the claimer may resume the coroutine at once, on any thread;
  // so await_suspend must then return true without touching the frame (or
  // the channel, which the resumed coroutine may destroy) again. No phase
  // word is needed to decide who resumes: only the claimer can, and only
  // after the queuing. Writes are ordered by the lock (the frame's state
  // before the claim) and by the resumption job's publication (the value
  // handed over, before the coroutine runs again).
  void begin_single_wait(std::coroutine_handle<> h) noexcept {
    FJORD_ASSERT(single_ && !on_thread_, "channel_parker: not a single coroutine wait");
    trace_point(trace_kind::channel_block, 0, trace_address(this));
    coroutine_.begin_wait(h);
  }

  // The coroutine's last step in await_suspend, after every waiter is queued
  // and every lock released: true to suspend, false when the winner already
  // called wake() (then the coroutine goes on at once). Whoever of the two
  // comes second resumes it, so it is resumed exactly once, and never before
  // await_suspend stops touching the frame. acq_rel: the winner's writes
  // (the value it handed over) are visible when we go on, and the frame's
  // state (queued waiters) is visible to the winner that resumes us.
  bool finish_suspend() noexcept {
    // Recorded first: once suspended, the frame may be resumed and gone.
    trace_point(trace_kind::channel_block, 0, trace_address(this));
    if (phase_.exchange(suspended, std::memory_order_acq_rel) == woken) {
      coroutine_.undo_begin_wait();
      return false;
    }
    return true;
  }

  // The claimer's last touch of the parker and of everything in the waiting
  // frame or stack: a thread is unparked, a suspended coroutine is sent back
  // to its pool (or sync_wait thread).
  void wake() noexcept {
    trace_point(trace_kind::channel_unblock, 0, trace_address(this));
    if (on_thread_) {
      thread_.unpark();  // release: pairs with park()'s acquire
      return;
    }
    if (single_) {
      coroutine_.wake();  // suspended since before it was queued
      return;
    }
    if (phase_.exchange(woken, std::memory_order_acq_rel) == suspended) {
      coroutine_.wake();
    }
  }

  // Instead of wake(), after the channel's lock is released: a single
  // coroutine wait of a pool the calling thread does not work for joins
  // `batch` (see resume_batch). False: not taken (a thread, a select, a
  // coroutine with no pool or of ours); wake() it.
  bool join(resume_batch& batch) noexcept {
    if (!single_ || on_thread_ || !coroutine_.join(batch)) {
      return false;
    }
    trace_point(trace_kind::channel_unblock, 0, trace_address(this));
    return true;
  }

  // Instead of wake(), on a worker of home that resumes the coroutine there
  // itself (closing_walk, through resume_chain): the resumption job of a
  // plain coroutine wait of home, traced as woken. nullptr for anything
  // else: wake() it.
  job* take_resumption(const pool_core& home) noexcept {
    if (!single_ || on_thread_ || coroutine_.home != &home) {
      return nullptr;
    }
    trace_point(trace_kind::channel_unblock, 0, trace_address(this));
    home.note_wake(&coroutine_);
    return &coroutine_;
  }

  // The pool a plain coroutine wait resumes on; nullptr for a thread, a
  // select, or a coroutine of no pool. Fixed while the wait is queued and
  // unclaimed.
  pool_core* home_pool() const noexcept {
    return on_thread_ || !single_ ? nullptr : coroutine_.home;
  }

  // A thread: blocks until wake().
  void park() noexcept {
    trace_point(trace_kind::channel_block, 1, trace_address(this));
    thread_.park();
  }
  // A thread: blocks until wake() or the timeout; false on timeout.
  bool park_for(std::chrono::nanoseconds timeout) noexcept {
    trace_point(trace_kind::channel_block, 1, trace_address(this));
    return thread_.park_for(timeout);
  }

 private:
  static constexpr std::uint8_t running = 0;
  static constexpr std::uint8_t suspended = 1;
  static constexpr std::uint8_t woken = 2;

  std::atomic<int> selected_{unclaimed};
  std::atomic<std::uint8_t> phase_{running};
  bool on_thread_;
  bool single_;
  waiting_coroutine coroutine_;
  parker thread_;
};

// One pending operation on one channel (Go's sudog): queued in the
// channel's list of senders or of receivers, under the channel's lock.
struct channel_waiter {
  channel_waiter* prev = nullptr;
  channel_waiter* next = nullptr;
  channel_parker* parker = nullptr;
  // A sender's: the T to move from. A receiver's: the std::optional<T> to
  // put the value in.
  void* slot = nullptr;
  int index = 0;        // which case of its select (0 for a plain operation)
  bool queued = false;  // in a channel's list (guarded by that channel's lock)
  bool closed = false;  // completed by close() rather than by a value
  // A select's case: its parker may also be claimed by another case, the
  // select's timer or its stop callback.
  bool of_select = false;
};

// What a coroutine's plain send or receive needs only if it has to wait:
// its parker and its one waiter.
struct channel_wait {
  channel_wait() noexcept { waiter.parker = &parker; }
  channel_wait(const channel_wait&) = delete;
  channel_wait& operator=(const channel_wait&) = delete;

  channel_parker parker{false, channel_parker::claimants::single};
  channel_waiter waiter;
};

// A channel_wait built only when the operation has to wait (most sends and
// receives on a buffered channel do not): an awaiter that completes at once
// then costs no stores for it. Trivially destructible, so never destroyed.
class lazy_channel_wait {
 public:
  lazy_channel_wait() noexcept {}  // NOLINT(modernize-use-equals-default): leaves storage_ raw
  lazy_channel_wait(const lazy_channel_wait&) = delete;
  lazy_channel_wait& operator=(const lazy_channel_wait&) = delete;

  channel_wait& start() noexcept { return *::new (static_cast<void*>(storage_)) channel_wait(); }
  // After start().
  const channel_wait& get() const noexcept {
    return *std::launder(reinterpret_cast<const channel_wait*>(storage_));
  }

 private:
  static_assert(std::is_trivially_destructible_v<channel_parker> &&
                std::is_trivially_destructible_v<channel_waiter>);
  alignas(channel_wait) unsigned char storage_[sizeof(channel_wait)];
};

// The senders or receivers waiting on one channel, in arrival order. Doubly
// linked: a select that ends takes its other waiters out in O(1).
class channel_waiter_queue {
 public:
  bool empty() const noexcept { return head_ == nullptr; }
  // Whether a select waits here: its waiter may be claimed by another of
  // its cases, its timer or its stop callback, not only through this queue.
  bool has_selects() const noexcept { return selects_ != 0; }
  // The waiter queued last (nullptr: none), to tell when a wait has queued.
  const channel_waiter* back() const noexcept { return tail_; }

  void push_back(channel_waiter& w) noexcept {
    selects_ += w.of_select ? 1 : 0;
    w.next = nullptr;
    w.prev = tail_;
    if (tail_ == nullptr) {
      head_ = &w;
    } else {
      tail_->next = &w;
    }
    tail_ = &w;
    w.queued = true;
  }

  void remove(channel_waiter& w) noexcept {
    if (!w.queued) {
      return;
    }
    (w.prev == nullptr ? head_ : w.prev->next) = w.next;
    (w.next == nullptr ? tail_ : w.next->prev) = w.prev;
    w.queued = false;
    selects_ -= w.of_select ? 1 : 0;
  }

  // The first waiter whose parker this call claims, taken out of the queue;
  // waiters of selects already won elsewhere are dropped on the way (their
  // owners would take them out anyway). nullptr when none is left.
  channel_waiter* claim_first() noexcept {
    while (channel_waiter* w = head_) {
      remove(*w);
      if (w->parker->claim(w->index)) {
        return w;
      }
    }
    return nullptr;
  }

  // close(): takes up to `limit` waiters out, in queue order (see
  // claim_closed()). True if waiters are left.
  template <class F>
  bool claim_closing(F on_claimed, std::size_t limit) noexcept {
    channel_waiter* const w = claim_closed(head_, limit, on_claimed, selects_);
    head_ = w;
    (w == nullptr ? tail_ : w->prev) = nullptr;
    return w != nullptr;
  }

  // close(), once no select waits here: takes every waiter out at once,
  // still linked through `next`, for claim_closed() to complete off the
  // lock. Returns the first (nullptr if none) and sets `last`.
  channel_waiter* take_all(channel_waiter*& last) noexcept {
    FJORD_ASSERT(selects_ == 0, "channel_waiter_queue: take_all with a select waiting");
    channel_waiter* const first = head_;
    last = tail_;
    head_ = tail_ = nullptr;
    return first;
  }

  // The waiters from w on, up to `limit` of them, taken out of their queue
  // by close(): the ones this call claims are marked closed and passed to
  // on_claimed (which may take over their `next` link: it is read before).
  // The waiters of selects won elsewhere are only marked out of the queue,
  // for their owners; `selects` drops by the selects passed. Returns the
  // first waiter not reached. Each waiter is touched here once: a close()
  // that ends ten million waits pays one cache miss for each here, and
  // finds it in cache when it wakes it.
  template <class F>
  static channel_waiter* claim_closed(channel_waiter* w, std::size_t limit, F on_claimed,
                                      std::size_t& selects) noexcept {
    for (; w != nullptr && limit != 0; --limit) {
      channel_waiter* const next = w->next;
      w->queued = false;
      selects -= w->of_select ? 1 : 0;
      if (w->parker->claim(w->index)) {
        w->closed = true;
        on_claimed(*w);
      }
      w = next;
    }
    return w;
  }

 private:
  channel_waiter* head_ = nullptr;
  channel_waiter* tail_ = nullptr;
  std::size_t selects_ = 0;  // queued waiters of selects
};

// Waiters completed under a channel's lock, woken (in wake()'s sense) when
// the list goes out of scope: after the lock is released, and on unwinding
// too, since a waiter that was handed its value must be woken whatever
// happens next.
class wake_list {
 public:
  wake_list() noexcept = default;
  wake_list(const wake_list&) = delete;
  wake_list& operator=(const wake_list&) = delete;
  ~wake_list() {
    if (head_ == nullptr) {
      return;
    }
    if (head_->next == nullptr) {
      head_->parker->wake();  // a send or receive: one waiter
      return;
    }
    // Several (a close(), a batch form): coroutines go to their pools in
    // chains. A chain is handed over (and its waiters may be gone) when it
    // is full, at a change of pool, or at the end: each waiter's link is
    // read before it joins.
    resume_batch batch;
    while (head_ != nullptr) {
      channel_waiter* next = head_->next;
      if (!head_->parker->join(batch)) {
        head_->parker->wake();  // the waiter may be gone after this
      }
      head_ = next;
    }
  }

  // w (nullptr: nothing) is out of its queue, so its link is ours. Woken
  // in the order added.
  void add(channel_waiter* w) noexcept {
    if (w != nullptr) {
      w->next = nullptr;
      (tail_ == nullptr ? head_ : tail_->next) = w;
      tail_ = w;
    }
  }

 private:
  channel_waiter* head_ = nullptr;
  channel_waiter* tail_ = nullptr;
};

// The plain waits a close() took out of its channel beyond its first chunk
// (close_chunk), completed off the channel's lock, by the workers of the
// first one's pool: the walk, a job, claims a chunk, puts itself back on
// the worker's deque to go on from there (an idle worker steals it, the
// oldest job there, and claims the next chunk meanwhile), and then wakes
// its chunk, whose waiters (in their frames) it has just brought into this
// worker's cache. So ten million waits cost the closing thread nothing,
// the workers share the walk, and each frame is fetched once, by the
// worker that resumes it. Waits of other pools or of threads met on the
// way are woken as wake_list wakes them, when the walk reaches them. The
// walk is safe off the lock because nothing but this close() can complete
// a plain wait, and touches no channel: what it needs is in the waiters.
// It is always work its pool can see (queued or running), so the pool
// does not end before the walk is done.
class closing_walk : job {
 public:
  static constexpr std::size_t chunk = 64;

  // From any thread. `first`: plain waits linked through next, out of
  // their queue. The calling thread walks instead when the first is a
  // thread's wait, when it is a thread of the first one's pool, when that
  // pool is paused or shutting down, or when no memory is left for the job.
  static void start(channel_waiter* first) noexcept;

 private:
  closing_walk(channel_waiter* rest, pool_core* home) noexcept
      : job(&execute), rest_(rest), home_(home) {}

  static void execute(job* j) noexcept;
  void hand_on() noexcept;

  channel_waiter* rest_;
  pool_core* home_;
};

// What every channel<T> has whatever T is: its lock, its waiters, whether it
// is closed, and the gate of its lock-free ring if it has one. A select locks
// the channels of all its cases at once (lock_channels), always in address
// order, so two selects never deadlock.
//
// Lockable: taking the lock also closes the ring's gate, so that under the
// lock the ring is a plain FIFO; releasing it opens the gate again only when
// nobody waits and the channel is open (the fast paths are then safe: a
// value can go into the ring only while no receiver waits, and come out
// only while no sender waits).
struct channel_base {
  void lock() noexcept {
    mutex.lock();
    if (gate != nullptr && !gate_closed) {
      gate->close();
      gate_closed = true;
    }
  }
  void unlock() noexcept {
    if (gate_closed && !closed && senders.empty() && receivers.empty()) {
      gate->open();
      gate_closed = false;
    }
    mutex.unlock();
  }

  futex_mutex mutex;
  channel_waiter_queue senders;
  channel_waiter_queue receivers;
  bool closed = false;
  bool gate_closed = false;   // under the lock
  ring_gate* gate = nullptr;  // bounded channels with a lock-free ring
};

// Locks each distinct channel of `channels` (n entries, nullptr allowed,
// duplicates allowed) in address order; unlock_channels undoes it. The
// array is sorted in place.
void lock_channels(channel_base** channels, std::size_t n) noexcept;
void unlock_channels(channel_base** channels, std::size_t n) noexcept;

// A uniformly random permutation of 0..n-1 (a select's poll order), from a
// per-thread generator.
void random_order(int* order, int n) noexcept;

}  // namespace fjord::detail
