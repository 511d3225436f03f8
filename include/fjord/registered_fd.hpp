#pragma once

#include <optional>
#include <stop_token>
#include <utility>

#include "fjord/detail/fd_wait.hpp"
#include "fjord/detail/reactor.hpp"
#include "fjord/io_deadline.hpp"
#include "fjord/io_status.hpp"

namespace fjord {

/// An fd another library owns (a pipe, an eventfd, a timerfd, a socket of
/// its own), registered with fjord's reactor so coroutines can wait for it
/// without holding a thread. It does not own the fd: keep the fd open while
/// registered, and close() (or destroy) this before closing the fd (closed
/// first, the fd leaves epoll silently: a pending wait then ends only by its
/// deadline or a stop, and unregistering may hit whatever fd reuses the
/// number). The fd
/// should be non-blocking, so that the operation after a wait cannot block.
///
///   fjord::registered_fd events(efd);
///   for (;;) {
///     // in a statement of its own: g++ 12 miscompiles a co_await in a
///     // condition (docs/coroutines.md, "Compiler pitfalls")
///     const fjord::io_status s = co_await events.readable(1s);
///     if (s != fjord::io_status::ready) break;
///     read(efd, ...);
///   }
class registered_fd {
 public:
  registered_fd() noexcept = default;
  /// Throws std::system_error naming the fd when epoll refuses it (a bad
  /// fd, a regular file, or an fd registered already).
  explicit registered_fd(int fd) : registration_(&detail::reactor::instance().add(fd)) {}
  /// Moves the registration; `other` no longer holds one.
  registered_fd(registered_fd&& other) noexcept
      : registration_(std::exchange(other.registration_, nullptr)) {}
  /// Unregisters this fd, then takes over `other`'s registration.
  registered_fd& operator=(registered_fd&& other) noexcept {
    if (this != &other) {
      close();
      registration_ = std::exchange(other.registration_, nullptr);
    }
    return *this;
  }
  registered_fd(const registered_fd&) = delete;
  registered_fd& operator=(const registered_fd&) = delete;
  ~registered_fd() { close(); }

  /// -1 when not registered.
  int fd() const noexcept { return registration_ != nullptr ? registration_->fd : -1; }
  /// Whether this object holds a registration.
  bool is_registered() const noexcept { return registration_ != nullptr; }

  /// Unregisters (the fd stays open): a pending wait ends with
  /// io_status::closed, also one on another thread. A close() must not race
  /// the start of a wait (readable() / writable() and their co_await) on
  /// another thread: order the two, as for any object. (fjord's own sockets
  /// do allow that race: docs/io.md.) Idempotent.
  void close() noexcept {
    if (registration_ != nullptr) {
      detail::reactor::release(*registration_);
      registration_ = nullptr;
    }
  }

  /// co_await: io_status::ready at once if the fd is readable now, else when
  /// it becomes readable; timeout, canceled (a stop on `token`, or on the
  /// coroutine's own token when none is given) or closed otherwise. Ready
  /// means "try the read": it may still find nothing (EAGAIN), and then you
  /// wait again. One reader and one writer may wait at a time; a second
  /// concurrent wait in the same direction throws std::logic_error.
  [[nodiscard]] detail::fd_wait readable(io_deadline deadline = {},
                                         std::optional<std::stop_token> token = {}) const noexcept {
    return {registration_, detail::io_direction::read, deadline, std::move(token), true};
  }
  /// The same for writing.
  [[nodiscard]] detail::fd_wait writable(io_deadline deadline = {},
                                         std::optional<std::stop_token> token = {}) const noexcept {
    return {registration_, detail::io_direction::write, deadline, std::move(token), true};
  }

 private:
  detail::io_registration* registration_ = nullptr;
};

}  // namespace fjord
