#include <unistd.h>

#include <algorithm>
#include <cstddef>

#include "fjord/detail/streaming_scan.hpp"

namespace fjord::detail {

std::size_t streaming_store_threshold() noexcept {
  static const std::size_t threshold = [] {
    constexpr std::size_t floor = std::size_t{4} << 20;
    long cache = -1;
#ifdef _SC_LEVEL3_CACHE_SIZE
    cache = sysconf(_SC_LEVEL3_CACHE_SIZE);
#endif
    if (cache <= 0) {
      return floor;
    }
    return std::max(floor, static_cast<std::size_t>(cache) / 4 * 3);
  }();
  return threshold;
}

}  // namespace fjord::detail
