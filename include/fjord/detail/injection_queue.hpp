#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "fjord/detail/config.hpp"
#include "fjord/detail/job.hpp"

namespace fjord::detail {

// One shard of the pool's injection path: Vyukov's intrusive
// multi-producer/single-consumer queue ("Intrusive MPSC node-based queue",
// 1024cores.net, 2010). Producers never wait: a push is one exchange on the
// tail plus one store to link the predecessor, and a whole chain of jobs goes
// in with the same two operations (bulk submission). Consumers are workers;
// they take turns through a try-lock, so a busy shard is skipped, not waited
// for.
class injection_queue {
 public:
  injection_queue() noexcept : tail_(&sentinel_), head_(&sentinel_) {
    sentinel_.next().store(nullptr);
  }
  injection_queue(const injection_queue&) = delete;
  injection_queue& operator=(const injection_queue&) = delete;

  // Any thread. first..last must already be linked through job::next;
  // count is their number (it feeds depth(), nothing else).
  void push_chain(job* first, job* last, std::uint64_t count) noexcept {
    // Counted before the exchange, so pushed_ never trails what a consumer
    // can take. Relaxed: a statistic; on tail_'s cache line, which the
    // exchange below takes exclusively anyway.
    pushed_.fetch_add(count, std::memory_order_relaxed);
    link(first, last);
  }

  void push(job* j) noexcept { push_chain(j, j, 1); }

  // Jobs pushed and not yet popped; a racy snapshot, for statistics.
  std::uint64_t depth() const noexcept {
    const std::uint64_t popped = popped_.load(std::memory_order_relaxed);
    const std::uint64_t pushed = pushed_.load(std::memory_order_relaxed);
    return pushed > popped ? pushed - popped : 0;
  }

  // Racy hint: false means the queue was empty at some recent instant. Both
  // ends are tested: the consumer can put the sentinel back at the tail while a
  // producer's node is still unlinked behind head, so tail == sentinel alone
  // does not mean empty; head == tail == sentinel does. seq_cst on the tail: see
  // link().
  bool maybe_nonempty() const noexcept {
    return tail_.load(std::memory_order_seq_cst) != &sentinel_ ||
           head_.load(std::memory_order_relaxed) != &sentinel_;
  }

  // A cheaper hint, for a check made at every job boundary: the tail alone,
  // relaxed. It may miss a job for a moment (a consumer between putting the
  // sentinel back and taking the last node), never for good: the next
  // maybe_nonempty() or pop() sees it.
  bool maybe_nonempty_hint() const noexcept {
    return tail_.load(std::memory_order_relaxed) != &sentinel_;
  }

  bool try_lock_consumer() noexcept {
    return !consumer_busy_.load(std::memory_order_relaxed) &&
           !consumer_busy_.exchange(true, std::memory_order_acquire);
  }
  void unlock_consumer() noexcept { consumer_busy_.store(false, std::memory_order_release); }

  // Holder of the consumer lock only. nullptr when empty or cut (see push).
  job* pop() noexcept {
    job* head = head_.load(std::memory_order_relaxed);
    job* next = head->next().load(std::memory_order_acquire);
    if (head == &sentinel_) {
      if (next == nullptr) {
        return nullptr;
      }
      head_.store(next, std::memory_order_relaxed);
      head = next;
      next = next->next().load(std::memory_order_acquire);
    }
    if (next != nullptr) {
      head_.store(next, std::memory_order_relaxed);
      count_pop();
      return head;
    }
    if (head != tail_.load(std::memory_order_acquire)) {
      return nullptr;  // a producer is between its exchange and its link
    }
    // head is the last real node: put the sentinel behind it so head can go.
    link(&sentinel_, &sentinel_);  // not a job: not counted
    next = head->next().load(std::memory_order_acquire);
    if (next != nullptr) {
      head_.store(next, std::memory_order_relaxed);
      count_pop();
      return head;
    }
    return nullptr;
  }

 private:
  static void never_run(job*) noexcept {}

  void link(job* first, job* last) noexcept {
    last->next().store(nullptr, std::memory_order_relaxed);
    // acq_rel would do for the queue itself (release publishes the chain,
    // acquire orders us after the previous producer); seq_cst puts the
    // exchange in the single total order with the pool's census operations
    // (docs/scheduler.md, "Leaving the search"). Free on x86.
    job* prev = tail_.exchange(last, std::memory_order_seq_cst);
    // Between the exchange and this store the queue is briefly cut: the
    // consumer sees the cut as "empty for now", and this producer's wake-up
    // (which comes after the store) brings a worker back to it.
    prev->next().store(first, std::memory_order_release);
  }

  // The consumer-lock holder's: no other writer, so no read-modify-write.
  void count_pop() noexcept {
    popped_.store(popped_.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
  }

  alignas(false_sharing_range) std::atomic<job*> tail_;
  std::atomic<std::uint64_t> pushed_{0};  // producers' (see push_chain)
  alignas(false_sharing_range) std::atomic<bool> consumer_busy_{false};
  // Written only by the consumer-lock holder; atomic so maybe_nonempty() may
  // read it from anywhere.
  std::atomic<job*> head_;
  std::atomic<std::uint64_t> popped_{0};  // the consumer-lock holder's
  job sentinel_{&never_run};
};

}  // namespace fjord::detail
