// Built by run.sh without fjord's CMake flags, at several -O levels: a
// million sequential synchronous co_awaits and a million-deep nested chain
// must run on a default 8 MiB stack in every build (transfer.hpp).

#include <cstdio>

#include "../support/deep_chains.hpp"
#include "fjord/sync_wait.hpp"

int main() {
  constexpr int n = 1000000;
  const long s = fjord::sync_wait(fjord_test::sequential(n));
  const long d = fjord::sync_wait(fjord_test::nested(n));
  std::printf("sequential %ld nested %ld\n", s, d);
  return s == n && d == n ? 0 : 1;
}
