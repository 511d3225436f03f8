#include "fjord/detail/submission_lane.hpp"

#include <new>
#include <thread>
#include <utility>

namespace fjord::detail {

submission_lane::submission_lane()
    : oldest_(new lane_ring(initial_capacity)), newest_(oldest_), head_(oldest_) {}

submission_lane::~submission_lane() {
  free_rings();
}

void submission_lane::free_rings() noexcept {
  lane_ring* r = std::exchange(oldest_, nullptr);
  while (r != nullptr) {
    lane_ring* next = r->successor.load(std::memory_order_relaxed);
    delete r;
    r = next;
  }
  newest_ = nullptr;
  head_.store(nullptr, std::memory_order_relaxed);
}

lane_ring::slot* submission_lane::grow() noexcept {
  if (newest_->capacity() >= max_capacity) {
    // At the cap. If the ring is backed up, the workers are far behind: give
    // them this core for a moment (they may be sharing it) and look once
    // more. Never more than that: a producer that waited for room could
    // deadlock with jobs that wait for the producer. If instead the next
    // slot is held by one long-running job, yielding would not help: the
    // caller falls back to the linked queue until that job ends.
    if (newest_->backlog() >= newest_->capacity() / 2) {
      std::this_thread::yield();
      return newest_->next_free_slot();
    }
    return nullptr;
  }
  lane_ring* bigger = nullptr;
  try {
    bigger = new lane_ring(newest_->capacity() * 2);
  } catch (const std::bad_alloc&) {
    return nullptr;
  }
  // release: everything published in the old ring is visible to a consumer
  // that sees the successor.
  newest_->successor.store(bigger, std::memory_order_release);
  newest_ = bigger;
  return bigger->next_free_slot();
}

std::size_t submission_lane::take(job** out, std::size_t max, std::size_t share) noexcept {
  lane_ring* r = head_.load(std::memory_order_acquire);
  while (true) {
    if (const std::size_t n = r->take(out, max, share); n != 0) {
      return n;
    }
    lane_ring* next = r->successor.load(std::memory_order_acquire);
    if (next == nullptr) {
      return 0;
    }
    // r's producer moved on after its last publication there, and the
    // acquire above makes them all visible. Move head_ past r only once every
    // one of them was taken; until then, take what is left (the first look
    // may have come before the last publication, or raced another consumer).
    if (!r->all_taken()) {
      continue;
    }
    // A failed CAS means another consumer moved head_ already; follow it.
    if (head_.compare_exchange_strong(r, next, std::memory_order_acq_rel,
                                      std::memory_order_acquire)) {
      r = next;
    }
  }
}

bool submission_lane::maybe_nonempty() const noexcept {
  // seq_cst: see lane_ring::maybe_nonempty; a ring installed after
  // this traversal passed holds only publications that came later still.
  for (const lane_ring* r = head_.load(std::memory_order_seq_cst); r != nullptr;
       r = r->successor.load(std::memory_order_seq_cst)) {
    if (r->maybe_nonempty()) {
      return true;
    }
  }
  return false;
}

std::size_t submission_lane::backlog() const noexcept {
  std::size_t n = 0;
  // Rings stay allocated until free_rings(), so following the links is safe.
  for (const lane_ring* r = head_.load(std::memory_order_acquire); r != nullptr;
       r = r->successor.load(std::memory_order_acquire)) {
    n += r->backlog();
  }
  return n;
}

}  // namespace fjord::detail
