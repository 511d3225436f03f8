#pragma once

#include <utility>
#include <vector>

#include "fjord/pool.hpp"
#include "fjord/sync_wait.hpp"
#include "fjord/task.hpp"
#include "fjord/when_all.hpp"

namespace fjord_test {

// make(0) ... make(n - 1), as a vector of tasks.
template <class Make>
std::vector<fjord::task<void>> many(int n, Make make) {
  std::vector<fjord::task<void>> tasks;
  tasks.reserve(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) {
    tasks.push_back(make(i));
  }
  return tasks;
}

// Hops onto p, awaits all the tasks at once (when_all spreads them over the
// workers), and returns when every one has finished; from a thread that is
// not one of p's workers.
inline void run_together(fjord::pool& p, std::vector<fjord::task<void>> tasks) {
  auto all = [](fjord::pool& pool, std::vector<fjord::task<void>> ts) -> fjord::task<void> {
    co_await pool.schedule();
    co_await fjord::when_all(std::move(ts));
  };
  fjord::sync_wait(all(p, std::move(tasks)));
}

}  // namespace fjord_test
