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
#include "fjord/detail/promise_stop_token.hpp"
#include "fjord/detail/task_promise.hpp"
#include "fjord/detail/transfer.hpp"
#include "fjord/detail/worker.hpp"

namespace fjord::detail {

class fanout;

// The small coroutine that runs one child of a when_all / when_any: it awaits
// the child's completion and reports to the fan-out. Runners are made by
// whichever worker starts their child, so with many children their creation
// is not serial work for the parent; the fan-out destroys them at the end.
// (A runner does not free itself in its final awaiter: clang then stops
// making the symmetric transfer a tail call, and clang before 19 reads the
// frame after await_suspend returns, llvm/llvm-project#56301.)
class child_runner {
 public:
  struct promise_type : root_promise<child_runner, promise_type> {
    struct done_awaiter {
      bool await_ready() const noexcept { return false; }
      std::coroutine_handle<> await_suspend(std::coroutine_handle<promise_type> h) const noexcept;
      void await_resume() const noexcept {}
    };
    done_awaiter final_suspend() const noexcept { return {}; }

    fanout* owner = nullptr;
    std::size_t index = 0;
  };

  explicit child_runner(std::coroutine_handle<promise_type> h) noexcept : handle(h) {}

  std::coroutine_handle<promise_type> handle;
};

// The combinators check for empty tasks up front, so the runner awaits the
// completion directly: no throwing path in its body (which keeps clang's
// symmetric transfer a tail call).
template <class T>
child_runner make_child_runner(const task<T>& t) {
  co_await completion_awaiter<T>{task_access::handle(t)};
}

// Runs n children in parallel and resumes the awaiting coroutine when the
// last one finishes; no thread blocks. On a worker, the children are offered
// to thieves by binary splitting: slot i's job carries the range [i, end)
// and, when it runs, pushes the upper half of its range as another slot's
// job before starting child i, so a thief always takes the largest piece
// left (as in a parallel_for over the children). Off a pool, the children
// run in turn on the calling thread.
//
// On a worker the count needs no "+1 for the launcher": child 0 starts only
// after the launcher's await_suspend has returned (symmetric transfer), so the
// count cannot reach zero while the launcher still touches the fan-out. Off a
// pool the launcher runs every child itself and holds one extra unit.
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
    std::size_t split_end = 0;       // the children [index, split_end) are this job's to start
    std::coroutine_handle<> runner;  // set by whoever starts the child
  };

  // Makes the runner for child i of `children` (not started).
  using runner_factory = std::coroutine_handle<child_runner::promise_type> (*)(void* children,
                                                                               std::size_t i);

  fanout(std::span<slot> slots, void* children, runner_factory make, race* r) noexcept
      : slots_(slots), children_(children), make_(make), race_(r) {}
  fanout(const fanout&) = delete;
  fanout& operator=(const fanout&) = delete;
  // After the parent resumed, every runner is suspended at its end.
  ~fanout() {
    for (slot& s : slots_) {
      if (s.runner) {
        s.runner.destroy();
      }
    }
  }

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
        token = stop_token_of(parent.promise());
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
    worker* w = current_worker;
    if (w == nullptr) {
      // Not on a pool: run each in turn here, holding one extra unit of the
      // count so that no child can resume the parent while we still loop.
      // When they all finished synchronously, the parent simply goes on
      // (we return it); otherwise the last to finish resumes it. (Not a
      // transfer to the last child: clang 14 does not always make a
      // runner's final transfer a tail call, and a loop of synchronous
      // when_alls would then nest one frame per iteration.)
      remaining_.store(n + 1, std::memory_order_relaxed);
      for (std::size_t i = 0; i < n; ++i) {
        resume(runner(i));
      }
      if (remaining_.fetch_sub(1, std::memory_order_acq_rel) == 1) {
        return parent;
      }
      return std::noop_coroutine();
    }
    remaining_.store(n, std::memory_order_relaxed);
    return split(*w, 0, n);
  }

  // Called by child `index`'s runner when it has finished; returns what to
  // run next.
  std::coroutine_handle<> child_done(std::size_t index) noexcept {
    if (race_ != nullptr) {
      finish_race(index);
    }
    // Read before the decrement: once it is done, another runner may resume
    // the parent, which frees the fan-out.
    const std::coroutine_handle<> parent = parent_;
    // acq_rel: release publishes this child's result to whoever finishes
    // last; acquire (for the last) makes every other child's result visible
    // before the parent resumes.
    if (remaining_.fetch_sub(1, std::memory_order_acq_rel) == 1) {
      return parent;
    }
    return std::noop_coroutine();
  }

  // Out of line: request_stop() is a large call the transfer path need not see.
  FJORD_NOINLINE void finish_race(std::size_t index) noexcept {
    std::size_t none = npos;
    // relaxed: the winner's identity is read by the parent only after the
    // count reaches zero, which orders it (acq_rel on remaining_).
    if (race_->winner.compare_exchange_strong(none, index, std::memory_order_relaxed)) {
      race_->source.request_stop();
    }
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
      w.pool->notify_local_push(w);
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
    h.promise().links.stop_token_address = token_;
    slots_[i].runner = h;
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
  return transfer_to(h, p.owner->child_done(p.index));
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
