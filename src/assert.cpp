#include "fjord/detail/assert.hpp"

#include <cstdio>
#include <cstdlib>

namespace fjord::detail {

void assertion_failed(const char* condition, const char* message, const char* file,
                      int line) noexcept {
  // One fprintf: stderr is unbuffered, so a single call keeps the line whole
  // when several threads fail at once.
  std::fprintf(stderr, "fjord: internal assertion failed at %s:%d: %s (%s)\n", file, line, message,
               condition);
  std::abort();
}

}  // namespace fjord::detail
