#pragma once

#include <atomic>
#include <coroutine>
#include <cstdint>
#include <optional>
#include <stop_token>
#include <type_traits>

#include "fjord/detail/io_waiter.hpp"
#include "fjord/detail/promise_stop_token.hpp"
#include "fjord/detail/reactor.hpp"
#include "fjord/io_deadline.hpp"
#include "fjord/io_status.hpp"

namespace fjord::detail {

// Which way a wait looks.
enum class io_direction : unsigned char { read, write };

// co_await: waits until one direction of a registration is ready, the
// deadline passes, or a stop is requested (on the given token, else on the
// one the coroutine runs under). With `check_now`, an fd that is ready at
// the moment of the wait does not wait (level semantics, for user fds);
// without it the caller has just seen EAGAIN and waits for the next edge.
// Protocol: docs/io.md, "Waiting for an fd".
class fd_wait {
 public:
  fd_wait(io_registration* r, io_direction direction, io_deadline deadline,
          std::optional<std::stop_token> token, bool check_now) noexcept;
  fd_wait(const fd_wait&) = delete;
  fd_wait& operator=(const fd_wait&) = delete;
  ~fd_wait() = default;

  bool await_ready() noexcept;

  template <class Promise>
  bool await_suspend(std::coroutine_handle<Promise> h) {
    if (!token_) {
      token_.emplace(inherited_stop_token(h));
    }
    return suspend(h);
  }

  io_status await_resume() noexcept;

 private:
  struct canceler {
    io_waiter* waiter;
    void operator()() const noexcept;
  };
  bool suspend(std::coroutine_handle<> h);
  bool ends_before_waiting() noexcept;
  static bool timer_due(timer_service::entry& e) noexcept;
  static void timer_fire(timer_service::entry& e) noexcept;

  io_registration* registration_;
  std::uint32_t generation_ = 0;
  // The fd, for trace events: read when the wait is made, since close()
  // rewrites the registration's while the wait is pending.
  int fd_ = -1;
  io_direction direction_;
  bool check_now_;
  bool timed_ = false;
  io_deadline deadline_;
  std::optional<std::stop_token> token_;
  io_waiter waiter_;
  std::optional<std::stop_callback<canceler>> on_stop_;
};

}  // namespace fjord::detail
