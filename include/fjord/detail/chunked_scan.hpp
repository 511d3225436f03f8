#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <exception>
#include <memory>
#include <optional>
#include <thread>
#include <utility>

#include "fjord/detail/config.hpp"
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
  // Release stores publish `aggregate` (aggregate_ready) and then
  // `inclusive` (prefix_ready); a reader loads state with acquire before it
  // reads the value the state names. Each value is written once, by the
  // tile's owner, before the store that names it.
  std::atomic<int> state{pending};
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
// value (the last running value) is the tile's inclusive prefix. Every tile
// waits only on earlier tiles, which are held by running participants, so
// the scan makes progress with any number of them. combine(S, S) must be
// associative. Deterministic: look-back waits for the inclusive prefix of
// the tile just before, so the grouping is fixed by the tiles alone.
template <class S, class Reduce, class Apply, class Combine>
class chunked_scan {
 public:
  chunked_scan(std::size_t n, std::size_t tile_size, bool deterministic, std::optional<S> init,
               Reduce& reduce, Apply& apply, Combine& combine)
      : n_(n),
        tile_size_(tile_size),
        tiles_((n + tile_size - 1) / tile_size),
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
    tile_ = std::make_unique<scan_tile<S>[]>(tiles_);
    if (tiles_ == 1) {
      participate(true);
    } else {
      enter_pool(
          policy, [&](std::size_t workers) { spawn(std::min(workers, tiles_), true); },
          [&] { participate(true); });
    }
    return std::move(tile_[tiles_ - 1].inclusive);
  }

 private:
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
      // Relaxed: `failed_` is a hint to stop early; the exception itself
      // reaches the caller through join. Tickets need only be unique.
      if (failed_.load(std::memory_order_relaxed)) {
        return;
      }
      const std::size_t t = next_.fetch_add(1, std::memory_order_relaxed);
      if (t >= tiles_) {
        return;
      }
      try {
        if (!process(t)) {
          return;
        }
      } catch (...) {
        failed_.store(true, std::memory_order_relaxed);
        tile_[t].state.store(scan_tile<S>::abandoned, std::memory_order_release);
        throw;
      }
    }
  }

  // Scans tile t; false if an earlier tile was abandoned.
  bool process(std::size_t t) {
    struct in_tile {
      in_tile() noexcept { ++scan_tiles_in_progress; }
      ~in_tile() { --scan_tiles_in_progress; }
      in_tile(const in_tile&) = delete;
      in_tile& operator=(const in_tile&) = delete;
    } guard;
    const std::size_t b = t * tile_size_;
    const std::size_t e = std::min(n_, b + tile_size_);
    scan_tile<S>& tile = tile_[t];
    if (!deterministic_ && (t == 0 || ready(t - 1))) {
      // The exclusive prefix is known already (always so on one worker):
      // one pass, and the tile's last running value is its inclusive prefix.
      std::optional<S> exclusive = t == 0 ? init_ : std::optional<S>(*tile_[t - 1].inclusive);
      tile.inclusive.emplace(apply_(b, e, exclusive));
      tile.state.store(scan_tile<S>::prefix_ready, std::memory_order_release);
      return true;
    }
    S aggregate = reduce_(b, e);
    std::optional<S> exclusive;
    if (t == 0) {
      exclusive = init_;
    } else {
      if (!deterministic_) {
        tile.aggregate.emplace(aggregate);
        tile.state.store(scan_tile<S>::aggregate_ready, std::memory_order_release);
      }
      exclusive = look_back(t);
      if (!exclusive) {
        tile.state.store(scan_tile<S>::abandoned, std::memory_order_release);
        return false;
      }
    }
    tile.inclusive.emplace(exclusive ? combine_(*exclusive, std::move(aggregate))
                                     : std::move(aggregate));
    tile.state.store(scan_tile<S>::prefix_ready, std::memory_order_release);
    apply_(b, e, exclusive);
    return true;
  }

  bool ready(std::size_t j) const noexcept {
    return tile_[j].state.load(std::memory_order_acquire) == scan_tile<S>::prefix_ready;
  }

  // The inclusive prefix of tile t - 1, or nullopt if the scan failed.
  std::optional<S> look_back(std::size_t t) {
    std::optional<S> later;  // aggregates of the tiles between j and t
    std::size_t j = t - 1;
    for (int spins = 0;;) {
      const int state = tile_[j].state.load(std::memory_order_acquire);
      if (state == scan_tile<S>::prefix_ready) {
        const S& before = *tile_[j].inclusive;
        return later ? combine_(before, std::move(*later)) : S(before);
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
        continue;
      }
      if (state == scan_tile<S>::abandoned || failed_.load(std::memory_order_relaxed)) {
        return std::nullopt;
      }
      // Tile j is held by a running participant: spin, then let the OS run
      // it should it have been preempted.
      if (++spins < 64) {
        cpu_relax();
      } else {
        std::this_thread::yield();
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
  std::atomic<bool> failed_{false};
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
