#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <iterator>

#include "fjord/detail/index_range.hpp"
#include "fjord/detail/range_split.hpp"
#include "fjord/execution.hpp"

namespace fjord::detail {

// Which match parallel_find looks for.
enum class find_mode : bool {
  lowest,  // the lowest i with match(i): find_if
  any,     // any i with match(i): any_of, all_of, none_of
};

// An i in [0, n) with match(i) (the lowest one, or any one, as mode says),
// or n. Pieces stop early: each checks, every `stride` elements, whether a
// match below its position is known (find_mode::lowest) or any match at all
// (find_mode::any, which so never scans past a match found elsewhere).
template <class Match>
std::size_t parallel_find(const parallel_policy& policy, std::size_t n, Match& match,
                          find_mode mode) {
  constexpr std::size_t stride = 256;
  // Relaxed: `found` only ever decreases and is only a hint while pieces
  // run; the final value is read after the join, which orders every store.
  std::atomic<std::size_t> found{n};
  auto lower_to = [&](std::size_t i) {
    std::size_t seen = found.load(std::memory_order_relaxed);
    while (i < seen && !found.compare_exchange_weak(seen, i, std::memory_order_relaxed)) {
    }
  };
  for_each_piece(
      policy, n,
      [&](std::size_t b, std::size_t e) {
        for (std::size_t i = b; i < e; i += stride) {
          const std::size_t known = found.load(std::memory_order_relaxed);
          if (known <= i || (mode == find_mode::any && known != n)) {
            return;
          }
          const std::size_t end = std::min(e, i + stride);
          for (std::size_t j = i; j < end; ++j) {
            if (match(j)) {
              lower_to(j);
              return;
            }
          }
        }
      },
      [&] { return found.load(std::memory_order_relaxed) != n; });
  return found.load(std::memory_order_relaxed);
}

}  // namespace fjord::detail
