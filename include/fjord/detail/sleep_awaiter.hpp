#pragma once

#include <coroutine>
#include <optional>
#include <stop_token>
#include <type_traits>

#include "fjord/detail/chrono.hpp"
#include "fjord/detail/deadline.hpp"
#include "fjord/detail/promise_stop_token.hpp"
#include "fjord/detail/timer_service.hpp"
#include "fjord/sleep_status.hpp"

namespace fjord::detail {

class sleep_awaiter {
 public:
  sleep_awaiter(timer_service::clock::time_point deadline,
                std::optional<std::stop_token> token) noexcept
      : token_(std::move(token)) {
    entry_.deadline = deadline;
  }
  sleep_awaiter(const sleep_awaiter&) = delete;
  sleep_awaiter& operator=(const sleep_awaiter&) = delete;

  bool await_ready() const noexcept { return false; }

  template <class Promise>
  bool await_suspend(std::coroutine_handle<Promise> h) {
    if (!token_) {
      token_.emplace(inherited_stop_token(h));
    }
    if (token_->stop_requested()) {
      entry_.status = timer_service::entry::state::canceled;
      return false;
    }
    if (entry_.deadline <= timer_service::clock::now()) {
      entry_.status = timer_service::entry::state::fired;
      return false;
    }
    // Made (or found) first: the stop callback below uses it too.
    timer_service& service = timer_service::instance();
    entry_.waiter.begin_wait(h);
    if (token_->stop_possible()) {
      // May run at once (a stop requested just now): cancel() then marks the
      // entry canceled and arm() declines.
      on_stop_.emplace(*token_, canceler{&entry_});
    }
    try {
      if (service.arm(entry_)) {
        return true;
      }
    } catch (...) {
      on_stop_.reset();
      entry_.waiter.undo_begin_wait();
      throw;  // out of memory for the heap: the co_await throws
    }
    entry_.waiter.undo_begin_wait();  // canceled before it was armed
    return false;
  }

  sleep_status await_resume() noexcept {
    on_stop_.reset();  // waits for a stop callback running on another thread
    return entry_.status == timer_service::entry::state::canceled ? sleep_status::canceled
                                                                  : sleep_status::elapsed;
  }

 private:
  struct canceler {
    timer_service::entry* entry;
    void operator()() const noexcept { timer_service::instance().cancel(*entry); }
  };

  std::optional<std::stop_token> token_;
  timer_service::entry entry_;
  std::optional<std::stop_callback<canceler>> on_stop_;
};

}  // namespace fjord::detail
