#pragma once

#include <atomic>
#include <cstddef>

#include "fjord/detail/config.hpp"
#include "fjord/detail/job.hpp"
#include "fjord/detail/lane_ring.hpp"

namespace fjord::detail {

// One thread's private path into one pool: a chain of single-producer
// lane_rings, each twice the size of the one before. The thread that
// owns the lane is its only producer, so a submission is plain stores: no
// read-modify-write, no lock, no allocation for a small callable. When the
// newest ring is full the owner links a bigger successor and moves on;
// consumers take from the oldest ring that still holds work and move past a
// ring once it has a successor and nothing left to take. Beyond
// max_capacity the owner reports full and the pool's linked queue takes the
// job instead, so a backlog never blocks a producer.
//
// Retired rings stay allocated until free_rings(): a consumer may still be
// reading one. Their sizes form a geometric series, so a lane holds less
// than twice its largest ring.
//
// Ownership moves between threads only through disown() (release) and
// try_adopt() (acquire), so an adopter sees the previous owner's state.
class submission_lane {
 public:
  static constexpr std::size_t initial_capacity = 256;  // 16 KiB
  static constexpr std::size_t max_capacity = 65536;    // 4 MiB

  submission_lane();
  ~submission_lane();
  submission_lane(const submission_lane&) = delete;
  submission_lane& operator=(const submission_lane&) = delete;

  // Owner only: marks a submission in progress. The pool's destructor waits
  // for busy() to clear (see pool_core::begin_lane_submission).
  void begin() noexcept { busy_.store(true, std::memory_order_relaxed); }
  // Owner only, after begin(): a slot to build the job in, or nullptr when
  // the lane is full.
  lane_ring::slot* next_free_slot() noexcept {
    if (lane_ring::slot* s = newest_->next_free_slot()) [[likely]] {
      return s;
    }
    return grow();
  }
  // Owner only: publishes the slot next_free_slot() returned.
  void publish(lane_ring::slot* s, job::execute_fn fn) noexcept { newest_->publish(s, fn); }
  // Owner only. release: the destructor that sees busy() clear sees the
  // publication.
  void end() noexcept { busy_.store(false, std::memory_order_release); }

  bool busy() const noexcept { return busy_.load(std::memory_order_acquire); }
  // Owner only: a submission of ours is in progress, so this is a nested one
  // (from the constructor of the callable being submitted).
  bool submitting() const noexcept { return busy_.load(std::memory_order_relaxed); }

  // Any thread: like lane_ring::take, from the oldest ring with work.
  std::size_t take(job** out, std::size_t max, std::size_t share) noexcept;

  // Consumers' cheap poll.
  bool head_published() const noexcept {
    const lane_ring* r = head_.load(std::memory_order_acquire);
    return r->head_published() || r->successor.load(std::memory_order_relaxed) != nullptr;
  }

  // Racy hint; exact against a publication that the caller's fences order
  // before it (every ring from head_ on is checked).
  bool maybe_nonempty() const noexcept;

  // Any thread, while the pool lives: jobs published and not yet taken, a
  // racy snapshot for statistics.
  std::size_t backlog() const noexcept;

  // Ownership.
  bool try_adopt() noexcept {
    bool expected = true;
    return orphaned_.compare_exchange_strong(expected, false, std::memory_order_acquire,
                                             std::memory_order_relaxed);
  }
  void disown() noexcept { orphaned_.store(true, std::memory_order_release); }

  // The pool's destructor, once every job has run: the rings go, the lane
  // object stays for a thread that may still hold it (it only disowns it).
  void free_rings() noexcept;

 private:
  lane_ring::slot* grow() noexcept;

  lane_ring* oldest_;  // owned, with its successors (free_rings)
  lane_ring* newest_;  // owner only
  alignas(false_sharing_range) std::atomic<bool> busy_{false};  // owner writes
  std::atomic<bool> orphaned_{false};
  alignas(false_sharing_range) std::atomic<lane_ring*> head_;  // consumers
};

}  // namespace fjord::detail
