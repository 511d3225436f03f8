#pragma once

#include <concepts>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <iterator>
#include <memory>
#include <new>
#include <optional>
#include <ranges>
#include <type_traits>
#include <utility>

#include "fjord/detail/callable.hpp"
#include "fjord/detail/callable_range.hpp"
#include "fjord/detail/job_heap.hpp"
#include "fjord/detail/pool_call.hpp"
#include "fjord/detail/pool_core.hpp"
#include "fjord/detail/posted_job.hpp"
#include "fjord/detail/result_slot.hpp"
#include "fjord/detail/schedule_awaiter.hpp"
#include "fjord/future.hpp"
#include "fjord/pool_options.hpp"
#include "fjord/pool_stats.hpp"
#include "fjord/priority.hpp"
#include "fjord/scalable_memory.hpp"
#include "fjord/shutdown_error.hpp"

namespace fjord {

namespace detail {
struct pool_access;
}  // namespace detail

/// A set of worker threads with work-stealing deques. Work enters through
/// post/submit/call (or fjord::join, task_group, ...). Destroying a pool runs
/// every job already submitted, then joins the workers; submitting from outside
/// the pool after destruction began throws fjord::shutdown_error.
class pool {
 public:
  /// workers = available_cpus(), default options.
  pool() : pool(pool_options{}) {}
  /// A pool configured by options; throws std::invalid_argument naming a bad value, or
  /// std::system_error if no thread can be started.
  explicit pool(const pool_options& options) : core_(new detail::pool_core(options)) {
    core_->public_pool.store(this, std::memory_order_release);
  }
  pool(const pool&) = delete;
  pool& operator=(const pool&) = delete;
  /// Waits for every job and every coroutine waiting on the pool, then joins
  /// the threads. Run by one of the pool's own threads (std::exit called in
  /// a job), it cannot wait for itself: the pool then refuses new work and
  /// its threads and memory are left to the end of the process.
  ~pool() {
    // Not freed when shut down from one of its own threads (core_ itself is
    // not written: other threads may still read it in an exiting process).
    if (core_->shut_down()) {
      delete core_;
    } else {
      core_->public_pool.store(nullptr, std::memory_order_release);
    }
  }

  /// The number of workers the pool runs now: pool_options::workers at the
  /// start, then within [min_workers(), max_workers()] as it scales.
  /// Workers blocked in fjord::block_in_place (and similar waits) count,
  /// not the spares standing in for them.
  std::size_t size() const noexcept { return core_->size(); }
  /// The lower bound of dynamic scaling (pool_options::min_workers).
  std::size_t min_workers() const noexcept { return core_->min_workers(); }
  /// The upper bound of dynamic scaling (pool_options::max_workers).
  std::size_t max_workers() const noexcept { return core_->max_workers(); }

  /// Runs n workers from now on: resize(n, n). Workers beyond n leave at
  /// their next job boundary (no job is interrupted or lost); new ones
  /// start at once (a thread the system refuses, or a slot spares hold,
  /// leaves size() lower). Any thread, also one of the pool's own.
  void resize(std::size_t n) { core_->resize(n, n); }
  /// New bounds for dynamic scaling; the size moves into them at once, and
  /// the pool stops following available_cpus(). Throws std::invalid_argument
  /// unless 1 <= min <= max <= max_workers at construction +
  /// max_spare_threads; fjord::shutdown_error once the pool is closing;
  /// std::logic_error in a fork() child; std::system_error (the pool
  /// unchanged) if the monitor thread scaling needs cannot be started.
  void resize(std::size_t min, std::size_t max) { core_->resize(min, max); }

  /// Runs f() on some worker; its exception goes to the pool's
  /// unhandled_exception_handler.
  template <detail::storable_callable F>
  void post(F&& f) {
    using fn_t = std::decay_t<F>;
    bool lane_refused = false;
    if constexpr (detail::lane_ring::fits_inline<fn_t>) {
      // From outside the pool a small callable is built in a slot of the
      // thread's own lane: plain stores, no allocation. (A worker's own
      // deque is cheaper still.)
      if (!owns_current_thread()) {
        if (core_->inject_through_lane([&f](detail::lane_ring::slot* s) {
              ::new (static_cast<void*>(s->storage)) fn_t(std::forward<F>(f));
              return &detail::run_in_slot<fn_t>;
            })) {
          return;
        }
        lane_refused = true;  // full, busy or none: do not ask it again below
      }
    }
    post_job(std::forward<F>(f), [this, lane_refused](detail::job* j) {
      if (lane_refused) {
        core_->inject_to_shard(j, j, 1);
      } else {
        core_->push_or_inject(j);
      }
    });
  }

  /// post(f) at a priority (fjord::priority): high runs before waiting
  /// normal and low work, low only when nothing else waits (never starved).
  /// Throws std::invalid_argument for a value that is no priority.
  template <detail::storable_callable F>
  void post(priority level, F&& f) {
    detail::check_priority(level);
    if (level == priority::normal) {
      post(std::forward<F>(f));
      return;
    }
    post_job(std::forward<F>(f),
             [this, level](detail::job* j) { core_->inject_at_level(level, j, j, 1); });
  }

  /// Posts every callable in the range with one enqueue operation.
  template <detail::callable_range R>
  void post_bulk(R&& callables) {
    using fn_t = std::decay_t<std::ranges::range_reference_t<R>>;
    using job_t = detail::posted_job<fn_t>;
    detail::job* first = nullptr;
    detail::job* last = nullptr;
    std::uint64_t count = 0;
    try {
      for (auto&& f : callables) {
        auto* j = detail::construct_job<job_t>(core_->allocate_job(sizeof(job_t), alignof(job_t)),
                                               fn_t(std::forward<decltype(f)>(f)), core_);
        if (last == nullptr) {
          first = j;
        } else {
          last->next().store(j, std::memory_order_relaxed);
        }
        last = j;
        ++count;
      }
      if (first != nullptr) {
        core_->inject(first, last, count);
      }
    } catch (...) {
      // Only links up to `last` were written (the chain's end is set by
      // push_chain, which did not run).
      while (first != nullptr) {
        detail::job* next = first == last ? nullptr : first->next().load(std::memory_order_relaxed);
        destroy_unrun(static_cast<job_t*>(first));
        first = next;
      }
      throw;
    }
  }

  /// Runs f() on some worker; the future gives its result or exception.
  template <detail::storable_callable F>
  [[nodiscard]] auto submit(F&& f) -> future<std::invoke_result_t<std::decay_t<F>&>> {
    return submit_at(priority::normal, std::forward<F>(f));
  }
  /// The same at a priority (see post(priority, f)).
  template <detail::storable_callable F>
  [[nodiscard]] auto submit(priority level, F&& f)
      -> future<std::invoke_result_t<std::decay_t<F>&>> {
    detail::check_priority(level);
    return submit_at(level, std::forward<F>(f));
  }

  /// Runs f() on the pool's thread number `thread` and on no other one
  /// (Eff_ThreadPool's commit(f, index)): a last resort, for work tied to
  /// one thread, such as its thread-local state. Threads are numbered as
  /// pool_options::on_thread_start says, below thread_count(). That thread
  /// takes the job when it next looks for submitted work: as soon as its
  /// own deque runs dry, else within about a hundred of its jobs (before
  /// other submitted work every other time); high-priority work may go
  /// first. No other thread takes it, so a thread busy with one long job,
  /// blocked (fjord::block_in_place) or paused runs it only afterwards. It
  /// may run nested in a job of that thread that waits and helps meanwhile
  /// (a join, a future's get), so it is no lock against that thread's other
  /// jobs. Waiting on that same thread for it can only end where the thread
  /// helps: not inside block_in_place or a sync_wait, nor with over half its
  /// stack in use, where such a wait never ends. A thread that retired
  /// (scaling, or a spare whose worker came back) comes back to run it. Its
  /// exception goes to the pool's unhandled_exception_handler. Throws
  /// std::out_of_range naming a thread the pool does not have, and
  /// fjord::shutdown_error once the pool is closing (from outside it).
  template <detail::storable_callable F>
  void post_to(std::size_t thread, F&& f) {
    post_job(std::forward<F>(f),
             [this, thread](detail::job* j) { core_->inject_to_thread(thread, j); });
  }
  /// post_to() with a future for f's result or exception.
  template <detail::storable_callable F>
  [[nodiscard]] auto submit_to(std::size_t thread, F&& f)
      -> future<std::invoke_result_t<std::decay_t<F>&>> {
    using value_t = std::invoke_result_t<std::decay_t<F>&>;
    using job_t = detail::submitted_job<std::decay_t<F>, value_t>;
    auto* j = job_t::make(std::forward<F>(f), core_);
    future<value_t> result(j);
    try {
      core_->inject_to_thread(thread, j);
    } catch (...) {
      j->release();  // the job's reference; `result` drops the other
      throw;
    }
    return result;
  }

  /// Runs f() in this pool and returns its result (or rethrows): the way
  /// into a pool from outside, so that the joins, groups and algorithms f
  /// starts run on this pool (rayon's install, oneTBB's task_arena::execute).
  /// The calling thread runs f itself, joined to the pool as its guest, on a
  /// stack of stack_size bytes, when pool_options::callers_join allows and
  /// no other caller is the guest; otherwise a worker runs f while the
  /// caller waits. From one of this pool's workers, simply calls f().
  template <detail::lvalue_callable F>
  decltype(auto) call(F&& f) {
    return detail::call_on(*core_, f);
  }

  /// co_await pool.schedule() continues the calling coroutine on one of this
  /// pool's workers (at once if it already runs on one).
  [[nodiscard]] detail::schedule_awaiter schedule() noexcept {
    return detail::schedule_awaiter(*core_);
  }
  /// The same, waiting at a priority when it suspends (already on one of
  /// this pool's workers, it carries on).
  [[nodiscard]] detail::schedule_awaiter schedule(priority level) {
    detail::check_priority(level);
    return detail::schedule_awaiter(*core_, level);
  }

  /// co_await pool.schedule_on(thread) continues the calling coroutine on
  /// the pool's thread number `thread`, as post_to() runs a job there (at
  /// once if it already runs on it). Only until its next suspension: a
  /// coroutine woken later comes back to the pool, on any thread. The
  /// co_await throws what post_to() would.
  [[nodiscard]] detail::schedule_on_awaiter schedule_on(std::size_t thread) noexcept {
    return detail::schedule_on_awaiter(*core_, thread);
  }

  /// Blocks until the pool has nothing to do: every job submitted so far
  /// (from any thread that submitted before this call), every job those
  /// jobs made, and every coroutine waiting on the pool have finished. The
  /// pool stays open; jobs submitted meanwhile are waited for too, so under
  /// a flood that never pauses it waits until the flood stops. While the
  /// pool is paused it waits for resume(). Throws std::logic_error on one
  /// of this pool's own threads (it would wait for itself).
  void wait_idle() { core_->wait_idle(); }

  /// Refuses new work from outside the pool (post, submit, ... throw
  /// fjord::shutdown_error from now on), runs everything already submitted,
  /// and joins the threads: what the destructor does, without destroying the
  /// object, so that a thread that may still post while another tears the
  /// pool down gets an exception instead of a dangling pool. Idempotent. On
  /// one of this pool's own threads it only refuses new work: it cannot wait
  /// for itself.
  void close() noexcept { static_cast<void>(core_->shut_down()); }
  /// Whether close() has begun: new outside work is refused with fjord::shutdown_error.
  bool is_closed() const noexcept { return core_->is_shut_down(); }

  /// Stops workers from starting jobs from their main loop: a job already
  /// running finishes, and a worker waiting inside one (a join, a group
  /// wait) keeps helping, so it may still start queued jobs; every other
  /// job waits, submitted work included, until resume(). Closing or
  /// destroying a pool resumes it, and a pause during the drain is undone.
  /// Any thread; idempotent.
  void pause() noexcept { core_->pause(); }
  /// Lets paused workers start jobs again; idempotent.
  void resume() noexcept { core_->resume(); }
  /// Whether pause() is in effect.
  bool is_paused() const noexcept { return core_->is_paused(); }

  /// Counters of every worker, readable at any time.
  pool_stats stats() const { return core_->stats(); }

  /// True when the calling thread is one of this pool's workers, or a
  /// caller inside a call it joined the pool for (pool_options::callers_join).
  bool owns_current_thread() const noexcept { return detail::current_worker_of(core_) != nullptr; }
  /// The calling thread's number in this pool (as post_to() takes it), or
  /// nullopt on a thread that is none of the pool's (a caller that joined
  /// the pool for a call has no number: it is not one of the pool's threads).
  std::optional<std::size_t> this_thread_index() const noexcept {
    if (const detail::worker* w = detail::current_worker_of(core_); w != nullptr && !w->guest) {
      return w->index;
    }
    return std::nullopt;
  }
  /// The threads the pool has made so far: its workers and the spares that
  /// stood in for blocked ones, numbered 0 to thread_count() - 1. A thread,
  /// once made, stays until the pool ends (retired, it parks), so this
  /// never shrinks, and post_to() takes any index below it. A thread counts
  /// from the moment its start succeeded; its own start hook sees itself.
  std::size_t thread_count() const noexcept { return core_->started_thread_count(); }

 private:
  friend struct detail::pool_access;
  detail::pool_core& core() noexcept { return *core_; }

  /// submit() at a level already checked.
  template <class F>
  auto submit_at(priority level, F&& f) -> future<std::invoke_result_t<std::decay_t<F>&>> {
    using value_t = std::invoke_result_t<std::decay_t<F>&>;
    using job_t = detail::submitted_job<std::decay_t<F>, value_t>;
    auto* j = job_t::make(std::forward<F>(f), core_);
    future<value_t> result(j);
    try {
      core_->push_or_inject(j, level);
    } catch (...) {
      j->release();  // the job's reference; `result` drops the other
      throw;
    }
    return result;
  }

  /// Builds a posted job for f and hands it to push, freeing it if push throws.
  template <class F, class Push>
  void post_job(F&& f, Push push) {
    using job_t = detail::posted_job<std::decay_t<F>>;
    auto* j = detail::construct_job<job_t>(core_->allocate_job(sizeof(job_t), alignof(job_t)),
                                           std::forward<F>(f), core_);
    try {
      push(j);
    } catch (...) {
      destroy_unrun(j);
      throw;
    }
  }

  /// Frees a job that was built but could not be enqueued.
  template <class Job>
  static void destroy_unrun(Job* j) noexcept {
    j->~Job();
    detail::job_heap::deallocate_unrun(j);
  }

  detail::pool_core* const core_;  ///< owned (see ~pool)
};

/// The pool whose worker is running the calling thread, or nullptr.
inline pool* current_pool() noexcept {
  const detail::worker* w = detail::current_worker;
  return w != nullptr ? static_cast<pool*>(w->pool->public_pool.load(std::memory_order_acquire))
                      : nullptr;
}

/// The process-wide pool, created on first use with available_cpus() workers
/// (or FJORD_WORKERS from the environment, if set to a positive number).
pool& default_pool();

namespace detail {

// The scheduler behind a pool, for fjord's own headers and tests: not API.
struct pool_access {
  static pool_core& core(pool& p) noexcept { return p.core(); }
};

}  // namespace detail

}  // namespace fjord
