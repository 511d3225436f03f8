#pragma once

#include <atomic>

namespace fjord::detail {

// The unit the scheduler moves around: an intrusive header embedded in
// whatever owns the work (a stack frame for join, a pooled block for
// task_group and post, a shared state for submit). Enqueueing never allocates.
struct job {
  using execute_fn = void (*)(job*) noexcept;

  explicit job(execute_fn fn) noexcept : execute(fn) {}

  execute_fn execute;
  // Link for the injection queues; unused while the job sits in a deque.
  std::atomic<job*> next{nullptr};
};

inline void run_job(job* j) noexcept {
  j->execute(j);
}

}  // namespace fjord::detail
