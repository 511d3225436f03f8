#include "fjord/detail/socket_handle.hpp"

#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <system_error>

#include "fjord/detail/fork_generation.hpp"

namespace fjord::detail {

socket_handle::socket_handle(int fd) : fd_(fd), state_(0) {
  const int flags = ::fcntl(fd, F_GETFL);
  if (flags < 0 || ::fcntl(fd, F_SETFL, flags | O_NONBLOCK) != 0) {
    const int error = errno;
    ::close(fd);
    fd_ = -1;
    state_.store(closing_bit, std::memory_order_relaxed);
    throw std::system_error(error, std::generic_category(),
                            "fjord: cannot make fd " + std::to_string(fd) + " non-blocking");
  }
  try {
    registration_ = &reactor::instance().add(fd);
  } catch (const std::system_error& e) {
    // EEXIST: the fd is registered already, so another fjord object owns
    // it; closing it here would pull it from under that owner.
    if (e.code() != std::errc::file_exists) {
      ::close(fd);
    }
    fd_ = -1;
    state_.store(closing_bit, std::memory_order_relaxed);
    throw;
  } catch (...) {
    ::close(fd);
    fd_ = -1;
    state_.store(closing_bit, std::memory_order_relaxed);
    throw;
  }
}

socket_handle::~socket_handle() {
  // Operations still in progress hold pointers to this object and would
  // touch it (and close whatever fd number it held) after it is gone: the
  // socket was destroyed, not just closed, while another coroutine was
  // using it. Fail loudly here rather than corrupt memory later. Looked at
  // before close(), which would wake them: one could end before a later
  // look and hide the misuse.
  if ((state_.load(std::memory_order_acquire) & ~closing_bit) != 0) [[unlikely]] {
    std::fprintf(stderr,
                 "fjord: a socket (fd %d) was destroyed while an operation on it was still in "
                 "progress; close() it and let that operation end first\n",
                 fd_);
    std::abort();
  }
  close();
}

socket_handle::operation::operation(const socket_handle& s, const char* what) : s_(&s) {
  // A CAS, not an add: no operation may begin once closing began, or a
  // late one could close the fd a second time. Acquire: pairs with the
  // release of the operation that made the socket (its constructor ran on
  // another thread, for a socket passed along).
  std::uint32_t state = s.state_.load(std::memory_order_relaxed);
  do {
    if ((state & closing_bit) != 0) {
      throw std::system_error(EBADF, std::generic_category(),
                              std::string("fjord: ") + what + " on a closed socket");
    }
  } while (!s.state_.compare_exchange_weak(state, state + one_operation, std::memory_order_acquire,
                                           std::memory_order_relaxed));
}

void socket_handle::end_operation() const noexcept {
  // acq_rel: the last one to let go sees every other's use of the fd
  // before it closes it.
  if (state_.fetch_sub(one_operation, std::memory_order_acq_rel) != (closing_bit | one_operation)) {
    return;
  }
  reactor::release(*registration_);
  ::close(fd_);
}

void socket_handle::close() noexcept {
  // Closing, and counted as an operation until the waits are ended.
  std::uint32_t state = state_.load(std::memory_order_relaxed);
  do {
    if ((state & closing_bit) != 0) {
      return;
    }
  } while (!state_.compare_exchange_weak(state, (state | closing_bit) + one_operation,
                                         std::memory_order_acq_rel, std::memory_order_relaxed));
  reactor::end_waits(*registration_);
  end_operation();
}

ip_endpoint socket_handle::endpoint(bool peer) const {
  const char* what = peer ? "remote_endpoint" : "local_endpoint";
  const operation op(*this, what);
  sockaddr_storage address{};
  socklen_t length = sizeof address;
  auto* raw = reinterpret_cast<sockaddr*>(&address);
  if ((peer ? ::getpeername(fd_, raw, &length) : ::getsockname(fd_, raw, &length)) != 0) {
    throw_error(errno, what);
  }
  return ip_endpoint::from_sockaddr(raw, length);
}

void socket_handle::throw_error(int error, const char* what) const {
  throw std::system_error(error, std::generic_category(),
                          std::string("fjord: ") + what + " on fd " + std::to_string(fd_));
}

void socket_handle::throw_unless_ready(io_status s, const char* what) const {
  switch (s) {
    case io_status::ready:
      return;
    case io_status::timeout:
      throw_error(ETIMEDOUT, what);
    case io_status::canceled:
      throw_error(ECANCELED, what);
    case io_status::closed:
      if (registration_ != nullptr && registration_->fork_generation != fork_generation()) {
        // The registration is the parent's: this process's reactor has
        // never seen the fd, so no wait on it can end by readiness.
        throw std::system_error(EBADF, std::generic_category(),
                                std::string("fjord: ") + what + " on fd " + std::to_string(fd_) +
                                    ": the socket was made before a fork() and cannot wait in "
                                    "the child (use it there with blocking system calls, or "
                                    "make a new one)");
      }
      throw std::system_error(EBADF, std::generic_category(),
                              std::string("fjord: ") + what + " on fd " + std::to_string(fd_) +
                                  ": the socket was closed while the operation waited");
  }
}

}  // namespace fjord::detail
