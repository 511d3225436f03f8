#pragma once

#include "fjord/task.hpp"

// The coroutine chains the no-stack tests run: in the test suite
// (task_test.cpp) and in the programs built without fjord's CMake flags
// (no_cmake/deep_await.cpp), which include this by path.
namespace fjord_test {

// n levels, each awaiting the next: a nested chain of n frames.
inline fjord::task<long> nested(int n) {
  if (n == 0) {
    co_return 0;
  }
  co_return 1 + co_await nested(n - 1);
}

inline fjord::task<int> leaf(int v) {
  co_return v;
}

// n synchronous awaits one after another in one frame.
inline fjord::task<long> sequential(int n) {
  long sum = 0;
  for (int i = 0; i < n; ++i) {
    sum += co_await leaf(1);
  }
  co_return sum;
}

}  // namespace fjord_test
