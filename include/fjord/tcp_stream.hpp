#pragma once

#include <cstddef>
#include <span>
#include <stdexcept>

#include "fjord/detail/socket_handle.hpp"
#include "fjord/io_deadline.hpp"
#include "fjord/ip_endpoint.hpp"
#include "fjord/task.hpp"

namespace fjord {

/// Thrown by read_exactly when the peer ends the stream first.
class end_of_stream : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// A connected TCP socket for coroutines: every operation that would block
/// suspends the coroutine (no thread waits) until the socket is ready, its
/// deadline passes or a stop is requested on the coroutine's stop token.
/// Errors are std::system_error with the errno; a deadline that passes
/// throws one with std::errc::timed_out and a stop one with
/// std::errc::operation_canceled (an operation that returns data has no
/// value to return then). One read and one write may be in flight at once
/// (from different coroutines); a second one in the same direction that has
/// to wait while the first waits throws std::logic_error (two that never
/// wait are not caught: do not issue them). Destroying the stream while an
/// operation on it is in progress aborts the process, naming the fd: close()
/// it and let that operation end first.
class tcp_stream {
 public:
  tcp_stream() noexcept = default;
  /// Adopts a connected socket fd (made non-blocking and registered). Takes
  /// ownership even when it throws (the fd is closed then), except when fjord
  /// has the fd registered already (std::errc::file_exists): it stays with
  /// its owner.
  explicit tcp_stream(int fd);

  /// Connects to `to`. Throws std::system_error (connection refused, timed
  /// out, canceled...).
  static task<tcp_stream> connect(ip_endpoint to, io_deadline deadline = {});

  /// Reads what is there, at most buffer.size() bytes, waiting if nothing
  /// is; 0 when the peer has ended the stream (or buffer is empty).
  task<std::size_t> read(std::span<std::byte> buffer, io_deadline deadline = {});
  /// Fills buffer; throws fjord::end_of_stream if the stream ends first.
  task<void> read_exactly(std::span<std::byte> buffer, io_deadline deadline = {});
  /// Writes some of data, waiting for room if there is none; the count.
  task<std::size_t> write(std::span<const std::byte> data, io_deadline deadline = {});
  /// Writes all of data (the deadline covers the whole).
  task<void> write_all(std::span<const std::byte> data, io_deadline deadline = {});

  /// Half-close: the peer reads the end of the stream; we can still read.
  void shutdown_write();
  /// Closes now; an operation waiting on the socket throws (EBADF).
  /// Idempotent.
  void close() noexcept { socket_.close(); }
  /// Whether it holds a socket (false once moved from or closed).
  bool is_open() const noexcept { return socket_.is_open(); }
  /// The socket's fd, or -1.
  int native_handle() const noexcept { return socket_.is_open() ? socket_.fd() : -1; }

  /// TCP_NODELAY: small writes go out at once (on by default for streams
  /// fjord makes or accepts).
  void set_no_delay(bool on);
  /// This end's address.
  ip_endpoint local_endpoint() const;
  /// The peer's address.
  ip_endpoint remote_endpoint() const;

 private:
  friend class tcp_listener;
  // For the sockets fjord itself made TCP (accept, connect): no need to ask.
  static constexpr struct tcp_socket_t {
  } tcp_socket{};
  tcp_stream(int fd, tcp_socket_t) : socket_(fd), trusts_short_reads_(true) {}

  detail::socket_handle socket_;
  // A read that returned less than asked for emptied the receive queue:
  // the next read waits for the next edge first instead of paying for a
  // recv that would say EAGAIN (docs/io.md, "Short reads"). Touched by
  // the one read in flight only.
  bool receive_queue_empty_ = false;
  // Only TCP promises that a short read emptied the queue (a Unix socket
  // stops short at passed fds, credentials or out-of-band data).
  bool trusts_short_reads_ = false;
};

}  // namespace fjord
