#pragma once

#include <atomic>
#include <coroutine>
#include <cstddef>
#include <exception>
#include <optional>
#include <span>
#include <stop_token>
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
// the child's completion (the result stays in the child task) and reports to
// the fan-out. Its promise is also a job, so a runner can sit on a worker's
// deque and be stolen.
class child_runner {
 public:
  struct promise_type : promise_base, job {
    promise_type() noexcept : job(&execute) { stop_token = nullptr; }

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

    static void execute(job* j) noexcept;

    fanout* owner = nullptr;
    std::size_t index = 0;
    std::size_t split_end = 0;  // the runners [index, split_end) are this job's to start
  };

  child_runner() noexcept = default;
  explicit child_runner(std::coroutine_handle<promise_type> h) noexcept : handle_(h) {}
  child_runner(child_runner&& o) noexcept : handle_(std::exchange(o.handle_, {})) {}
  child_runner& operator=(child_runner&& o) noexcept {
    std::swap(handle_, o.handle_);
    return *this;
  }
  child_runner(const child_runner&) = delete;
  child_runner& operator=(const child_runner&) = delete;
  ~child_runner() {
    if (handle_) {
      handle_.destroy();
    }
  }

  std::coroutine_handle<promise_type> handle() const noexcept { return handle_; }

 private:
  std::coroutine_handle<promise_type> handle_;
};

template <class T>
child_runner make_child_runner(const task<T>& t) {
  co_await task_access::completion_of(t);
}

// Runs a set of child runners in parallel and resumes the awaiting coroutine
// when the last one finishes; no thread blocks. On a worker, the runners are
// offered to thieves by binary splitting: the job of runner i carries the
// range [i, end) and, when it runs, pushes the upper half of its range as
// another runner's job before starting runner i, so a thief always takes the
// largest piece left (as in a parallel_for over the children). Off a pool,
// the runners run in turn on the calling thread.
//
// The count needs no "+1 for the launcher": runner 0 starts only after the
// launcher's await_suspend has returned (symmetric transfer), so the count
// cannot reach zero while the launcher still touches the fan-out.
class fanout {
 public:
  // For when_any: the first child to finish wins and stops the others.
  struct race {
    std::stop_source source;
    std::stop_token token = source.get_token();
    std::atomic<std::size_t> winner{npos};
  };
  static constexpr std::size_t npos = ~std::size_t{0};

  fanout(std::span<child_runner> runners, race* r) noexcept : runners_(runners), race_(r) {}

  // The awaiter the combinator's coroutine co_awaits.
  struct awaiter {
    fanout& f;
    bool await_ready() const noexcept { return f.runners_.empty(); }
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
    const std::size_t n = runners_.size();
    remaining_.store(n, std::memory_order_relaxed);
    for (std::size_t i = 0; i < n; ++i) {
      auto& p = runners_[i].handle().promise();
      p.owner = this;
      p.index = i;
      p.stop_token = token;
    }
    worker* w = current_worker;
    if (w == nullptr) {
      // Not on a pool: start each in turn here; runner n-1 starts last, by
      // symmetric transfer, so none of the earlier ones can be the last to
      // finish before this function is done with the fan-out.
      for (std::size_t i = 0; i + 1 < n; ++i) {
        resume(runners_[i].handle());
      }
      return runners_[n - 1].handle();
    }
    return split(*w, 0, n);
  }

  // Called by runner `index` when it has finished; returns what to run next.
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

  // Starts runners [lo, hi) from worker w: offers upper halves to thieves and
  // returns runner lo's handle for the caller to transfer to.
  std::coroutine_handle<> split(worker& w, std::size_t lo, std::size_t hi) noexcept {
    bool pushed = false;
    while (hi - lo > 1) {
      const std::size_t mid = lo + (hi - lo) / 2;
      auto& p = runners_[mid].handle().promise();
      p.split_end = hi;
      if (!w.deque.push(&p)) {
        // The deque is full: start [mid, hi) here instead, one by one.
        for (std::size_t i = mid; i < hi; ++i) {
          resume(runners_[i].handle());
        }
      } else {
        pushed = true;
      }
      hi = mid;
    }
    if (pushed) {
      w.pool->notify_local_push();
    }
    return runners_[lo].handle();
  }

 private:
  std::span<child_runner> runners_;
  race* race_;
  std::coroutine_handle<> parent_;
  std::atomic<std::size_t> remaining_{0};
};

inline std::coroutine_handle<> child_runner::promise_type::done_awaiter::await_suspend(
    std::coroutine_handle<promise_type> h) const noexcept {
  promise_type& p = h.promise();
  return transfer_to(h, p.owner->child_done(p.index));
}

inline void child_runner::promise_type::execute(job* j) noexcept {
  auto* p = static_cast<promise_type*>(j);
  resume(p->owner->split(*current_worker, p->index, p->split_end));
}

}  // namespace fjord::detail
