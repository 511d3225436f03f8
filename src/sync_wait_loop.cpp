#include "fjord/detail/sync_wait_loop.hpp"

#include "fjord/detail/futex.hpp"

namespace fjord::detail {

namespace {

constinit thread_local sync_wait_loop* innermost = nullptr;

}  // namespace

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
  if ((old & sleeping_bit) != 0) {
    futex_wake_all(word);
  }
}

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
    const std::uint32_t e =
        events_.fetch_or(sleeping_bit, std::memory_order_acq_rel) | sleeping_bit;
    if (posted_.load(std::memory_order_acquire) != nullptr) {
      continue;
    }
    if ((e & done_bit) != 0 && (e & count_mask) == (taken_ & count_mask)) {
      return;  // ended, and every poster has signalled: nobody touches us
    }
    // Not ended, or a poster whose job we ran has yet to signal: its signal
    // (or the end) changes the word and wakes us.
    futex_wait(&events_, e);
    // Awake: posters need not wake us until we announce sleep again (each
    // look at the list above is followed by that announcement).
    events_.fetch_and(~sleeping_bit, std::memory_order_relaxed);
  }
}

sync_wait_loop* sync_wait_loop::current() noexcept {
  return innermost;
}

void run_unrelated_job(job* j) noexcept {
  const sync_wait_loop::scope none(nullptr);
  run_job(j);
}

sync_wait_loop::scope::scope(sync_wait_loop* loop) noexcept : outer_(innermost) {
  innermost = loop;
}

sync_wait_loop::scope::~scope() {
  innermost = outer_;
}

}  // namespace fjord::detail
