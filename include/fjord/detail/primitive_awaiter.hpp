#pragma once

#include <coroutine>
#include <mutex>

#include "fjord/detail/resume_job.hpp"

namespace fjord::detail {

// The awaiter every async primitive hands out: take what the primitive
// offers if it can (Primitive::try_take_locked(), under the primitive's
// guard), else wait in its waiter list. Listing the waiter and the failed
// attempt happen under the same guard, so a release that comes after the
// attempt finds the waiter listed; the releaser wakes it after dropping the
// guard. Nothing in the frame is touched after the guard is released.
template <class Primitive>
class primitive_awaiter {
 public:
  explicit primitive_awaiter(Primitive& p) noexcept : primitive_(p) {}

  bool await_ready() noexcept {
    std::lock_guard lock(primitive_.guard_);
    return primitive_.try_take_locked();
  }
  bool await_suspend(std::coroutine_handle<> h) noexcept {
    std::lock_guard lock(primitive_.guard_);
    if (primitive_.try_take_locked()) {
      return false;
    }
    waiter_.begin_wait(h);
    primitive_.waiters_.push_back(waiter_);
    return true;
  }
  void await_resume() const noexcept {}

 protected:
  Primitive& primitive_;

 private:
  waiting_coroutine waiter_;
};

}  // namespace fjord::detail
