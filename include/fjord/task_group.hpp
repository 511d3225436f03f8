#pragma once

#include <atomic>
#include <concepts>
#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <optional>
#include <stdexcept>
#include <stop_token>
#include <type_traits>
#include <utility>

#include "fjord/detail/assert.hpp"
#include "fjord/detail/chrono.hpp"
#include "fjord/detail/completion_latch.hpp"
#include "fjord/detail/config.hpp"
#include "fjord/detail/deadline.hpp"
#include "fjord/detail/group_callable.hpp"
#include "fjord/detail/job_heap.hpp"
#include "fjord/detail/lane_ring.hpp"
#include "fjord/detail/lazy_stop_source.hpp"
#include "fjord/detail/pool_core.hpp"
#include "fjord/detail/sync_wait_loop.hpp"
#include "fjord/detail/trace_point.hpp"
#include "fjord/detail/worker.hpp"
#include "fjord/pool.hpp"
#include "fjord/priority.hpp"

namespace fjord {

/// How a task_group ended (wait(), wait_for(), on_finish()).
enum class task_group_status {
  complete,  ///< every child ran
  canceled,  ///< stop was requested; children not yet started were skipped
  timeout,   ///< wait_for / wait_until: children still running at the deadline
};

class task_group;

namespace detail {

// Defined by the tests, to read a group's raw count.
struct task_group_test_access;

// The type-erased callback of task_group::on_finish.
struct group_finisher {
  virtual void run(task_group_status status, std::exception_ptr error) = 0;
  virtual ~group_finisher() = default;
};

template <class F>
struct group_finisher_of final : group_finisher {
  explicit group_finisher_of(F f) : fn(std::move(f)) {}
  void run(task_group_status status, std::exception_ptr error) override {
    std::invoke(fn, status, std::move(error));
  }
  F fn;
};

// What task_group::on_finish stores (decayed) and calls as an lvalue.
template <class F>
concept finish_callback =
    std::constructible_from<std::decay_t<F>, F> && std::invocable < std::decay_t<F>
&, task_group_status, std::exception_ptr > ;

// A child pushed on a worker's deque. Every child shares one execute
// function (the body is reached through a second pointer), so that the
// group's waiter, popping jobs off its own deque, tells its own children
// from other jobs by two compares, and runs them without the count-down
// (task_group::wait_for_children).
struct group_child : job {
  // Runs the child, then destroys and frees it.
  using body_fn = void (*)(group_child*) noexcept;
  group_child(body_fn b, task_group* g) noexcept : job(&execute_anywhere), body(b), group(g) {}
  // Run by a thief, or by any worker as an unrelated job: the body, then
  // the group's count-down.
  static void execute_anywhere(job* j) noexcept;
  body_fn body;
  task_group* group;
};

template <class F>
struct group_job final : group_child {
  template <class G>
  group_job(G&& f, task_group* g) : group_child(&run_body, g), fn(std::forward<G>(f)) {}
  static void run_body(group_child* c) noexcept;
  F fn;
};

// A child run from a thread that is not one of the pool's workers, built in
// a slot of that thread's submission lane as a small post is: no block to
// allocate there and give back from the worker that runs it (the recycler's
// cross-thread round trip was half of such a child's cost). The slot is
// freed before the count-down, the group's last touch.
template <class F>
struct group_slot {
  // Direct-initialised, as group_job's callable is: an explicit copy or
  // move constructor works on both paths.
  template <class G>
  group_slot(G&& f, task_group* g) : fn(std::forward<G>(f)), group(g) {}
  static void execute(job* j) noexcept;
  F fn;
  task_group* group;
};

}  // namespace detail

/// A dynamic set of children on one pool: run() adds a child, wait() returns
/// when all have finished (helping with the work if called on a worker of the
/// pool), rethrowing the first exception. A child that throws requests stop
/// for the group, as does cancel() or the stop_token given at construction;
/// children that have not started by then are skipped and wait() reports
/// task_group_status::canceled. Children that take a std::stop_token get the
/// group's token to poll.
///
/// Exactly one thread waits at a time (wait, wait_for, wait_until and
/// on_finish all count as waiting; run() may race with any of them). A group that was canceled
/// stays canceled (a std::stop_source cannot be reset): later children are skipped, so start a new
/// group for new work. The destructor waits for children that are still running; an exception that
/// no wait() rethrew is then counted in pool_stats::suppressed_exceptions.
///
/// wait_for / wait_until wait at most until a deadline and then return
/// task_group_status::timeout without canceling anything (call cancel() for
/// that). on_finish(callback) runs the callback once, on the thread of the
/// last child to finish (or at once if none is pending), with the group's
/// status and first exception; afterwards the group is finished: run()
/// throws std::logic_error, and wait() returns the status without
/// rethrowing the exception the callback received.
class task_group {
 public:
  /// On the calling worker's pool, or fjord::default_pool() from other threads.
  task_group() : task_group(pool_for_caller()) {}
  /// On pool p.
  explicit task_group(pool& p) : pool_(&detail::pool_access::core(p)) {}
  /// On the calling worker's pool (else the default pool), canceled when `stop` is.
  explicit task_group(std::stop_token stop) : task_group(pool_for_caller(), std::move(stop)) {}
  /// On pool p, canceled when `stop` is.
  task_group(pool& p, std::stop_token stop) : pool_(&detail::pool_access::core(p)) {
    link_.emplace(std::move(stop), canceler{this});
  }
  /// Children wait to start at the given priority (see fjord::priority).
  task_group(pool& p, priority level) : pool_(&detail::pool_access::core(p)), level_(level) {
    detail::check_priority(level);
  }
  task_group(const task_group&) = delete;
  task_group& operator=(const task_group&) = delete;

  ~task_group() {
    if (latch_.count() != inline_done_) {
      settle();
      pool_->wait(latch_);
    }
    if (error_ != nullptr) {
      pool_->count_suppressed();
    }
  }

  /// Adds a child that runs f() (or f(token) if it takes the group's
  /// std::stop_token). Throws std::logic_error once the group has finished
  /// (its on_finish callback ran or is running).
  template <detail::group_callable F>
  void run(F&& f) {
    using job_t = detail::group_job<std::decay_t<F>>;
    const std::uint32_t before = latch_.add(1);
    if ((before == (detail::completion_latch::hold_bit | 1)) ||
        ((before & detail::completion_latch::hold_bit) == 0 &&
         finished_.load(std::memory_order_acquire))) [[unlikely]] {
      // Only the finish hold is left (the callback runs now), or it ran: a
      // plain count-down, which cannot be the one to finish the group.
      pool_->count_down(latch_);
      throw std::logic_error(
          "fjord::task_group::run: the group has finished (its on_finish callback ran or is "
          "running); start a new group for new work");
    }
    detail::worker* const w = detail::current_worker_of(pool_);
    bool lane_refused = false;
    if constexpr (detail::lane_ring::fits_inline<detail::group_slot<std::decay_t<F>>>) {
      if (level_ == priority::normal && w == nullptr) {
        if (run_in_lane(std::forward<F>(f))) {
          return;
        }
        lane_refused = true;  // full, busy or none: do not ask it again below
      }
    }
    job_t* j = nullptr;
    try {
      j = detail::construct_job<job_t>(pool_->allocate_job(w, sizeof(job_t), alignof(job_t)),
                                       std::forward<F>(f), this);
    } catch (...) {
      child_done();
      throw;
    }
    try {
      if (lane_refused) {
        pool_->inject_to_shard(j, j, 1);
      } else {
        pool_->push_or_inject(w, j, level_);
      }
    } catch (...) {
      j->~job_t();
      detail::job_heap::deallocate_unrun(j);
      child_done();
      throw;
    }
  }

  /// Waits for every child so far; rethrows the first exception of a child.
  task_group_status wait() {
    if (latch_.count() != inline_done_) {
      wait_for_children();
    }
    return result();
  }

  /// Waits at most until the deadline: task_group_status::timeout if children
  /// are still running then (nothing is canceled), else as wait(). On a
  /// worker of the pool the wait helps by running other jobs, and returns
  /// only when the job in hand finishes: possibly past the deadline.
  template <class Rep, class Period>
  task_group_status wait_for(const std::chrono::duration<Rep, Period>& timeout) {
    return wait_until_steady(detail::deadline_after(timeout));
  }
  /// As wait_for, until a time point of any clock.
  template <class Clock, class Duration>
  task_group_status wait_until(const std::chrono::time_point<Clock, Duration>& deadline) {
    return wait_until_steady(detail::deadline_at(deadline));
  }

  /// Runs callback(status, first_exception) once, when every child added so
  /// far (and every child they add) has finished: on the thread of the last
  /// one, or on this thread at once if none is pending. The callback
  /// receives the group's first exception (wait() then does not rethrow it);
  /// an exception leaving the callback goes to the pool's
  /// unhandled_exception_handler. Once the callback started, run() throws
  /// std::logic_error. Calling on_finish twice throws std::logic_error.
  /// The group is alive while the callback runs, which must therefore not
  /// destroy it nor wait on it (its destructor would wait for the callback).
  template <detail::finish_callback F>
  void on_finish(F&& callback) {
    if (finisher_ != nullptr) {
      throw std::logic_error("fjord::task_group::on_finish: called twice on one group");
    }
    finisher_ =
        std::make_unique<detail::group_finisher_of<std::decay_t<F>>>(std::forward<F>(callback));
    // The children that are to finish the group must see an exact count.
    settle();
    // The hold's RMW publishes finisher_ to the child that will finish.
    if ((latch_.take_hold() & detail::completion_latch::max_count) == 0) {
      finish();  // nothing pending
    }
  }

  /// Requests stop: children not yet started are skipped.
  void cancel() noexcept { stop_.request_stop(); }
  /// Whether stop was requested for the group (cancel(), a child's exception, or the token).
  bool is_canceling() const noexcept { return stop_.stop_requested(); }
  /// The group's token, for children to poll. The group makes its
  /// std::stop_source on the first call (which may throw std::bad_alloc), so
  /// a group that never hands out a token allocates nothing for it.
  std::stop_token get_stop_token() { return stop_.get_token(); }

 private:
  friend struct detail::group_child;
  friend struct detail::task_group_test_access;
  template <class F>
  friend struct detail::group_job;
  template <class F>
  friend struct detail::group_slot;

  // run() from outside the pool: the child in a slot of this thread's lane.
  // false, with f untouched, when the thread has no lane or it is full or
  // busy (the caller then makes a heap job). The count is taken already.
  template <class F>
  bool run_in_lane(F&& f) {
    using slot_t = detail::group_slot<std::decay_t<F>>;
    try {
      return pool_->inject_through_lane([&f, this](detail::lane_ring::slot* s) {
        ::new (static_cast<void*>(s->storage)) slot_t(std::forward<F>(f), this);
        return &slot_t::execute;
      });
    } catch (...) {
      child_done();  // the pool is closing, or f's constructor threw
      throw;
    }
  }

  // A child's body, wherever it is stored: skipped once the group is
  // canceling, its exception recorded.
  template <class F>
  void run_child(F& fn) noexcept {
    if (stop_.stop_requested()) {
      return;
    }
    try {
      if constexpr (std::is_invocable_v<F&, std::stop_token>) {
        std::invoke(fn, get_stop_token());
      } else {
        std::invoke(fn);
      }
    } catch (...) {
      record(std::current_exception());
    }
  }

  struct canceler {
    task_group* group;
    void operator()() const noexcept { group->cancel(); }
  };

  task_group_status result() {
    if (error_ != nullptr) {
      std::exception_ptr e = std::exchange(error_, nullptr);
      error_claimed_.store(false, std::memory_order_relaxed);
      std::rethrow_exception(e);
    }
    return stop_.stop_requested() ? task_group_status::canceled : task_group_status::complete;
  }

  // On a worker of the group's pool, the children it ran are most likely
  // still on its own deque, newest on top: pop and run them inline, as join
  // does, until the count is settled or the deque runs dry (a thief took
  // the rest), and only then help and park (pool_core::help_until). Not for
  // a high or low priority group (its children were injected, so the deque
  // holds only older, unrelated jobs), nor deep in the stack, where
  // help_until blocks instead.
  //
  // A child of this group run here skips the count-down: the waiter notes
  // it in inline_done_ instead, so a group whose children were not stolen
  // costs one read-modify-write per child (run()'s count-up), not two. The
  // latch then over-counts by inline_done_ (pending = count - inline_done_),
  // which only the waiter reads; settle() makes the count exact before
  // anyone sleeps on it or a finish hold needs it (on_finish settles before
  // taking the hold, and a child run here under a hold counts down).
  FJORD_ALWAYS_INLINE void wait_for_children() {
    detail::worker* w = detail::current_worker_of(pool_);
    if (w == nullptr || level_ != priority::normal ||
        !detail::pool_core::may_run_jobs_on_this_stack(*w)) {
      settle();
      pool_->wait(latch_);
      return;
    }
    // The children run here are other computations than a sync_wait that
    // may be running on this thread (see run_unrelated_job): hide its loop
    // from them, once for the whole wait.
    const detail::sync_wait_loop::scope hidden(nullptr);
    do {
      detail::job* j = w->deque.pop();
      if (j == nullptr) {
        settle();
        pool_->help_until(*w, latch_);
        return;
      }
      w->counters.jobs_run.bump();
      detail::trace_point(detail::trace_kind::job_begin, 0, detail::trace_address(j));
      if (j->execute == &detail::group_child::execute_anywhere &&
          static_cast<detail::group_child*>(j)->group == this) {
        auto* c = static_cast<detail::group_child*>(j);
        c->body(c);
        // Read after the body: the child itself may have called on_finish,
        // which settled and took the hold.
        if ((latch_.count() & detail::completion_latch::hold_bit) != 0) [[unlikely]] {
          child_done();
        } else if (++inline_done_ == settle_every) [[unlikely]] {
          settle();  // a group reused forever must not overflow its count
        }
      } else {
        // Jobs above the children (posts, woken coroutines, other groups'
        // children) belong to other computations, so they run as
        // help_until runs them.
        detail::run_unrelated_job(j);
      }
      detail::trace_point(detail::trace_kind::job_end, 0, detail::trace_address(j));
    } while (latch_.count() != inline_done_);
  }

  // Makes the latch's count exact: the count-downs of the children this
  // group's waiters ran inline, at once. The waiter's (or, once no one
  // waits, the destructor's and on_finish's) own bookkeeping: no hold is
  // set while inline_done_ is non-zero (on_finish settles before taking
  // it, and counts as waiting), so this never finishes the group.
  void settle() noexcept {
    if (inline_done_ != 0) {
      FJORD_ASSERT((latch_.count() & detail::completion_latch::hold_bit) == 0,
                   "task_group: on_finish was called on one thread while another waited");
      const void* address = latch_.futex_address();
      pool_->wake_latch_waiter(address, latch_.count_down_by(std::exchange(inline_done_, 0)));
    }
  }

  task_group_status wait_until_steady(detail::steady_deadline deadline) {
    if (latch_.count() != inline_done_) {
      settle();
      if (!pool_->wait_until(latch_, deadline)) {
        return task_group_status::timeout;
      }
    }
    return result();
  }

  /// A child finished, ran or not (or one that run() could not start).
  void child_done() noexcept {
    // Read before the count-down, the group's last touch: its waiter may
    // destroy it from then on.
    detail::pool_core* pool = pool_;
    const void* address = latch_.futex_address();
    const detail::completion_latch::held_count_down r = latch_.count_down_held();
    if (r.finish) [[unlikely]] {
      finish();  // the hold keeps the group alive until finish() drops it
      return;
    }
    pool->wake_latch_waiter(address, r.waiter);
  }

  /// Every child has finished and the hold keeps the group alive: run the
  /// callback, mark the group finished, drop the hold.
  void finish() noexcept {
    // The children's acq_rel count-downs ordered their error_ and stop
    // writes before the RMW that left only the hold, which we read.
    std::exception_ptr e;
    if (error_claimed_.load(std::memory_order_relaxed)) {
      e = std::exchange(error_, nullptr);
    }
    const task_group_status status =
        stop_.stop_requested() ? task_group_status::canceled : task_group_status::complete;
    try {
      finisher_->run(status, std::move(e));
    } catch (...) {
      pool_->report_unhandled(std::current_exception());
    }
    finished_.store(true, std::memory_order_release);
    detail::pool_core* pool = pool_;
    const void* address = latch_.futex_address();
    pool->wake_latch_waiter(address, latch_.release_hold());
  }

  static pool& pool_for_caller() {
    pool* p = current_pool();
    return p != nullptr ? *p : default_pool();
  }

  /// The first exception is kept; later ones are counted, and any of them
  /// cancels the rest of the group.
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
  detail::lazy_stop_source stop_;
  std::atomic<bool> error_claimed_{false};
  std::exception_ptr error_;
  std::optional<std::stop_callback<canceler>> link_;
  priority level_ = priority::normal;
  std::unique_ptr<detail::group_finisher> finisher_;  ///< set by on_finish
  std::atomic<bool> finished_{false};                 ///< the callback ran
  /// Children the waiters ran inline and have not counted down (the
  /// waiter's alone, see wait_for_children), settled at the latest when
  /// they reach settle_every.
  std::uint32_t inline_done_ = 0;
  static constexpr std::uint32_t settle_every = std::uint32_t{1} << 16;
};

inline void detail::group_child::execute_anywhere(job* j) noexcept {
  auto* c = static_cast<group_child*>(j);
  task_group* g = c->group;
  c->body(c);
  g->child_done();
}

template <class F>
void detail::group_job<F>::run_body(group_child* c) noexcept {
  auto* self = static_cast<group_job*>(c);
  self->group->run_child(self->fn);
  self->~group_job();
  job_heap::deallocate(self);
}

template <class F>
void detail::group_slot<F>::execute(job* j) noexcept {
  auto* s = static_cast<lane_ring::slot*>(j);
  auto* self = std::launder(reinterpret_cast<group_slot*>(s->storage));
  task_group* g = self->group;
  g->run_child(self->fn);
  self->~group_slot();
  s->release();
  g->child_done();
}

}  // namespace fjord
