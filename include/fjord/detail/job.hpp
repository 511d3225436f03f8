#pragma once

#include <atomic>
#include <cstdint>

namespace fjord::detail {

// The unit the scheduler moves around: an intrusive header embedded in
// whatever owns the work (a stack frame for join, a pooled block for
// task_group and post, a shared state for submit). Enqueueing never allocates.
struct job {
  using execute_fn = void (*)(job*) noexcept;

  // The link is left uninitialised: a join's job never enters a queue that
  // reads it, and every queue writes it before reading (one store fewer on
  // the fork-join path, where stores are what a busy core runs short of).
  explicit job(execute_fn fn) noexcept : execute(fn) {}

  // The link for the injection queues, accessed atomically.
  std::atomic_ref<job*> next() noexcept { return std::atomic_ref<job*>(link); }

  execute_fn execute;
  // Public only so that a job is standard-layout (a task's promise holds one
  // in a union, promise_base::make_start_job): reach it through next().
  job* link;
};

// Jobs linked through next() in the order appended, built by one thread
// before it hands them on (to a queue's push_chain, a resume_chain).
struct job_chain {
  job* first = nullptr;
  job* last = nullptr;
  std::uint64_t count = 0;

  void push_back(job* j) noexcept {
    j->next().store(nullptr, std::memory_order_relaxed);
    if (last == nullptr) {
      first = j;
    } else {
      last->next().store(j, std::memory_order_relaxed);
    }
    last = j;
    ++count;
  }
};

inline void run_job(job* j) noexcept {
  j->execute(j);
}

}  // namespace fjord::detail
