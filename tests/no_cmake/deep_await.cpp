// Built by run.sh without fjord's CMake flags, at several -O levels: a
// million sequential synchronous co_awaits and a million-deep nested chain
// must run on a default 8 MiB stack in every build (transfer.hpp).

#include <cstdio>

#include "fjord/sync_wait.hpp"
#include "fjord/task.hpp"

namespace {

fjord::task<int> leaf(int v) {
  co_return v;
}

fjord::task<long> sequential(int n) {
  long sum = 0;
  for (int i = 0; i < n; ++i) {
    sum += co_await leaf(1);
  }
  co_return sum;
}

fjord::task<long> nested(int depth) {
  if (depth == 0) {
    co_return 0;
  }
  co_return 1 + co_await nested(depth - 1);
}

}  // namespace

int main() {
  constexpr int n = 1000000;
  const long s = fjord::sync_wait(sequential(n));
  const long d = fjord::sync_wait(nested(n));
  std::printf("sequential %ld nested %ld\n", s, d);
  return s == n && d == n ? 0 : 1;
}
