#pragma once

#include <coroutine>
#include <cstddef>
#include <exception>
#include <functional>
#include <type_traits>
#include <utility>

#include "fjord/detail/blocking_pool.hpp"
#include "fjord/detail/chrono.hpp"
#include "fjord/detail/fork_generation.hpp"
#include "fjord/detail/job.hpp"
#include "fjord/detail/result_slot.hpp"
#include "fjord/detail/resume_job.hpp"

namespace fjord::detail {

template <class F>
class blocking_awaiter {
 public:
  using result_type = std::invoke_result_t<F&>;

  explicit blocking_awaiter(F f) : f_(std::move(f)) {}
  blocking_awaiter(const blocking_awaiter&) = delete;
  blocking_awaiter& operator=(const blocking_awaiter&) = delete;
  ~blocking_awaiter() = default;

  bool await_ready() const noexcept { return false; }

  bool await_suspend(std::coroutine_handle<> h) {
    waiter_.begin_wait(h);
    try {
      blocking_pool::instance().submit(&call_);
    } catch (...) {
      waiter_.undo_begin_wait();
      throw;  // no blocking thread could be made: the co_await throws
    }
    return true;
  }

  result_type await_resume() {
    if (result_.has_error()) {
      std::rethrow_exception(result_.error());
    }
    return result_.take();
  }

 private:
  struct call : blocking_call {
    explicit call(blocking_awaiter* a) noexcept : blocking_call(&execute, &fail_with), self(a) {}
    static void execute(job* j) noexcept {
      blocking_awaiter* a = static_cast<call*>(j)->self;
      const unsigned generation = fork_generation();
      a->result_.run(a->f_);
      if (fork_generation() != generation) [[unlikely]] {
        blocking_pool::end_forked_child();  // before the wake: the coroutine is the parent's
      }
      a->waiter_.wake();  // the last touch: the awaiter may be gone after it
    }
    // Queued, but no thread will ever run it: the co_await throws e.
    static void fail_with(blocking_call* c, std::exception_ptr e) noexcept {
      blocking_awaiter* a = static_cast<call*>(c)->self;
      a->result_.set_error(std::move(e));
      a->waiter_.wake();
    }
    blocking_awaiter* self;
  };

  F f_;
  result_slot<result_type> result_;
  waiting_coroutine waiter_;
  call call_{this};
};

}  // namespace fjord::detail
