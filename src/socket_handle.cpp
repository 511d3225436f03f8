#include "fjord/detail/socket_handle.hpp"

#include <fcntl.h>
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
