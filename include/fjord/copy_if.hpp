#pragma once

#include <algorithm>
#include <cstddef>
#include <functional>
#include <iterator>
#include <optional>

#include "fjord/detail/chunked_scan.hpp"
#include "fjord/detail/index_range.hpp"
#include "fjord/execution.hpp"

namespace fjord {

/// Copies the elements for which pred is true, in order, to out; returns the
/// end of the output. With fjord::par this is a scan of match counts: each
/// tile counts its matches, learns how many earlier tiles wrote, and copies
/// (pred runs twice per element, on a tile still in cache).
template <execution_policy Policy, std::random_access_iterator In, std::random_access_iterator Out,
          class Pred>
Out copy_if(Policy&& policy, In first, In last, Out out, Pred pred) {
  const std::size_t n = detail::checked_length(first, last, "fjord::copy_if");
  if constexpr (detail::is_sequenced_v<Policy>) {
    return std::copy_if(first, last, out, pred);
  } else {
    auto count = [&](std::size_t b, std::size_t e) {
      std::size_t matches = 0;
      for (std::size_t i = b; i < e; ++i) {
        matches += pred(*detail::index_at(first, i)) ? 1 : 0;
      }
      return matches;
    };
    auto copy = [&](std::size_t b, std::size_t e, const std::optional<std::size_t>& before) {
      std::size_t written = *before;
      Out to = detail::index_at(out, written);
      for (std::size_t i = b; i < e; ++i) {
        auto&& x = *detail::index_at(first, i);
        if (pred(x)) {
          *to = x;
          ++to;
          ++written;
        }
      }
      return written;
    };
    auto add = [](std::size_t a, std::size_t b) { return a + b; };
    detail::chunked_scan<std::size_t, decltype(count), decltype(copy), decltype(add)> scan(
        n, detail::scan_tile_size<std::size_t>(policy), false, std::size_t{0}, count, copy, add);
    return detail::index_at(out, *scan.run(policy));
  }
}

}  // namespace fjord
