#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <utility>

#include "fjord/detail/cycle_clock.hpp"
#include "fjord/detail/first_error.hpp"
#include "fjord/detail/pool_entry.hpp"
#include "fjord/detail/worker.hpp"
#include "fjord/execution.hpp"
#include "fjord/join.hpp"

// How the index-range algorithms cut [0, n) into leaves. Design note:
// docs/algorithms.md.

namespace fjord::detail {

// Work the caller does alone before it involves the pool: a fraction of
// the cost of waking a worker. In cycle_clock ticks: ~5 us on a 3 GHz TSC.
inline constexpr std::uint64_t prefix_budget = std::uint64_t{1} << 14;

// From a thread that is not one of the pool's workers, entering the pool
// costs a wake-up W (27 us here, `idle_wake` in bench/REPORT.md), and two
// workers only win it back on at least 2W of work left. So there the
// prefix goes on while the whole call, estimated from the rate so far,
// would end within this many ticks: ~44 us at 3 GHz, ~65 us on this
// machine's 2 GHz TSC, 1.6 to 2.4 W (docs/algorithms.md).
inline constexpr std::uint64_t outside_sequential_limit = std::uint64_t{1} << 17;

// A first element measured below this many ticks is cheap enough that the
// measurement is mostly overhead (run_prefix).
inline constexpr std::uint64_t first_element_overhead_bound = 256;

// Whether entering the pool may wake a worker: the caller is not one of the
// target pool's workers. (Also when the caller will join the pool for the
// call: it then forks as a worker does and waits for no wake-up, but
// measured on 1,000 elements of 16 rounds of work, going parallel after the
// 5 us prefix took 1.23x the sequential call, the workers' searches and
// steals costing more than they gave.)
inline bool entry_may_wake(const parallel_policy& policy) noexcept {
  const worker* w = current_worker;
  if (w == nullptr) {
    return true;
  }
  pool* p = policy.target();
  return p != nullptr && &pool_access::core(*p) != w->pool;
}

// Leaf size of a deterministic reduction with no grain: fixed, so the
// combining tree depends on n alone.
inline constexpr std::size_t deterministic_leaf = 2048;

// Runs leaves over a prefix of [0, n) on the calling thread until all of it
// ran or prefix_budget passed; returns how far it got (at least 1). The
// first leaf is one element, so a single heavy element is enough to go
// parallel; each later leaf is sized from the rate seen so far to end near
// the budget, so cheap elements cost two or three clock reads in all. With
// from_outside (entry_may_wake), it goes on past the budget while the rest,
// estimated anew at every clock read, would end within
// outside_sequential_limit; leaves then last about prefix_budget each, so a
// rest slower than its estimate is handed to the pool within one of them.
template <class Leaf>
std::size_t run_prefix(std::size_t n, Leaf& leaf, bool from_outside) {
  const std::uint64_t start = cycle_clock::now();
  leaf(std::size_t{0}, std::size_t{1});
  std::size_t done = 1;
  while (done < n) {
    const std::uint64_t elapsed = cycle_clock::now() - start;
    std::uint64_t until = prefix_budget;
    if (elapsed >= prefix_budget) {
      if (!from_outside || elapsed >= outside_sequential_limit) {
        break;
      }
      // In double: (n - done) * elapsed may not fit 64 bits.
      const double rest =
          static_cast<double>(n - done) * static_cast<double>(elapsed) / static_cast<double>(done);
      if (static_cast<double>(elapsed) + rest >= static_cast<double>(outside_sequential_limit)) {
        break;
      }
      until = std::min(outside_sequential_limit, elapsed + prefix_budget);
    }
    // left < 2^17, so left * done fits 64 bits while done < 2^47; past
    // that, divide first (the estimate loses nothing that matters).
    const std::uint64_t left = until - elapsed;
    std::uint64_t spent = std::max<std::uint64_t>(elapsed, 1);
    if (done == 1 && elapsed < first_element_overhead_bound) {
      // One cheap element measures mostly the clock reads and the leaf's
      // call (~100 ticks here, against ~0.5 a summed int): sized from it,
      // a thousand ints would take three leaves and three clock reads.
      // Below the bound, count it as a quarter: an element that truly costs
      // that much makes the next leaf at most four budgets long.
      spent = std::max<std::uint64_t>(spent / 4, 1);
    }
    const std::uint64_t fits =
        done < (std::uint64_t{1} << 47) ? left * done / spent : done / spent * left;
    const std::size_t block = std::clamp<std::size_t>(static_cast<std::size_t>(fits), 1, n - done);
    leaf(done, done + block);
    done += block;
  }
  return done;
}

// Rayon's adaptive splitter: `splits` halves at each split, and a piece that
// another worker stole starts again from the worker count, so the range is
// cut about 2 * workers ways when nobody is idle and further only where
// thieves come for work.
template <class Leaf>
void adaptive_for(std::size_t b, std::size_t e, std::size_t splits, std::size_t workers,
                  Leaf& leaf) {
  if (splits > 0 && e - b >= 2) {
    const std::size_t mid = b + (e - b) / 2;
    const std::size_t half = splits / 2;
    const worker* const origin = current_worker;
    fjord::join([&] { adaptive_for(b, mid, half, workers, leaf); },
                [&] {
                  const bool stolen = current_worker != origin;
                  adaptive_for(mid, e, stolen ? std::max(workers, half) : half, workers, leaf);
                });
    return;
  }
  leaf(b, e);
}

// Where a fixed split cuts [b, e), e - b > grain: into the fewest pieces
// of at most `grain` elements, p = ceil((e - b) / grain), of near-equal
// length, the left part taking p / 2 of them. Halving instead would leave
// pieces of grain / 2 to grain: up to twice as many leaves, each paying a
// fork and a restart of the hardware prefetcher (a sum over pieces of
// 1,000 ints went from 4.6 to 4.1 ms). Both parts split the same way
// again, so there are exactly p leaves, and the tree depends on e - b and
// grain alone.
inline std::size_t fixed_split(std::size_t b, std::size_t e, std::size_t grain) noexcept {
  const std::size_t n = e - b;
  const std::size_t pieces = n / grain + (n % grain != 0 ? 1 : 0);
  const std::size_t piece = n / pieces + (n % pieces != 0 ? 1 : 0);
  return b + (pieces / 2) * piece;
}

// Splits down to pieces of at most `grain` elements.
template <class Leaf>
void fixed_for(std::size_t b, std::size_t e, std::size_t grain, Leaf& leaf) {
  if (e - b > grain) {
    const std::size_t mid = fixed_split(b, e, grain);
    fjord::join([&] { fixed_for(b, mid, grain, leaf); }, [&] { fixed_for(mid, e, grain, leaf); });
    return;
  }
  leaf(b, e);
}

template <class T, class Leaf, class Combine>
T adaptive_reduce(std::size_t b, std::size_t e, std::size_t splits, std::size_t workers, Leaf& leaf,
                  Combine& combine) {
  if (splits > 0 && e - b >= 2) {
    const std::size_t mid = b + (e - b) / 2;
    const std::size_t half = splits / 2;
    const worker* const origin = current_worker;
    auto [left, right] =
        fjord::join([&] { return adaptive_reduce<T>(b, mid, half, workers, leaf, combine); },
                    [&] {
                      const bool stolen = current_worker != origin;
                      return adaptive_reduce<T>(mid, e, stolen ? std::max(workers, half) : half,
                                                workers, leaf, combine);
                    });
    return combine(std::move(left), std::move(right));
  }
  return leaf(b, e);
}

// The tree of a fixed reduction depends on e - b and the grain only. With
// parallel false it runs on the calling thread and gives the same bits.
template <class T, class Leaf, class Combine>
T fixed_reduce(std::size_t b, std::size_t e, std::size_t grain, bool parallel, Leaf& leaf,
               Combine& combine) {
  if (e - b > grain) {
    const std::size_t mid = fixed_split(b, e, grain);
    auto left_half = [&] { return fixed_reduce<T>(b, mid, grain, parallel, leaf, combine); };
    auto right_half = [&] { return fixed_reduce<T>(mid, e, grain, parallel, leaf, combine); };
    if (parallel) {
      auto [left, right] = fjord::join(left_half, right_half);
      return combine(std::move(left), std::move(right));
    }
    T left = left_half();
    return combine(std::move(left), right_half());
  }
  return leaf(b, e);
}

// leaf, run through `errors` (skipped once a piece failed).
template <class T, class Leaf>
auto guard(first_error& errors, Leaf& leaf) {
  return [&errors, &leaf](std::size_t b, std::size_t e) -> T {
    return errors.run([&]() -> T { return leaf(b, e); });
  };
}

// Calls leaf(b, e) over disjoint pieces covering [0, n), in parallel. Once
// the caller's prefix ran, stopped() true skips the rest (find_if found a
// match there). After an exception from a leaf, pieces not yet started are
// skipped and the first exception reaches the caller.
template <class Leaf, class Stop = decltype([] { return false; })>
void for_each_piece(const parallel_policy& policy, std::size_t n, Leaf&& leaf, Stop stopped = {}) {
  if (n == 0) {
    return;
  }
  const std::size_t grain = policy.grain();
  if (grain != 0 && n <= grain) {
    leaf(std::size_t{0}, n);
    return;
  }
  std::size_t done = 0;
  if (grain == 0) {
    done = run_prefix(n, leaf, entry_may_wake(policy));
    if (done == n || stopped()) {
      return;
    }
  }
  first_error errors;
  auto guarded = guard<void>(errors, leaf);
  try {
    enter_pool(
        policy,
        [&](std::size_t workers) {
          if (grain != 0) {
            fixed_for(0, n, grain, guarded);
          } else {
            adaptive_for(done, n, workers, workers, guarded);
          }
        },
        [&] { leaf(done, n); });
  } catch (...) {
    errors.rethrow();
  }
}

// Reduces [0, n), n > 0: leaf(b, e) gives the value of a non-empty piece and
// combine(left, right) joins neighbours, always in index order, so combine
// needs to be associative but not commutative. Exceptions as for_each_piece.
template <class T, class Leaf, class Combine>
T reduce_pieces(const parallel_policy& policy, std::size_t n, Leaf&& leaf, Combine&& combine) {
  if (policy.is_deterministic() || policy.grain() != 0) {
    const std::size_t grain = policy.grain() != 0 ? policy.grain() : deterministic_leaf;
    if (n <= grain) {
      return leaf(std::size_t{0}, n);
    }
    first_error errors;
    auto guarded = guard<T>(errors, leaf);
    try {
      return enter_pool(
          policy, [&](std::size_t) { return fixed_reduce<T>(0, n, grain, true, guarded, combine); },
          [&] { return fixed_reduce<T>(0, n, grain, false, leaf, combine); });
    } catch (...) {
      errors.rethrow();
    }
  }
  std::optional<T> prefix;
  auto accumulate = [&](std::size_t b, std::size_t e) {
    if (prefix) {
      T sum = combine(std::move(*prefix), leaf(b, e));
      prefix.reset();
      prefix.emplace(std::move(sum));
    } else {
      prefix.emplace(leaf(b, e));
    }
  };
  const std::size_t done = run_prefix(n, accumulate, entry_may_wake(policy));
  if (done == n) {
    return std::move(*prefix);
  }
  first_error errors;  // made only once the pool is needed: the prefix is the hot path
  auto guarded = guard<T>(errors, leaf);
  try {
    T rest = enter_pool(
        policy,
        [&](std::size_t workers) {
          return adaptive_reduce<T>(done, n, workers, workers, guarded, combine);
        },
        [&] { return leaf(done, n); });
    return combine(std::move(*prefix), std::move(rest));
  } catch (...) {
    errors.rethrow();
  }
}

}  // namespace fjord::detail
