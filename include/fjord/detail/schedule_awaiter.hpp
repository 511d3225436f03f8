#pragma once

#include <coroutine>
#include <cstddef>

#include "fjord/detail/pool_core.hpp"
#include "fjord/detail/resume_job.hpp"
#include "fjord/detail/worker.hpp"

namespace fjord::detail {

// co_await pool.schedule(): continues the coroutine on one of the pool's
// workers. Already on one: carries on without suspending. The job lives in
// this awaiter, inside the suspended frame: no allocation. From a thread
// outside the pool after its destruction began, the co_await throws
// fjord::shutdown_error in the coroutine. With a priority, the coroutine
// waits in that level's queue.
class schedule_awaiter : resume_job {
 public:
  explicit schedule_awaiter(pool_core& p, priority level = priority::normal) noexcept
      : pool_(&p), level_(level) {}

  bool await_ready() const noexcept { return current_worker_of(pool_) != nullptr; }
  void await_suspend(std::coroutine_handle<> h) {
    handle = h;
    if (level_ == priority::normal) {
      pool_->inject(this, this, 1);
    } else {
      pool_->inject_at_level(level_, this, this, 1);
    }
  }
  void await_resume() const noexcept {}

 private:
  pool_core* pool_;
  priority level_;
};

// co_await pool.schedule_on(thread): continues the coroutine on that thread
// of the pool (pool_core::inject_to_thread). Already on it: carries on.
class schedule_on_awaiter : resume_job {
 public:
  schedule_on_awaiter(pool_core& p, std::size_t thread) noexcept : pool_(&p), thread_(thread) {}

  bool await_ready() const noexcept {
    const worker* w = current_worker_of(pool_);
    return w != nullptr && w->index == thread_;
  }
  void await_suspend(std::coroutine_handle<> h) {
    handle = h;
    pool_->inject_to_thread(thread_, this);
  }
  void await_resume() const noexcept {}

 private:
  pool_core* pool_;
  std::size_t thread_;
};

// co_await fjord::yield(): lets the worker run its other work first. The
// coroutine goes to the back of its pool's injection queue, which a worker
// reads after its own deque runs dry (or every few dozen jobs). Off a pool
// there is nothing to yield to, and it does not suspend.
class yield_awaiter : resume_job {
 public:
  bool await_ready() const noexcept { return current_worker == nullptr; }
  void await_suspend(std::coroutine_handle<> h) {
    handle = h;
    current_worker->pool->inject(this, this, 1);
  }
  void await_resume() const noexcept {}
};

}  // namespace fjord::detail
