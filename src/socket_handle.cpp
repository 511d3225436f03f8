#include "fjord/detail/socket_handle.hpp"

#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <string>
#include <system_error>

namespace fjord::detail {

socket_handle::socket_handle(int fd) : fd_(fd) {
  const int flags = ::fcntl(fd, F_GETFL);
  if (flags < 0 || ::fcntl(fd, F_SETFL, flags | O_NONBLOCK) != 0) {
    const int error = errno;
    ::close(fd);
    fd_ = -1;
    throw std::system_error(error, std::generic_category(),
                            "fjord: cannot make fd " + std::to_string(fd) + " non-blocking");
  }
  try {
    registration_ = &reactor::instance().add(fd);
  } catch (...) {
    ::close(fd);
    fd_ = -1;
    throw;
  }
}

void socket_handle::close() noexcept {
  if (registration_ != nullptr) {
    reactor::release(*registration_);
    registration_ = nullptr;
  }
  if (fd_ >= 0) {
    ::close(fd_);
    fd_ = -1;
  }
}

void socket_handle::check_open(const char* what) const {
  if (fd_ < 0) {
    throw std::system_error(EBADF, std::generic_category(),
                            std::string("fjord: ") + what + " on a closed socket");
  }
}

ip_endpoint socket_handle::endpoint(bool peer) const {
  const char* what = peer ? "remote_endpoint" : "local_endpoint";
  check_open(what);
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
      throw std::system_error(
          EBADF, std::generic_category(),
          std::string("fjord: ") + what + ": the socket was closed while the operation waited");
  }
}

}  // namespace fjord::detail
