#pragma once

#include "fjord/join.hpp"

namespace fjord_test {

// n joins nested in each other's first halves (the second halves return
// 1): n, using about n join frames of stack on whichever thread runs it.
inline int nested_joins(int n) {
  if (n == 0) {
    return 0;
  }
  auto [x, y] = fjord::join([n] { return nested_joins(n - 1); }, [] { return 1; });
  return x + y;
}

}  // namespace fjord_test
