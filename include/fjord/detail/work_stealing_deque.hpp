#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <new>

#include "fjord/detail/assert.hpp"
#include "fjord/detail/asymmetric_fence.hpp"
#include "fjord/detail/census.hpp"
#include "fjord/detail/config.hpp"
#include "fjord/detail/job.hpp"

namespace fjord::detail {

// A bounded Chase-Lev work-stealing deque (Chase and Lev, SPAA 2005) with the
// C11 orderings of Le, Pop, Cohen and Zappa Nardelli (PPoPP 2013), except
// that the owner's store-load fence in pop() is made asymmetric (see
// asymmetric_fence.hpp and docs/scheduler.md): while no thief is registered
// in `census`, pop() executes no fence and no read-modify-write unless it
// races for the very last element.
//
// Thieves must be registered (census incremented, then heavy_fence()) for the
// whole time they may call steal(). The capacity is fixed: push() returns false
// when full and the caller runs or re-routes the job; nesting deeper than the
// capacity would overflow the C++ stack long before.
class work_stealing_deque {
 public:
  // census: where thieves register (its thieves() count), the owner too.
  work_stealing_deque(std::size_t capacity, census& thieves)
      : mask_(static_cast<std::int64_t>(capacity) - 1),
        census_(&thieves),
        // calloc: untouched pages of a large array are never committed.
        slots_(static_cast<job**>(std::calloc(capacity, sizeof(job*)))) {
    if (slots_ == nullptr) {
      throw std::bad_alloc();
    }
  }
  ~work_stealing_deque() { std::free(slots_); }
  work_stealing_deque(const work_stealing_deque&) = delete;
  work_stealing_deque& operator=(const work_stealing_deque&) = delete;

  // Owner only. Plain stores: the slot, then bottom with release (a plain mov
  // on x86), which publishes the job's contents to any thief that reads this
  // or a later bottom with acquire. Every store of bottom is a release for
  // that reason (C++20 release sequences exclude later plain stores).
  FJORD_ALWAYS_INLINE bool push(job* j) noexcept {
    const std::int64_t b = bottom_.load(std::memory_order_relaxed);
    if (b - top_cache_ > mask_) [[unlikely]] {
      top_cache_ = top_.load(std::memory_order_acquire);
      if (b - top_cache_ > mask_) {
        return false;
      }
    }
    slot(b).store(j, std::memory_order_relaxed);
    bottom_.store(b + 1, std::memory_order_release);
    return true;
  }

  // Owner only. Returns the newest job, or nullptr when empty.
  FJORD_ALWAYS_INLINE job* pop() noexcept {
    const std::int64_t b = bottom_.load(std::memory_order_relaxed) - 1;
    bottom_.store(b, std::memory_order_release);
    // Le et al. put a seq_cst fence here so that a thief cannot read the old
    // bottom while we read an old top. With no registered thief, any thief
    // that registers later does so with a heavy fence, which either makes our
    // bottom store visible to it or makes its census increment visible to the
    // census load below (docs/scheduler.md, "Owner pop").
    if (asymmetric_fences_enabled.load(std::memory_order_relaxed)) [[likely]] {
      std::atomic_signal_fence(std::memory_order_seq_cst);
      // acquire pairs with a thief's release deregistration, so its last CAS
      // on top is visible to our top load below (matters on ARM).
      if (census_->load(std::memory_order_acquire).thieves() != 0) {
        full_fence();
        if (hold_ != 0) [[unlikely]] {
          count_held_pop();
        }
      }
    } else {
      full_fence();
      if (hold_ != 0) [[unlikely]] {
        count_held_pop();
      }
    }
    std::int64_t t = top_.load(std::memory_order_relaxed);
    if (t < b) [[likely]] {
      return slot(b).load(std::memory_order_relaxed);
    }
    job* j = nullptr;
    if (t == b) {
      // The last element: race the thieves for it with a CAS on top.
      j = slot(b).load(std::memory_order_relaxed);
      if (!top_.compare_exchange_strong(t, t + 1, std::memory_order_seq_cst,
                                        std::memory_order_relaxed)) {
        j = nullptr;
      }
      // Won or lost, top is now b + 1 (a failed CAS rewrote t with the
      // thief's value, so t + 1 would run ahead of the real top).
      top_cache_ = b + 1;
    }
    bottom_.store(b + 1, std::memory_order_release);
    return j;
  }

  // The owner's own registration as a thief of other deques. A worker keeps
  // it past a steal, while it works, for at most `fenced_pops` more fenced
  // pops of this deque (each search or steal renews it), so that steals
  // that come often pay for one heavy fence, not one each; it is dropped
  // before the owner sleeps or blocks (docs/scheduler.md, "Holding a thief
  // registration"). Owner only; the census update is the caller's.
  bool owner_registered() const noexcept { return hold_ != 0; }
  void hold_registration(std::uint32_t fenced_pops) noexcept {
    FJORD_ASSERT(fenced_pops != 0, "hold_registration: a hold of zero pops is no hold");
    hold_ = fenced_pops;
  }
  void drop_registration() noexcept {
    if (hold_ != 0) {
      hold_ = 0;
      census_->remove_thief();
    }
  }

  enum class steal_result { success, empty, lost_race };

  // Any registered thief. On success, *out holds the oldest job.
  steal_result steal(job*& out) noexcept {
    std::int64_t t = top_.load(std::memory_order_acquire);
    full_fence();  // Orders the top load before the bottom load (Le et al.).
    const std::int64_t b = bottom_.load(std::memory_order_acquire);
    if (t >= b) {
      return steal_result::empty;
    }
    // The slot cannot be overwritten before our CAS decides: push() refuses
    // to wrap onto an index that top has not yet passed.
    job* j = slot(t).load(std::memory_order_relaxed);
    if (!top_.compare_exchange_strong(t, t + 1, std::memory_order_seq_cst,
                                      std::memory_order_relaxed)) {
      return steal_result::lost_race;
    }
    out = j;
    return steal_result::success;
  }

  // A racy emptiness hint for idle workers deciding whether to look closer.
  bool maybe_nonempty() const noexcept {
    return top_.load(std::memory_order_relaxed) < bottom_.load(std::memory_order_relaxed);
  }

  // Jobs on the deque, as a racy snapshot for statistics.
  std::size_t size_hint() const noexcept {
    const std::int64_t n =
        bottom_.load(std::memory_order_relaxed) - top_.load(std::memory_order_relaxed);
    return n > 0 ? static_cast<std::size_t>(n) : 0;
  }

 private:
  // The held registration's countdown; the last fenced pop deregisters
  // (this pop has fenced already, so it needs no registration of its own).
  FJORD_NOINLINE void count_held_pop() noexcept {
    if (--hold_ == 0) {
      census_->remove_thief();
    }
  }
  // The slots are plain job* (calloc'd, implicit lifetime) accessed only
  // through atomic_ref.
  std::atomic_ref<job*> slot(std::int64_t i) noexcept {
    return std::atomic_ref<job*>(slots_[i & mask_]);
  }

  // Owner-side line.
  alignas(false_sharing_range) std::atomic<std::int64_t> bottom_{0};
  std::int64_t top_cache_ = 0;  // owner's last view of top; only ever behind
  std::int64_t mask_;
  census* census_;
  // Fenced pops left before the owner's thief registration lapses; 0 when
  // the owner is not registered. Owner only.
  std::uint32_t hold_ = 0;
  job** slots_;
  // Thief-side line.
  alignas(false_sharing_range) std::atomic<std::int64_t> top_{0};
};

}  // namespace fjord::detail
