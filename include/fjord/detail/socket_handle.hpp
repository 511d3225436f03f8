#pragma once

#include <optional>
#include <stop_token>
#include <utility>

#include "fjord/detail/fd_wait.hpp"
#include "fjord/detail/reactor.hpp"
#include "fjord/io_deadline.hpp"
#include "fjord/io_status.hpp"
#include "fjord/ip_endpoint.hpp"

namespace fjord::detail {

// A socket fjord owns: the fd (non-blocking, close-on-exec) and its
// registration with the reactor. What tcp_listener, tcp_stream and
// udp_socket share.
class socket_handle {
 public:
  socket_handle() noexcept = default;
  // Takes fd; makes it non-blocking and registers it. On failure closes it
  // and throws std::system_error naming it.
  explicit socket_handle(int fd);
  socket_handle(socket_handle&& other) noexcept
      : fd_(std::exchange(other.fd_, -1)),
        registration_(std::exchange(other.registration_, nullptr)) {}
  socket_handle& operator=(socket_handle&& other) noexcept {
    if (this != &other) {
      close();
      fd_ = std::exchange(other.fd_, -1);
      registration_ = std::exchange(other.registration_, nullptr);
    }
    return *this;
  }
  socket_handle(const socket_handle&) = delete;
  socket_handle& operator=(const socket_handle&) = delete;
  ~socket_handle() { close(); }

  int fd() const noexcept { return fd_; }
  bool is_open() const noexcept { return fd_ >= 0; }
  // Unregisters (pending waits end, their operations throw) and closes.
  void close() noexcept;

  // After EAGAIN: waits for the next edge in that direction.
  [[nodiscard]] fd_wait wait(io_direction direction, io_deadline deadline) const noexcept {
    return {registration_, direction, deadline, std::nullopt, false};
  }

  // Throws std::system_error with EBADF naming `what` when the socket is
  // not open.
  void check_open(const char* what) const;

  // Throws for a wait that did not end ready: std::system_error with
  // timed_out, operation_canceled or bad_file_descriptor (closed while
  // waiting), naming `what` and the fd.
  void throw_unless_ready(io_status s, const char* what) const;

  // The socket's own address (getsockname) or its peer's (getpeername).
  // Throws std::system_error (EBADF when closed, ENOTCONN for no peer).
  ip_endpoint endpoint(bool peer) const;

  // Throws std::system_error(error), naming `what` and the fd.
  [[noreturn]] void throw_error(int error, const char* what) const;

 private:
  int fd_ = -1;
  io_registration* registration_ = nullptr;
};

}  // namespace fjord::detail
