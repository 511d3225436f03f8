#include "fjord/detail/sync_wait_loop.hpp"

#include "fjord/detail/futex.hpp"
#include "fjord/detail/pool_core.hpp"
#include "fjord/detail/reactor.hpp"

namespace fjord::detail {

void sync_wait_loop::post(job* j) noexcept {
  // Release: the loop's acquire exchange sees the job's contents (and the
  // suspended coroutine's state) before running it.
  job* head = posted_.load(std::memory_order_relaxed);
  do {
    j->next().store(head, std::memory_order_relaxed);
  } while (!posted_.compare_exchange_weak(head, j, std::memory_order_release,
                                          std::memory_order_relaxed));
  signal(false);
}

void sync_wait_loop::finish() noexcept {
  signal(true);
}

void sync_wait_loop::signal(bool done) noexcept {
  const void* word = &events_;
  // The last touch of the loop (acq_rel: orders the push, or the task's
  // result, before it). The loop may be gone right after; the futex wake
  // only hashes the address. A CAS rather than a fetch_add: the count wraps
  // within its bits (run() compares it modulo 2^30), where an add would
  // carry into the flags after 2^30 posts.
  std::uint32_t old = events_.load(std::memory_order_relaxed);
  std::uint32_t desired = 0;
  do {
    desired = done ? (old | done_bit) : ((old & ~count_mask) | ((old + 1) & count_mask));
  } while (!events_.compare_exchange_weak(old, desired, std::memory_order_acq_rel,
                                          std::memory_order_relaxed));
  if ((old & polling_bit) != 0) {
    interrupt_reactor();  // touches the reactor (never destroyed), not the loop
  } else if ((old & sleeping_bit) != 0) {
    futex_wake_all(word);
  }
}

namespace {

// The poller role, taken by a loop about to sleep: coroutines wait for fds
// and nobody polls (a sync_wait during static destruction has no pool to
// do it; docs/io.md, "Who polls"). nullptr when not taken.
reactor* become_poller() noexcept {
  reactor* r = reactor::existing();
  return r != nullptr && r->has_waiters() && r->try_become_poller() ? r : nullptr;
}

// Dispatches what the wait found (coroutines of this loop are posted to
// it), gives the role up, and hands it on if fds are still awaited.
void leave_poller(reactor& r) noexcept {
  r.dispatch_and_release();
  // seq_cst looks after the release, against add_waiter() (docs/io.md).
  if (r.has_waiters() && !r.has_poller()) {
    pool_core::wake_a_poller(nullptr);
  }
}

}  // namespace

void sync_wait_loop::run() noexcept {
  while (true) {
    if (job* list = posted_.exchange(nullptr, std::memory_order_acquire)) {
      // Posted newest first: reverse, so they run in the order woken.
      job* ordered = nullptr;
      while (list != nullptr) {
        job* next = list->next().load(std::memory_order_relaxed);
        list->next().store(ordered, std::memory_order_relaxed);
        ordered = list;
        list = next;
      }
      while (ordered != nullptr) {
        job* next = ordered->next().load(std::memory_order_relaxed);
        ++taken_;
        run_job(ordered);
        ordered = next;
      }
      continue;
    }
    // Set the sleeping bit before deciding to sleep: a signal after it
    // wakes us; one before it shows in the value we compare with.
    // A poster included in e pushed before signalling, so the load below
    // sees its job (acquire through the RMW chain on events_).
    // Polling or not is announced in the same step.
    reactor* poller = become_poller();
    const std::uint32_t flags = sleeping_bit | (poller != nullptr ? polling_bit : 0);
    const std::uint32_t e = events_.fetch_or(flags, std::memory_order_acq_rel) | flags;
    const bool more = posted_.load(std::memory_order_acquire) != nullptr;
    const bool ended = !more && (e & done_bit) != 0 && (e & count_mask) == (taken_ & count_mask);
    if (more || ended) {
      if (poller != nullptr) {
        events_.fetch_and(~polling_bit, std::memory_order_relaxed);
        leave_poller(*poller);  // nothing collected: only the role goes
      }
      if (ended) {
        return;  // ended, and every poster has signalled: nobody touches us
      }
      continue;
    }
    // Not ended, or a poster whose job we ran has yet to signal: its signal
    // (or the end) changes the word and wakes us, or interrupts the
    // reactor's wait (an interrupt before the wait makes it return at once).
    if (poller != nullptr) {
      poller->wait(std::chrono::nanoseconds(-1));
    } else {
      futex_wait(&events_, e);
    }
    // Awake: posters need not wake us until we announce sleep again (each
    // look at the list above is followed by that announcement).
    events_.fetch_and(~(sleeping_bit | polling_bit), std::memory_order_relaxed);
    if (poller != nullptr) {
      leave_poller(*poller);
    }
  }
}

void run_unrelated_job(job* j) noexcept {
  const sync_wait_loop::scope none(nullptr);
  run_job(j);
}

}  // namespace fjord::detail
