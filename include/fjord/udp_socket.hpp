#pragma once

#include <cstddef>
#include <span>

#include "fjord/detail/socket_handle.hpp"
#include "fjord/io_deadline.hpp"
#include "fjord/ip_endpoint.hpp"
#include "fjord/task.hpp"

namespace fjord {

/// A UDP socket for coroutines, with the same waiting, deadline, stop and
/// error rules as fjord::tcp_stream.
class udp_socket {
 public:
  /// What receive_from() got: the datagram's size (its excess over the
  /// buffer is dropped, as recvfrom does; `truncated` says so) and sender.
  struct datagram {
    /// Bytes received into the buffer.
    std::size_t size = 0;
    /// The sender's address.
    ip_endpoint from;
    /// Whether the datagram was longer than the buffer (the rest is lost).
    bool truncated = false;
  };

  udp_socket() noexcept = default;

  /// A socket bound to `at` (port 0: any free port). Throws
  /// std::system_error naming the endpoint.
  static udp_socket bind(const ip_endpoint& at);

  /// Sends one datagram; its size.
  task<std::size_t> send_to(std::span<const std::byte> data, ip_endpoint to,
                            io_deadline deadline = {});
  /// Receives one datagram into buffer.
  task<datagram> receive_from(std::span<std::byte> buffer, io_deadline deadline = {});

  /// The address the socket is bound to.
  ip_endpoint local_endpoint() const;
  /// Closes the socket now (the destructor does too).
  void close() noexcept { socket_.close(); }
  /// Whether it holds a socket.
  bool is_open() const noexcept { return socket_.is_open(); }
  /// The socket's fd, or -1.
  int native_handle() const noexcept { return socket_.is_open() ? socket_.fd() : -1; }

 private:
  explicit udp_socket(int fd) : socket_(fd) {}
  detail::socket_handle socket_;
};

}  // namespace fjord
