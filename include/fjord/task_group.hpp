#pragma once

#include <atomic>
#include <concepts>
#include <exception>
#include <functional>
#include <optional>
#include <stop_token>
#include <type_traits>
#include <utility>

#include "fjord/detail/callable.hpp"
#include "fjord/detail/completion_latch.hpp"
#include "fjord/detail/job_heap.hpp"
#include "fjord/detail/pool_core.hpp"
#include "fjord/detail/worker.hpp"
#include "fjord/pool.hpp"

namespace fjord {

enum class task_group_status {
  complete,  // every child ran
  canceled,  // stop was requested; children not yet started were skipped
};

class task_group;

namespace detail {

template <class F>
struct group_job final : job {
  template <class G>
  group_job(G&& f, task_group* g) : job(&execute), fn(std::forward<G>(f)), group(g) {}
  static void execute(job* j) noexcept;
  F fn;
  task_group* group;
};

}  // namespace detail

// A dynamic set of children on one pool: run() adds a child, wait() returns
// when all have finished (helping with the work if called on a worker of the
// pool), rethrowing the first exception. A child that throws requests stop
// for the group, as does cancel() or the stop_token given at construction;
// children that have not started by then are skipped and wait() reports
// task_group_status::canceled. Children that take a std::stop_token get the
// group's token to poll.
//
// Exactly one thread waits at a time. A group that was canceled stays
// canceled (a std::stop_source cannot be reset): later children are skipped,
// so start a new group for new work. The destructor waits for children that
// are still running; an exception that no wait() rethrew is then counted in
// pool_stats::suppressed_exceptions.
class task_group {
 public:
  // On the calling worker's pool, or fjord::default_pool() from other threads.
  task_group() : task_group(pool_for_caller()) {}
  explicit task_group(pool& p) : pool_(&p.core()) {}
  explicit task_group(std::stop_token stop) : task_group(pool_for_caller(), std::move(stop)) {}
  task_group(pool& p, std::stop_token stop) : pool_(&p.core()) {
    link_.emplace(std::move(stop), canceler{this});
  }
  task_group(const task_group&) = delete;
  task_group& operator=(const task_group&) = delete;

  ~task_group() {
    if (latch_.count() != 0) {
      pool_->wait(latch_);
    }
    if (error_ != nullptr) {
      pool_->count_suppressed();
    }
  }

  template <detail::group_callable F>
  void run(F&& f) {
    using job_t = detail::group_job<std::decay_t<F>>;
    latch_.add(1);
    job_t* j = nullptr;
    try {
      j = detail::construct_job<job_t>(pool_->allocate_job(sizeof(job_t), alignof(job_t)),
                                       std::forward<F>(f), this);
    } catch (...) {
      pool_->count_down(latch_);
      throw;
    }
    try {
      pool_->enqueue(j);
    } catch (...) {
      j->~job_t();
      detail::job_heap::deallocate_unrun(j);
      pool_->count_down(latch_);
      throw;
    }
  }

  // Waits for every child so far; rethrows the first exception of a child.
  task_group_status wait() {
    if (latch_.count() != 0) {
      pool_->wait(latch_);
    }
    if (error_ != nullptr) {
      std::exception_ptr e = std::exchange(error_, nullptr);
      error_claimed_.store(false, std::memory_order_relaxed);
      std::rethrow_exception(e);
    }
    return stop_.stop_requested() ? task_group_status::canceled : task_group_status::complete;
  }

  // Requests stop: children not yet started are skipped.
  void cancel() noexcept { stop_.request_stop(); }
  bool is_canceling() const noexcept { return stop_.stop_requested(); }
  std::stop_token get_stop_token() const noexcept { return stop_.get_token(); }

 private:
  template <class F>
  friend struct detail::group_job;

  struct canceler {
    task_group* group;
    void operator()() const noexcept { group->cancel(); }
  };

  static pool& pool_for_caller() {
    pool* p = current_pool();
    return p != nullptr ? *p : default_pool();
  }

  // The first exception is kept; later ones are counted, and any of them
  // cancels the rest of the group.
  void record(std::exception_ptr e) noexcept {
    if (!error_claimed_.exchange(true, std::memory_order_acq_rel)) {
      error_ = std::move(e);
    } else {
      pool_->count_suppressed();
    }
    stop_.request_stop();
  }

  detail::pool_core* pool_;
  detail::completion_latch latch_;
  std::stop_source stop_;
  std::atomic<bool> error_claimed_{false};
  std::exception_ptr error_;
  std::optional<std::stop_callback<canceler>> link_;
};

template <class F>
void detail::group_job<F>::execute(job* j) noexcept {
  auto* self = static_cast<group_job*>(j);
  task_group* g = self->group;
  if (!g->stop_.stop_requested()) {
    try {
      if constexpr (std::is_invocable_v<F&, std::stop_token>) {
        std::invoke(self->fn, g->stop_.get_token());
      } else {
        std::invoke(self->fn);
      }
    } catch (...) {
      g->record(std::current_exception());
    }
  }
  self->~group_job();
  job_heap::deallocate(self);
  // Last touch of the group: its waiter may destroy it from here on.
  g->pool_->count_down(g->latch_);
}

}  // namespace fjord
