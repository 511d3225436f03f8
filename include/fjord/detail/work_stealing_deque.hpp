#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "fjord/detail/assert.hpp"
#include "fjord/detail/asymmetric_fence.hpp"
#include "fjord/detail/census.hpp"
#include "fjord/detail/config.hpp"
#include "fjord/detail/job.hpp"

namespace fjord::detail {

// A bounded work-stealing deque split in two (docs/scheduler.md, "The split
// deque"): the oldest jobs, [top, split), are shared, and any thief takes
// them with one CAS on the {top, split} word and no fence; the newest,
// [split, bottom), are the owner's, which it pushes and pops with plain
// loads and stores. The split follows Lace (van Dijk and van de Pol,
// "Lace: non-blocking split deque for work-stealing", Euro-Par 2014
// workshops): a thief that finds nothing shared raises a request flag, and
// the owner moves the split up at its next push or pop; the first push onto
// a deque with nothing shared is shared at once (when workers are idle: the
// pusher calls offer()). Over that, a thief
// registered in `census` (a census increment, then heavy_fence()) may take
// private jobs too, with the Chase-Lev steal (Chase and Lev, SPAA 2005;
// orderings of Le, Pop, Cohen and Zappa Nardelli, PPoPP 2013), and the owner
// fences its pops only while such a thief exists (asymmetric_fence.hpp and
// "Owner pop" in docs/scheduler.md). Workers register only for an owner
// that holds private jobs, shares none and has neither pushed nor popped for
// 10 us (a long job, a blocked thread), so private pops stay fence-free
// while other workers steal.
//
// Indices are 32-bit and wrap; only their differences are compared. top only
// grows (modulo 2^32), and split is never lowered to top or below, which is what makes a
// thief's CAS on {top, split} free of ABA (see steal()). The capacity is fixed:
// push() returns false when full and the caller runs or re-routes the job.
class work_stealing_deque {
 public:
  // census: where registered thieves are counted. first_index: where the
  // indices start (tests start them just before they wrap).
  work_stealing_deque(std::size_t capacity, census& thieves, std::uint32_t first_index = 0)
      : bottom_(first_index),
        split_(first_index),
        top_cache_(first_index),
        mask_(static_cast<std::uint32_t>(checked_capacity(capacity) - 1)),
        census_(&thieves),
        // Untouched pages of a large ring are never committed.
        slots_(allocate_slots(capacity)),
        ends_(pack(first_index, first_index)) {}
  ~work_stealing_deque() { free_slots(slots_, std::size_t{mask_} + 1); }
  work_stealing_deque(const work_stealing_deque&) = delete;
  work_stealing_deque& operator=(const work_stealing_deque&) = delete;

  // Owner only. The slot, then bottom with release (a plain mov on x86),
  // which publishes the job to a registered thief that reads this or a later
  // bottom with acquire (every store of bottom is a release for that reason:
  // C++20 release sequences exclude later plain stores). Unregistered thieves
  // see the job only once a share() CAS, a release, moves split past it:
  // the pusher calls offer() when the census shows idle workers.
  FJORD_ALWAYS_INLINE bool push(job* j) noexcept {
    const std::uint32_t b = bottom_.load(std::memory_order_relaxed);
    if (b - top_cache_ > mask_) [[unlikely]] {
      top_cache_ = top_of(ends_.load(std::memory_order_acquire));
      if (b - top_cache_ > mask_) {
        return false;
      }
    }
    slot(b).store(j, std::memory_order_relaxed);
    bottom_.store(b + 1, std::memory_order_release);
    return true;
  }

  // Owner only, after a push while `idle` other workers search or sleep:
  // shares jobs if none is shared (the first push after a steal, or onto an
  // empty deque, is shared at once, Lace's "all stolen" case) or if a thief
  // asked: one for each idle worker, or half of the private jobs if a thief
  // asked, whichever is more, but at least one and at most half (rounded
  // up). Relaxed: a stale top only delays a share to the next push or pop.
  void offer(std::uint32_t idle = 1) noexcept {
    const std::uint64_t e = ends_.load(std::memory_order_relaxed);
    if (!before(top_of(e), split_) || share_requested_.load(std::memory_order_relaxed)) {
      share(e, bottom_.load(std::memory_order_relaxed), idle);
    }
  }

  // Owner only. Returns the newest job, or nullptr when empty.
  FJORD_ALWAYS_INLINE job* pop() noexcept {
    const std::uint32_t b = bottom_.load(std::memory_order_relaxed) - 1;
    bottom_.store(b, std::memory_order_release);
    // Only a registered thief takes private jobs. With none registered, any
    // thief that registers later does so with a heavy fence, which either
    // makes our bottom store visible to it (so it never takes slot b) or
    // makes its census increment visible to the load below.
    // acquire pairs with a thief's release deregistration, so its last CAS
    // on top is visible to our top load below (matters on ARM).
    std::atomic_signal_fence(std::memory_order_seq_cst);
    const census_count c = census_->load(std::memory_order_acquire);
    const bool fenced =
        c.thieves() != 0 || !asymmetric_fences_enabled.load(std::memory_order_relaxed);
    if (fenced) [[unlikely]] {
      full_fence();  // Le et al.: our bottom store before our top load
    }
    const std::uint64_t e = ends_.load(std::memory_order_relaxed);
    const std::uint32_t t = top_of(e);
    if (!before(b, split_) && before(t, b)) [[likely]] {
      // Private, and not the last job: no thief can take it. An unregistered
      // thief takes only below split; a registered one only below the bottom
      // it reads, which is b or less (the fence, or the lemma above). A
      // request counts only while somebody searches (a stale one waits).
      if (c.searchers() != 0 && share_requested_.load(std::memory_order_relaxed)) [[unlikely]] {
        share(e, b);
      }
      return slot(b).load(std::memory_order_relaxed);
    }
    return pop_slow(b, e, fenced);
  }

  // Owner only: shares every private job (before the owner blocks, or
  // leaves jobs it will not pop soon).
  void share_all() noexcept {
    const std::uint32_t b = bottom_.load(std::memory_order_relaxed);
    std::uint64_t e = ends_.load(std::memory_order_relaxed);
    while (before(split_, b)) {
      // split only grows here, so never to top or below; release publishes
      // the slots below the new split.
      if (ends_.compare_exchange_weak(e, pack(top_of(e), b), std::memory_order_release,
                                      std::memory_order_relaxed)) {
        split_ = b;
      }
    }
    if (share_requested_.load(std::memory_order_relaxed)) {
      share_requested_.store(false, std::memory_order_relaxed);
    }
  }

  enum class steal_result { success, empty, lost_race };

  // Any thread. Takes the oldest shared job; never a private one. When
  // nothing is shared, asks the owner to share (a hint; see push and pop).
  steal_result steal(job*& out) noexcept {
    // acquire: reads the word from the owner's share() CAS that moved split
    // past slot t, or from a later RMW in its release sequence (every change
    // of the word is an RMW), so slot t's job is visible.
    std::uint64_t e = ends_.load(std::memory_order_acquire);
    const std::uint32_t t = top_of(e);
    if (!before(t, split_of(e))) {
      if (!share_requested_.load(std::memory_order_relaxed)) {
        share_requested_.store(true, std::memory_order_relaxed);
      }
      return steal_result::empty;
    }
    // No ABA: the word can be {t, s} again later only with top still t
    // (top only grows), and while top is t the owner never takes slot t
    // privately (split stays above top) nor overwrites it (push refuses to
    // wrap onto an index top has not passed). So if the CAS succeeds, j is
    // the job that is still at t. The one exception is top wrapping all the
    // way round: 2^32 jobs taken from this deque's top between our load and
    // our CAS, at least 40 s at 10 ns a take, with this thread off its CPU
    // (docs/scheduler.md, "The split deque").
    return take_top(e, out);
  }

  // A registered thief only (census thief count held, and heavy_fence()
  // called after registering): takes the oldest job, shared or private, as
  // Le et al.'s steal. Leaves split where it is, so top may pass it.
  steal_result steal_private(job*& out) noexcept {
    std::uint64_t e = ends_.load(std::memory_order_acquire);
    full_fence();  // Orders the top load before the bottom load (Le et al.).
    const std::uint32_t b = bottom_.load(std::memory_order_acquire);
    const std::uint32_t t = top_of(e);
    if (!before(t, b)) {
      return steal_result::empty;
    }
    return take_top(e, out);
  }

  // Racy hints for searchers: any job at all, and any shared job.
  bool maybe_nonempty() const noexcept {
    return before(top_of(ends_.load(std::memory_order_relaxed)),
                  bottom_.load(std::memory_order_relaxed));
  }
  bool maybe_shared() const noexcept {
    const std::uint64_t e = ends_.load(std::memory_order_relaxed);
    return before(top_of(e), split_of(e));
  }
  // Racy snapshot of bottom, for a searcher to tell whether an owner with
  // private jobs is still pushing and popping.
  std::uint32_t bottom_hint() const noexcept { return bottom_.load(std::memory_order_relaxed); }

  // Jobs on the deque, as a racy snapshot for statistics.
  std::size_t size_hint() const noexcept {
    const auto n = static_cast<std::int32_t>(bottom_.load(std::memory_order_relaxed) -
                                             top_of(ends_.load(std::memory_order_relaxed)));
    return n > 0 ? static_cast<std::size_t>(n) : 0;
  }

  // The ring's first slot, for tests that look at which of its pages are
  // committed.
  const void* ring() const noexcept { return slots_; }

 private:
  // The ring of `capacity` zeroed slots (src/work_stealing_deque.cpp).
  // Checked before anything is allocated for it.
  static std::size_t checked_capacity(std::size_t capacity) noexcept {
    FJORD_ASSERT(
        capacity >= 2 && capacity <= (std::size_t{1} << 30) && (capacity & (capacity - 1)) == 0,
        "work_stealing_deque: capacity must be a power of two in [2, 2^30]");
    return capacity;
  }
  static job** allocate_slots(std::size_t capacity);
  static void free_slots(job** slots, std::size_t capacity) noexcept;

  static std::uint32_t top_of(std::uint64_t e) noexcept { return static_cast<std::uint32_t>(e); }
  static std::uint32_t split_of(std::uint64_t e) noexcept {
    return static_cast<std::uint32_t>(e >> 32);
  }
  static std::uint64_t pack(std::uint32_t top, std::uint32_t split) noexcept {
    return (std::uint64_t{split} << 32) | top;
  }
  // a < b for wrapping indices less than 2^31 apart.
  static bool before(std::uint32_t a, std::uint32_t b) noexcept {
    return static_cast<std::int32_t>(a - b) < 0;
  }

  // Either thief: takes slot top of the word e it read, by moving top past
  // it with a CAS that leaves split as it was; the slot is read first (see
  // steal() for why it is still the job at top if the CAS succeeds).
  steal_result take_top(std::uint64_t e, job*& out) noexcept {
    const std::uint32_t t = top_of(e);
    job* j = slot(t).load(std::memory_order_relaxed);
    if (!ends_.compare_exchange_strong(e, pack(t + 1, split_of(e)), std::memory_order_seq_cst,
                                       std::memory_order_relaxed)) {
      return steal_result::lost_race;
    }
    out = j;
    return steal_result::success;
  }

  // Owner: moves split up to share private jobs below `limit` (the bottom
  // the caller keeps for itself): `wanted` of them, at most half (rounded
  // up), when nothing is shared, and at least half when a thief asked. The
  // request is cleared once answered; one raised meanwhile is raised again
  // by its thief's next look.
  FJORD_NOINLINE void share(std::uint64_t e, std::uint32_t limit,
                            std::uint32_t wanted = 1) noexcept {
    while (true) {
      const std::uint32_t t = top_of(e);
      // A registered thief may have taken private jobs: they start at top.
      const std::uint32_t base = before(split_, t) ? t : split_;
      if (!before(base, limit)) {
        return;  // nothing private to share; a request stays for later
      }
      const bool requested = share_requested_.load(std::memory_order_relaxed);
      if (!requested && before(t, split_)) {
        return;  // something is shared already and nobody asked for more
      }
      const std::uint32_t count = limit - base;
      const std::uint32_t half = (count + 1) / 2;
      std::uint32_t n = wanted < half ? wanted : half;
      if (requested && n < count / 2) {
        n = count / 2;
      }
      if (n == 0) {
        n = 1;
      }
      // Release: publishes slots [base, base + n) to thieves that acquire
      // the word. The new split is above top, as the ABA argument needs.
      if (ends_.compare_exchange_weak(e, pack(t, base + n), std::memory_order_release,
                                      std::memory_order_relaxed)) {
        split_ = base + n;
        if (requested) {
          share_requested_.store(false, std::memory_order_relaxed);
        }
        return;
      }
    }
  }

  // Owner: the pop of the last private job, or of a shared one, or of
  // nothing; b is bottom - 1, already stored.
  FJORD_NOINLINE job* pop_slow(std::uint32_t b, std::uint64_t e, bool fenced) noexcept {
    while (true) {
      const std::uint32_t t = top_of(e);
      if (before(b, t)) {
        // Empty: thieves took everything (top is b + 1).
        bottom_.store(b + 1, std::memory_order_release);
        return nullptr;
      }
      if (!before(b, split_)) {
        // Private, and the last job (t == b, the private part starting at
        // top). Unfenced, no registered thief can race us for it (see pop);
        // fenced, one may, and the CAS decides, as in Le et al.
        if (!fenced) {
          return slot(b).load(std::memory_order_relaxed);
        }
        job* j = slot(b).load(std::memory_order_relaxed);
        if (ends_.compare_exchange_strong(e, pack(t + 1, t + 1), std::memory_order_seq_cst,
                                          std::memory_order_relaxed)) {
          split_ = t + 1;
        } else {
          j = nullptr;  // a registered thief took it: top is b + 1 now
        }
        bottom_.store(b + 1, std::memory_order_release);
        return j;
      }
      // Slot b is shared (b == split - 1): take it back with a CAS against
      // the thieves. When it is the only shared job, by moving top past it
      // as a thief would; otherwise by lowering split to the middle of the
      // shared part (Lace), so that the older half stays shared and split
      // stays above top.
      job* j = slot(b).load(std::memory_order_relaxed);
      if (t == b) {
        if (ends_.compare_exchange_strong(e, pack(t + 1, t + 1), std::memory_order_seq_cst,
                                          std::memory_order_relaxed)) {
          split_ = t + 1;
          bottom_.store(b + 1, std::memory_order_release);
          return j;
        }
        continue;  // e reloaded: a thief took it, or the word moved
      }
      const std::uint32_t middle = t + (split_ - t) / 2;
      if (ends_.compare_exchange_strong(e, pack(t, middle), std::memory_order_seq_cst,
                                        std::memory_order_relaxed)) {
        split_ = middle;
        return j;
      }
    }
  }

  // The slots are plain job* (from calloc or mmap: implicit lifetime)
  // accessed only through atomic_ref. A slot is written before any pop or
  // successful steal uses it; a thief that reads one early loses its CAS.
  std::atomic_ref<job*> slot(std::uint32_t i) noexcept {
    return std::atomic_ref<job*>(slots_[i & mask_]);
  }

  // Owner-side line.
  alignas(false_sharing_range) std::atomic<std::uint32_t> bottom_;
  std::uint32_t split_;      // the split as the owner set it (only it sets split)
  std::uint32_t top_cache_;  // owner's last view of top; only ever behind
  std::uint32_t mask_;
  census* census_;
  job** slots_;
  // Thief-side line: top and split in one word, and the request flag the
  // owner reads beside it.
  alignas(false_sharing_range) std::atomic<std::uint64_t> ends_;
  std::atomic<bool> share_requested_{false};
};

}  // namespace fjord::detail
