#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <new>

#include "fjord/detail/config.hpp"
#include "fjord/detail/job.hpp"

namespace fjord::detail {

// One ring of a submission_lane: a bounded single-producer, multi-consumer
// ring of job slots. The slot protocol follows Vyukov's bounded MPMC queue
// (1024cores.net, 2011): each slot's sequence number says whose turn it is,
// `pos` when free for the producer of position pos, `pos + 1` once published,
// `pos + capacity` once its job has run and the slot is free for the next lap.
// With a single producer the claim needs no read-modify-write: the producer
// alone owns enqueue_pos_.
//
// A slot is itself a job, one cache line long. A small callable is built in
// the slot's storage and runs there (a post allocates nothing); any other job
// goes in by pointer. Either way a consumer pushes the slot on its deque like
// any job, so taken work can still be stolen, and the slot is freed when its
// job runs. Slots may therefore be freed out of order; the producer finds its
// next slot still busy and treats the ring as full.
class lane_ring {
 public:
  static constexpr std::size_t inline_size = 32;
  // How far ahead the producer prefetches slots for writing.
  static constexpr std::size_t prefetch_distance = 8;

  struct alignas(64) slot final : job {
    slot() noexcept : job(nullptr) {}

    // The job that ran frees the slot for the next lap. release: our reads
    // of the storage happen before the producer's next writes to it (it
    // acquires the sequence number in free_slot()).
    void release() noexcept {
      seq.store(seq.load(std::memory_order_relaxed) + lap - 1, std::memory_order_release);
    }

    std::atomic<std::uint64_t> seq{0};
    std::uint64_t lap = 0;  // the ring's capacity
    alignas(16) std::byte storage[inline_size];
  };
  static_assert(sizeof(slot) == 64);

  // Whether a callable of type F can live in a slot.
  template <class F>
  static constexpr bool fits_inline = sizeof(F) <= inline_size && alignof(F) <= 16;

  // capacity: a power of two.
  explicit lane_ring(std::size_t capacity) : slots_(new slot[capacity]), mask_(capacity - 1) {
    for (std::size_t i = 0; i < capacity; ++i) {
      slots_[i].seq.store(i, std::memory_order_relaxed);
      slots_[i].lap = capacity;
    }
  }
  ~lane_ring() { delete[] slots_; }
  lane_ring(const lane_ring&) = delete;
  lane_ring& operator=(const lane_ring&) = delete;

  std::size_t capacity() const noexcept { return mask_ + 1; }

  // Producer. The slot for the next position, or nullptr while its job from a
  // lap ago has not run yet.
  slot* next_free_slot() noexcept {
    const std::uint64_t pos = enqueue_pos_.load(std::memory_order_relaxed);
    slot& s = slots_[pos & mask_];
    // acquire pairs with release(): the previous lap's job is done with the
    // storage.
    if (s.seq.load(std::memory_order_acquire) != pos) {
      return nullptr;
    }
    // The slot a few positions ahead was last written by a consumer; fetch
    // it for writing now, so its miss overlaps with this post.
    __builtin_prefetch(&slots_[(pos + prefetch_distance) & mask_], 1);
    return &s;
  }

  // Producer: publishes the slot next_free_slot() returned. release: a
  // consumer that acquires the sequence number sees the job. enqueue_pos_
  // serves only maybe_nonempty(); the caller orders it before its census
  // check (submission_lane).
  void publish(slot* s, job::execute_fn fn) noexcept {
    const std::uint64_t pos = enqueue_pos_.load(std::memory_order_relaxed);
    s->execute = fn;
    s->seq.store(pos + 1, std::memory_order_release);
    enqueue_pos_.store(pos + 1, std::memory_order_relaxed);
  }

  // Any thread. Claims published slots in ring order and stores them in out;
  // returns how many: max when at least max are waiting, else a 1/share part
  // of what is waiting (at least one), so a shallow ring is split between the
  // consumers rather than taken whole by one. 0 means the slot at
  // dequeue_pos_ was not yet published when we looked; a slot found already
  // taken and freed means our dequeue_pos_ was stale, so we look again. A
  // successful CAS on dequeue_pos_ proves that no other consumer took the
  // slots in between (positions never repeat), and only their taker changes
  // their sequence numbers from here on.
  std::size_t take(job** out, std::size_t max, std::size_t share) noexcept {
    std::uint64_t pos = dequeue_pos_.load(std::memory_order_relaxed);
    while (true) {
      std::size_t n = 0;
      bool stale = false;
      while (n < max) {
        // acquire pairs with publish(): the job's contents.
        const std::uint64_t seq = slots_[(pos + n) & mask_].seq.load(std::memory_order_acquire);
        const auto ahead = static_cast<std::int64_t>(seq - (pos + n + 1));
        if (ahead != 0) {
          // ahead > 0: that slot was taken and freed already, so our pos is
          // stale; ahead < 0: not published yet.
          stale = ahead > 0;
          break;
        }
        ++n;
      }
      if (n == 0) {
        if (!stale) {
          return 0;
        }
        pos = dequeue_pos_.load(std::memory_order_relaxed);
        continue;
      }
      if (n < max) {
        n = n >= share ? n / share : 1;
      }
      if (dequeue_pos_.compare_exchange_weak(pos, pos + n, std::memory_order_relaxed,
                                             std::memory_order_relaxed)) {
        for (std::size_t i = 0; i < n; ++i) {
          out[i] = &slots_[(pos + i) & mask_];
        }
        return n;
      }
    }
  }

  // Consumers' cheap poll: is the oldest untaken slot published?
  bool head_published() const noexcept {
    const std::uint64_t pos = dequeue_pos_.load(std::memory_order_relaxed);
    return slots_[pos & mask_].seq.load(std::memory_order_relaxed) == pos + 1;
  }

  // Published and not yet taken. A false positive is
  // possible (a stale dequeue_pos_). seq_cst: a searcher's check after its
  // census update, against the producer's fence (submission_lane).
  bool maybe_nonempty() const noexcept {
    return enqueue_pos_.load(std::memory_order_seq_cst) !=
           dequeue_pos_.load(std::memory_order_seq_cst);
  }

  // Published and not yet taken (producer's view; a stale dequeue_pos_ only
  // overstates it). From another thread the two loads may see a consumer's
  // take before the publication it took: then 0, not a wrapped difference.
  std::size_t backlog() const noexcept {
    const std::uint64_t taken = dequeue_pos_.load(std::memory_order_relaxed);
    const std::uint64_t published = enqueue_pos_.load(std::memory_order_relaxed);
    return published > taken ? static_cast<std::size_t>(published - taken) : 0;
  }

  // Every position the producer published was taken. Exact once the
  // producer has moved on (successor set, read with acquire); a stale
  // dequeue_pos_ can only make it false.
  bool all_taken() const noexcept {
    return enqueue_pos_.load(std::memory_order_acquire) ==
           dequeue_pos_.load(std::memory_order_relaxed);
  }

  // Puts an existing job in a slot, by pointer.
  static void store_pointer(slot* s, job* j) noexcept {
    ::new (static_cast<void*>(s->storage)) job*(j);
  }
  static constexpr job::execute_fn run_pointer_fn() noexcept { return &run_pointer; }
  // For a slot whose job could not be built.
  static constexpr job::execute_fn run_nothing_fn() noexcept { return &run_nothing; }

  // The bigger ring the producer moved on to when this one filled up. Set
  // once, with release, after the producer's last publication here: a
  // consumer that sees it and then all_taken() may move past this ring.
  std::atomic<lane_ring*> successor{nullptr};

 private:
  static void run_pointer(job* j) noexcept {
    auto* s = static_cast<slot*>(j);
    job* target = *std::launder(reinterpret_cast<job**>(s->storage));
    s->release();
    run_job(target);
  }
  static void run_nothing(job* j) noexcept { static_cast<slot*>(j)->release(); }

  // Owned (new[] in the constructor): no std::unique_ptr, whose header
  // brings <ostream> into every file that includes a pool (#11).
  slot* const slots_;
  const std::size_t mask_;
  alignas(false_sharing_range) std::atomic<std::uint64_t> enqueue_pos_{0};
  alignas(false_sharing_range) std::atomic<std::uint64_t> dequeue_pos_{0};
};

}  // namespace fjord::detail
