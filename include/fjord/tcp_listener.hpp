#pragma once

#include "fjord/detail/socket_handle.hpp"
#include "fjord/io_deadline.hpp"
#include "fjord/ip_endpoint.hpp"
#include "fjord/task.hpp"
#include "fjord/tcp_stream.hpp"

namespace fjord {

/// A listening TCP socket. accept() suspends the coroutine until a
/// connection comes, its deadline passes (std::system_error, timed_out) or a
/// stop is requested on the coroutine's stop token (std::system_error,
/// operation_canceled).
class tcp_listener {
 public:
  tcp_listener() noexcept = default;

  /// Binds (with SO_REUSEADDR; an IPv6 endpoint accepts IPv6 only) and
  /// listens. Port 0 picks a free port: local_endpoint() tells which.
  /// Throws std::system_error naming the endpoint (address in use...), and
  /// std::invalid_argument for a backlog below 1.
  static tcp_listener bind(const ip_endpoint& at, int backlog = 1024);

  /// Errors of one incoming connection (the peer reset it, or the network
  /// errors accept(2) passes on: EPROTO, ENETDOWN, EHOSTUNREACH...) are
  /// skipped and the next connection taken. Errors of the listener or the
  /// process (EMFILE, ENFILE, ENOBUFS, EBADF) throw std::system_error with
  /// the errno; the connection stays queued for a later accept. A connection
  /// accepted whose socket epoll then refuses (ENOSPC past max_user_watches,
  /// ENOMEM) is closed, and that error thrown. One accept may wait at a
  /// time: a second that has to wait meanwhile throws std::logic_error.
  task<tcp_stream> accept(io_deadline deadline = {});

  /// The address it listens on (the port the system picked, if it was 0).
  ip_endpoint local_endpoint() const;
  /// Closes now; a pending accept throws (EBADF). Idempotent.
  void close() noexcept { socket_.close(); }
  /// Whether it holds a socket (false once moved from or closed).
  bool is_open() const noexcept { return socket_.is_open(); }
  /// The socket's fd, or -1.
  int native_handle() const noexcept { return socket_.is_open() ? socket_.fd() : -1; }

 private:
  explicit tcp_listener(int fd) : socket_(fd) {}
  detail::socket_handle socket_;
};

}  // namespace fjord
