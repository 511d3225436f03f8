#pragma once

#include <atomic>
#include <coroutine>
#include <cstddef>
#include <exception>
#include <span>
#include <stop_token>
#include <type_traits>
#include <utility>

#include "fjord/detail/job.hpp"
#include "fjord/detail/pool_core.hpp"
#include "fjord/detail/task_promise.hpp"
#include "fjord/detail/transfer.hpp"
#include "fjord/detail/worker.hpp"
#include "fjord/task.hpp"

namespace fjord::detail {

class fanout;

// The small coroutine that runs one child of a when_all / when_any: it awaits
// the child's completion (the result stays in the child task), reports to
// the fan-out and frees itself. Runners are made by whichever worker starts
// them and die there, so with many children neither their creation nor
// their destruction is serial work for the parent.
class child_runner {
 public:
  struct promise_type : promise_base {
    promise_type() noexcept { stop_token = nullptr; }

    child_runner get_return_object() noexcept {
      return child_runner(std::coroutine_handle<promise_type>::from_promise(*this));
    }
    struct done_awaiter {
      bool await_ready() const noexcept { return false; }
      std::coroutine_handle<> await_suspend(std::coroutine_handle<promise_type> h) const noexcept;
      void await_resume() const noexcept {}
    };
    done_awaiter final_suspend() const noexcept { return {}; }
    void return_void() noexcept {}
    [[noreturn]] void unhandled_exception() noexcept { std::terminate(); }  // cannot happen

    fanout* owner = nullptr;
    std::size_t index = 0;
  };

  explicit child_runner(std::coroutine_handle<promise_type> h) noexcept : handle(h) {}

  std::coroutine_handle<promise_type> handle;
};

template <class T>
child_runner make_child_runner(const task<T>& t) {
  co_await task_access::completion_of(t);
}

// Runs n children in parallel and resumes the awaiting coroutine when the
// last one finishes; no thread blocks. On a worker, the children are offered
// to thieves by binary splitting: slot i's job carries the range [i, end)
// and, when it runs, pushes the upper half of its range as another slot's
// job before starting child i, so a thief always takes the largest piece
// left (as in a parallel_for over the children). Off a pool, the children
// run in turn on the calling thread.
//
// The count needs no "+1 for the launcher": child 0 (off a pool: child n-1)
// starts only after the launcher's await_suspend has returned (symmetric
// transfer), so the count cannot reach zero while the launcher still touches
// the fan-out.
class fanout {
 public:
  // For when_any: the first child to finish wins and stops the others.
  struct race {
    std::stop_source source;
    std::stop_token token = source.get_token();
    std::atomic<std::size_t> winner{npos};
  };
  static constexpr std::size_t npos = ~std::size_t{0};

  // Where a child's job waits on a deque: one per child, in the
  // combinator's frame.
  struct slot : job {
    slot() noexcept : job(&execute) {}
    static void execute(job* j) noexcept;

    fanout* owner = nullptr;
    std::size_t index = 0;
    std::size_t split_end = 0;  // the children [index, split_end) are this job's to start
  };

  // Makes the runner for child i of `children` (not started).
  using runner_factory = std::coroutine_handle<child_runner::promise_type> (*)(void* children,
                                                                               std::size_t i);

  fanout(std::span<slot> slots, void* children, runner_factory make, race* r) noexcept
      : slots_(slots), children_(children), make_(make), race_(r) {}

  // The awaiter the combinator's coroutine co_awaits.
  struct awaiter {
    fanout& f;
    bool await_ready() const noexcept { return f.slots_.empty(); }
    template <class Parent>
    std::coroutine_handle<> await_suspend(std::coroutine_handle<Parent> parent) noexcept {
      const std::stop_token* token = nullptr;
      if (f.race_ != nullptr) {
        token = &f.race_->token;
      } else if constexpr (std::is_base_of_v<promise_base, Parent>) {
        token = parent.promise().stop_token;
      }
      return transfer_to(parent, f.launch(parent, token));
    }
    void await_resume() const noexcept {}
  };

  std::coroutine_handle<> launch(std::coroutine_handle<> parent,
                                 const std::stop_token* token) noexcept {
    parent_ = parent;
    token_ = token;
    const std::size_t n = slots_.size();
    remaining_.store(n, std::memory_order_relaxed);
    worker* w = current_worker;
    if (w == nullptr) {
      // Not on a pool: start each in turn here; child n-1 starts last, by
      // symmetric transfer, so none of the earlier ones can be the last to
      // finish before this function is done with the fan-out.
      for (std::size_t i = 0; i + 1 < n; ++i) {
        resume(runner(i));
      }
      return runner(n - 1);
    }
    return split(*w, 0, n);
  }

  // Called by child `index`'s runner when it has finished; returns what to
  // run next.
  std::coroutine_handle<> child_done(std::size_t index) noexcept {
    if (race_ != nullptr) {
      std::size_t none = npos;
      // relaxed: the winner's identity is read by the parent only after the
      // count below reaches zero, which orders it (acq_rel on remaining_).
      if (race_->winner.compare_exchange_strong(none, index, std::memory_order_relaxed)) {
        race_->source.request_stop();
      }
    }
    // acq_rel: release publishes this child's result to whoever finishes
    // last; acquire (for the last) makes every other child's result visible
    // before the parent resumes.
    if (remaining_.fetch_sub(1, std::memory_order_acq_rel) == 1) {
      return parent_;
    }
    return std::noop_coroutine();
  }

  // Starts children [lo, hi) from worker w: offers upper halves to thieves
  // and returns child lo's runner for the caller to transfer to.
  std::coroutine_handle<> split(worker& w, std::size_t lo, std::size_t hi) noexcept {
    bool pushed = false;
    while (hi - lo > 1) {
      const std::size_t mid = lo + (hi - lo) / 2;
      slot& s = slots_[mid];
      s.owner = this;
      s.index = mid;
      s.split_end = hi;
      if (!w.deque.push(&s)) {
        // The deque is full: start [mid, hi) here instead, one by one.
        for (std::size_t i = mid; i < hi; ++i) {
          resume(runner(i));
        }
      } else {
        pushed = true;
      }
      hi = mid;
    }
    if (pushed) {
      w.pool->notify_local_push();
    }
    return runner(lo);
  }

 private:
  // Runner frames are small and come from the frame cache; running out of
  // memory here, inside a job, cannot be reported to anyone: it terminates.
  std::coroutine_handle<> runner(std::size_t i) noexcept {
    const auto h = make_(children_, i);
    h.promise().owner = this;
    h.promise().index = i;
    h.promise().stop_token = token_;
    return h;
  }

  std::span<slot> slots_;
  void* children_;
  runner_factory make_;
  race* race_;
  const std::stop_token* token_ = nullptr;
  std::coroutine_handle<> parent_;
  std::atomic<std::size_t> remaining_{0};
};

inline std::coroutine_handle<> child_runner::promise_type::done_awaiter::await_suspend(
    std::coroutine_handle<promise_type> h) const noexcept {
  promise_type& p = h.promise();
  const std::coroutine_handle<> next = p.owner->child_done(p.index);
  // Nobody else refers to a runner: it frees itself, here on the thread
  // that ran it. (Destroying a coroutine from its own final awaiter is
  // allowed: it is suspended.)
  h.destroy();
  return transfer_to(h, next);  // compares h's address only: fine after destroy()
}

inline void fanout::slot::execute(job* j) noexcept {
  auto* s = static_cast<slot*>(j);
  resume(s->owner->split(*current_worker, s->index, s->split_end));
}

// Runner factories for the two shapes of children.
template <class Tasks>
std::coroutine_handle<child_runner::promise_type> runner_for_range(void* children, std::size_t i) {
  return make_child_runner((*static_cast<Tasks*>(children))[i]).handle;
}

template <class Tuple, std::size_t... I>
std::coroutine_handle<child_runner::promise_type> runner_for_tuple(
    void* children, std::size_t i, std::index_sequence<I...> /*unused*/) {
  auto& tasks = *static_cast<Tuple*>(children);
  std::coroutine_handle<child_runner::promise_type> h;
  // The one I equal to i makes the runner (the fold stops there).
  (void)((i == I ? (h = make_child_runner(std::get<I>(tasks)).handle, true) : false) || ...);
  return h;
}

template <class Tuple>
std::coroutine_handle<child_runner::promise_type> runner_for_tuple(void* children, std::size_t i) {
  return runner_for_tuple<Tuple>(children, i, std::make_index_sequence<std::tuple_size_v<Tuple>>{});
}

}  // namespace fjord::detail
