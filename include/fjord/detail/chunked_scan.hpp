#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <memory>
#include <optional>
#include <thread>
#include <utility>

#include "fjord/detail/config.hpp"
#include "fjord/detail/cycle_clock.hpp"
#include "fjord/detail/first_error.hpp"
#include "fjord/detail/pool_entry.hpp"
#include "fjord/execution.hpp"
#include "fjord/join.hpp"

// A single-pass parallel scan: Merrill and Garland, "Single-pass Parallel
// Prefix Scan with Decoupled Look-back" (NVIDIA NVR-2016-002), on CPU
// workers. Design note with the deadlock argument: docs/algorithms.md.

namespace fjord::detail {

// Tiles of a scan this thread is inside (a tile's user code may run nested
// parallel work, and a worker helping there must not take a later tile of a
// scan and wait for the tile buried under it).
inline thread_local int scan_tiles_in_progress = 0;

template <class S>
struct alignas(false_sharing_range) scan_tile {
  enum : int { pending, aggregate_ready, prefix_ready, abandoned };
  // Stores publish `aggregate` (aggregate_ready, release) and then
  // `inclusive` (prefix_ready, seq_cst: it is also half of the deferral
  // handshake below); a reader loads state with acquire before it reads the
  // value the state names. Each value is written once, before the store
  // that names it.
  std::atomic<int> state{pending};
  // Set by an owner that gave up waiting for its exclusive prefix: whoever
  // publishes the prefix of the tile before finishes this one. The two
  // sides meet as in Dekker's algorithm (docs/algorithms.md), so the flag
  // and the state it is paired with are accessed seq_cst.
  std::atomic<bool> deferred{false};
  std::optional<S> aggregate;  // this tile's elements alone
  std::optional<S> inclusive;  // init and every element up to this tile's end
};

// Scans [0, n) in tiles taken in index order from a shared counter. For each
// tile: reduce(b, e) -> S gives its aggregate, which is published; the
// exclusive prefix is then found by looking back over earlier tiles
// (adding aggregates until a tile with its inclusive prefix is found), the
// tile's own inclusive prefix is published, and apply(b, e, exclusive)
// writes the output from the tile, which is still in cache. When the tile
// before is complete already, the reduction is skipped: apply's return
// value (the last running value) is the tile's inclusive prefix.
// combine(S, S) must be associative. Deterministic: look-back waits for the
// inclusive prefix of the tile just before, so the grouping is fixed by the
// tiles alone.
//
// A participant waits for an earlier tile only for a while (wait_budget):
// then it defers its tile to whoever publishes the prefix before it and
// leaves. So a wait never blocks for good, even when the tile waited for is
// held by a thread that needs something buried under the waiter (nested
// parallel work in the user's function).
template <class S, class Reduce, class Apply, class Combine>
class chunked_scan {
 public:
  chunked_scan(std::size_t n, std::size_t tile_size, bool deterministic, std::optional<S> init,
               Reduce& reduce, Apply& apply, Combine& combine)
      : n_(n),
        tile_size_(tile_size),
        tiles_(n / tile_size + (n % tile_size != 0 ? 1 : 0)),
        deterministic_(deterministic),
        init_(std::move(init)),
        reduce_(reduce),
        apply_(apply),
        combine_(combine) {}

  // The inclusive total: init combined with every element (nullopt for an
  // empty range with no init).
  std::optional<S> run(const parallel_policy& policy) {
    if (tiles_ == 0) {
      return init_;
    }
    if (tiles_ == 1) {
      return apply_(0, n_, init_);  // one pass on the caller, no shared state
    }
    tile_ = std::make_unique<scan_tile<S>[]>(tiles_);
    try {
      enter_pool(
          policy, [&](std::size_t workers) { spawn(std::min(workers, tiles_), true); },
          [&] { participate(true); });
    } catch (...) {
      errors_.rethrow();
    }
    return std::move(tile_[tiles_ - 1].inclusive);
  }

 private:
  // How long a participant waits for an earlier tile before it defers its
  // own, at least: far longer than a tile of cheap elements takes (tens of
  // microseconds), in cycle_clock ticks (~0.7 ms at 3 GHz); a tile of
  // expensive elements waits 8 times its own reduction.
  static constexpr std::uint64_t wait_budget = std::uint64_t{1} << 21;

  // k participants from a join tree: idle workers steal the right halves.
  void spawn(std::size_t k, bool initiator) {
    if (k <= 1) {
      participate(initiator);
      return;
    }
    fjord::join([&] { spawn(k - k / 2, initiator); }, [&] { spawn(k / 2, false); });
  }

  void participate(bool initiator) {
    if (!initiator && scan_tiles_in_progress > 0) {
      return;  // see scan_tiles_in_progress
    }
    for (;;) {
      // The first exception stops every participant at its next ticket and
      // is the one the caller gets (first_error). Tickets need only be
      // unique: relaxed.
      if (errors_.failed()) {
        return;
      }
      const std::size_t t = next_.fetch_add(1, std::memory_order_relaxed);
      if (t >= tiles_) {
        return;
      }
      try {
        if (!errors_.run([&] { return process(t); })) {
          return;
        }
      } catch (...) {
        // A tile already published stays so (its value is valid; the throw
        // came from its output pass or a later tile it took over).
        if (tile_[t].state.load(std::memory_order_relaxed) != scan_tile<S>::prefix_ready) {
          tile_[t].state.store(scan_tile<S>::abandoned, std::memory_order_release);
        }
        throw;
      }
    }
  }

  std::pair<std::size_t, std::size_t> bounds(std::size_t t) const noexcept {
    const std::size_t b = t * tile_size_;  // t < tiles_, so b < n_
    return {b, b + std::min(tile_size_, n_ - b)};
  }

  // Scans tile t; false when this participant should stop (the scan failed,
  // or the tile was deferred to another thread).
  bool process(std::size_t t) {
    struct in_tile {
      in_tile() noexcept { ++scan_tiles_in_progress; }
      ~in_tile() { --scan_tiles_in_progress; }
      in_tile(const in_tile&) = delete;
      in_tile& operator=(const in_tile&) = delete;
    } guard;
    const auto [b, e] = bounds(t);
    scan_tile<S>& tile = tile_[t];
    if (!deterministic_ && (t == 0 || ready(t - 1))) {
      // The exclusive prefix is known already (always so on one worker):
      // one pass, and the tile's last running value is its inclusive prefix.
      const std::optional<S> exclusive = t == 0 ? init_ : tile_[t - 1].inclusive;
      tile.inclusive.emplace(apply_(b, e, exclusive));
      publish(t);
      return true;
    }
    const std::uint64_t reduce_start = cycle_clock::now();
    S aggregate = reduce_(b, e);
    // Tiles of expensive elements wait in proportion: a wait shorter than
    // a tile would defer on every slow neighbour.
    const std::uint64_t budget = std::max(wait_budget, 8 * (cycle_clock::now() - reduce_start));
    if (t == 0) {
      tile.inclusive.emplace(init_ ? combine_(*init_, std::move(aggregate)) : std::move(aggregate));
      publish(t);
      apply_(b, e, init_);
      return true;
    }
    tile.aggregate.emplace(std::move(aggregate));
    tile.state.store(scan_tile<S>::aggregate_ready, std::memory_order_release);
    std::optional<S> exclusive;
    switch (look_back(t, budget, exclusive)) {
      case wait_result::failed:
        tile.state.store(scan_tile<S>::abandoned, std::memory_order_release);
        return false;
      case wait_result::timed_out:
        tile.deferred.store(true, std::memory_order_seq_cst);
        if (tile_[t - 1].state.load(std::memory_order_seq_cst) != scan_tile<S>::prefix_ready ||
            !tile.deferred.exchange(false, std::memory_order_seq_cst)) {
          return false;  // the publisher of tile t - 1 finishes tile t
        }
        exclusive = tile_[t - 1].inclusive;  // reclaimed: finish it here
        break;
      case wait_result::found:
        break;
    }
    tile.inclusive.emplace(combine_(*exclusive, S(*tile.aggregate)));
    publish(t);
    apply_(b, e, exclusive);
    return true;
  }

  bool ready(std::size_t j) const noexcept {
    return tile_[j].state.load(std::memory_order_acquire) == scan_tile<S>::prefix_ready;
  }

  // Marks tile t's inclusive prefix published, then finishes the tiles
  // after it that were deferred, in order: for each, its prefix is the one
  // just published combined with its aggregate (so deterministic stays
  // deterministic), then its output is written here.
  void publish(std::size_t t) {
    tile_[t].state.store(scan_tile<S>::prefix_ready, std::memory_order_seq_cst);
    for (std::size_t k = t + 1;
         k < tiles_ && !errors_.failed() && tile_[k].deferred.load(std::memory_order_seq_cst) &&
         tile_[k].deferred.exchange(false, std::memory_order_seq_cst);
         ++k) {
      const std::optional<S> exclusive = tile_[k - 1].inclusive;
      tile_[k].inclusive.emplace(combine_(*exclusive, S(*tile_[k].aggregate)));
      tile_[k].state.store(scan_tile<S>::prefix_ready, std::memory_order_seq_cst);
      const auto [b, e] = bounds(k);
      apply_(b, e, exclusive);
    }
  }

  enum class wait_result { found, failed, timed_out };

  // Sets `exclusive` to the inclusive prefix of tile t - 1.
  wait_result look_back(std::size_t t, std::uint64_t budget, std::optional<S>& exclusive) {
    std::optional<S> later;  // aggregates of the tiles between j and t
    std::size_t j = t - 1;
    std::uint64_t since = cycle_clock::now();
    for (int spins = 0;;) {
      const int state = tile_[j].state.load(std::memory_order_acquire);
      if (state == scan_tile<S>::prefix_ready) {
        const S& before = *tile_[j].inclusive;
        exclusive.emplace(later ? combine_(before, std::move(*later)) : S(before));
        return wait_result::found;
      }
      if (state == scan_tile<S>::aggregate_ready && !deterministic_) {
        // Tile 0 never publishes an aggregate alone, so j stays >= 1 here.
        const S& part = *tile_[j].aggregate;
        if (later) {
          S sum = combine_(part, std::move(*later));
          later.reset();
          later.emplace(std::move(sum));
        } else {
          later.emplace(part);
        }
        --j;
        spins = 0;
        since = cycle_clock::now();
        continue;
      }
      if (state == scan_tile<S>::abandoned || errors_.failed()) {
        return wait_result::failed;
      }
      // Tile j is held by a participant that is running, or preempted, or
      // blocked on work beneath this frame: spin, yield, then give up.
      if (++spins < 64) {
        cpu_relax();
      } else if (cycle_clock::now() - since < budget) {
        std::this_thread::yield();
      } else {
        return wait_result::timed_out;
      }
    }
  }

  const std::size_t n_;
  const std::size_t tile_size_;
  const std::size_t tiles_;
  const bool deterministic_;
  std::optional<S> init_;
  Reduce& reduce_;
  Apply& apply_;
  Combine& combine_;
  std::unique_ptr<scan_tile<S>[]> tile_;
  alignas(false_sharing_range) std::atomic<std::size_t> next_{0};
  first_error errors_;
};

// Elements per tile: the grain if given, else about 64 KiB of S (a tile is
// scanned twice, the second time from L2), 1,024 to 16,384 elements. Never
// a function of the worker count, so a deterministic scan gives the same
// bits on any pool.
template <class S>
std::size_t scan_tile_size(const parallel_policy& policy) {
  if (policy.grain() != 0) {
    return policy.grain();
  }
  return std::clamp<std::size_t>(std::size_t{65536} / sizeof(S), 1024, 16384);
}

}  // namespace fjord::detail
