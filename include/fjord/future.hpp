#pragma once

#include <atomic>
#include <future>
#include <stdexcept>
#include <type_traits>
#include <utility>

#include "fjord/detail/chrono.hpp"
#include "fjord/detail/completion_latch.hpp"
#include "fjord/detail/deadline.hpp"
#include "fjord/detail/future_state.hpp"
#include "fjord/detail/pool_core.hpp"
#include "fjord/detail/result_slot.hpp"
#include "fjord/detail/worker.hpp"

namespace fjord {

/// The result of pool::submit: a move-only handle in the manner of std::future.
/// get() returns the value or rethrows the job's exception; waiting from a
/// worker of the same pool runs other jobs meanwhile instead of blocking.
template <class T>
class [[nodiscard]] future {
 public:
  future() noexcept = default;
  /// Made by pool::submit().
  explicit future(detail::future_state<T>* state) noexcept : state_(state) {}
  /// Moves the handle; `other` is left without a state.
  future(future&& other) noexcept : state_(std::exchange(other.state_, nullptr)) {}
  /// Drops this future's state (without waiting) and takes over `other`'s.
  future& operator=(future&& other) noexcept {
    if (this != &other) {
      reset();
      state_ = std::exchange(other.state_, nullptr);
    }
    return *this;
  }
  future(const future&) = delete;
  future& operator=(const future&) = delete;
  ~future() { reset(); }

  /// Whether this future refers to a result (false once get() ran or after a move).
  bool valid() const noexcept { return state_ != nullptr; }

  /// True once the result (value or exception) is available.
  bool ready() const {
    check_valid();
    return state_->latch.done();
  }

  /// Waits for the result without taking it; throws std::future_error (no_state) if invalid.
  void wait() const {
    check_valid();
    if (!state_->latch.done()) {
      state_->pool->wait(state_->latch);
    }
  }

  /// Sleeps at most timeout_duration; `std::future_status::ready` or `timeout`.
  /// A timeout too long to represent (hours::max()) means no timeout.
  template <class Rep, class Period>
  std::future_status wait_for(const std::chrono::duration<Rep, Period>& timeout_duration) const {
    return wait_until_steady(detail::deadline_after(timeout_duration));
  }

  /// A time point already past does not wait.
  template <class Clock, class Duration>
  std::future_status wait_until(const std::chrono::time_point<Clock, Duration>& deadline) const {
    return wait_until_steady(detail::deadline_at(deadline));
  }

  /// Waits, then returns the result or rethrows; leaves the future invalid.
  T get() {
    wait();
    future keep = std::move(*this);  // released when get() returns
    auto& result = keep.state_->result;
    if (result.has_error()) {
      std::rethrow_exception(result.error());
    }
    return result.take();
  }

 private:
  std::future_status wait_until_steady(detail::steady_deadline deadline) const {
    check_valid();
    return state_->pool->wait_until(state_->latch, deadline) ? std::future_status::ready
                                                             : std::future_status::timeout;
  }

  void check_valid() const {
    if (state_ == nullptr) {
      throw std::future_error(std::future_errc::no_state);
    }
  }
  void reset() noexcept {
    if (state_ != nullptr) {
      std::exchange(state_, nullptr)->release();
    }
  }

  detail::future_state<T>* state_ = nullptr;
};

}  // namespace fjord
