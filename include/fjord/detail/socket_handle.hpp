#pragma once

#include <atomic>
#include <cstdint>
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
//
// close() may race the socket's operations on other threads (not its
// destruction or a move). Each operation holds an `operation` while it uses
// the fd; close() ends pending waits at once (they report `closed`), but
// the fd is closed, and the registration given back, only when the last
// operation lets go (Go's fdMutex). So an operation between its EAGAIN and
// its wait can never find the fd number, or the registration, reused by
// another connection.
class socket_handle {
 public:
  // Marks an operation in progress. Throws std::system_error with EBADF
  // naming `what` when the socket is closed (or closing).
  class operation {
   public:
    operation(const socket_handle& s, const char* what);
    ~operation() { s_->end_operation(); }
    operation(const operation&) = delete;
    operation& operator=(const operation&) = delete;

   private:
    const socket_handle* s_;
  };

  socket_handle() noexcept = default;
  // Takes fd; makes it non-blocking and registers it. On failure closes it
  // (unless it is registered already, EEXIST: another owner has it) and
  // throws std::system_error naming it.
  explicit socket_handle(int fd);
  // Moves are for sockets with no operation in progress.
  socket_handle(socket_handle&& other) noexcept
      : fd_(std::exchange(other.fd_, -1)),
        registration_(std::exchange(other.registration_, nullptr)),
        state_(other.state_.exchange(closing_bit, std::memory_order_relaxed)) {}
  socket_handle& operator=(socket_handle&& other) noexcept {
    if (this != &other) {
      close();
      fd_ = std::exchange(other.fd_, -1);
      registration_ = std::exchange(other.registration_, nullptr);
      state_.store(other.state_.exchange(closing_bit, std::memory_order_relaxed),
                   std::memory_order_relaxed);
    }
    return *this;
  }
  socket_handle(const socket_handle&) = delete;
  socket_handle& operator=(const socket_handle&) = delete;
  // Closes. Aborts (naming the fd) if an operation is still in progress:
  // that operation would use the object after it is gone.
  ~socket_handle();

  // The fd while an operation is held (or the socket is open); -1 for a
  // socket that never had one.
  int fd() const noexcept { return fd_; }
  bool is_open() const noexcept {
    return (state_.load(std::memory_order_acquire) & closing_bit) == 0;
  }
  // Ends pending waits (their operations throw); the fd closes when the
  // operations in progress end. Idempotent.
  void close() noexcept;

  // Inside an operation, after EAGAIN: waits for the next edge in that
  // direction.
  [[nodiscard]] fd_wait wait(io_direction direction, io_deadline deadline) const noexcept {
    return {registration_, direction, deadline, std::nullopt, false};
  }

  // Inside a read: whether an event said the stream ended (the peer closed
  // or reset, an error) or urgent data came. Exact for every event whose
  // readiness the read consumed before the call; an event that came
  // meanwhile, unseen here, leaves its readiness in the slot for the next
  // wait (docs/io.md, "Short reads").
  bool read_has_ended() const noexcept {
    // Relaxed: the consumption of the readiness (an acquire on the slot)
    // is what orders the event's store before this load.
    return registration_ != nullptr && registration_->read_ended.load(std::memory_order_relaxed);
  }

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
  // state_: closing_bit once close() began (or when there is no fd), plus
  // one_operation per operation in progress (close() counts as one while it
  // runs, so the last to let go is the one that closes the fd).
  static constexpr std::uint32_t closing_bit = 1;
  static constexpr std::uint32_t one_operation = 2;

  void end_operation() const noexcept;

  int fd_ = -1;
  io_registration* registration_ = nullptr;
  mutable std::atomic<std::uint32_t> state_{closing_bit};
};

}  // namespace fjord::detail
