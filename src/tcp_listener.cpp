#include "fjord/tcp_listener.hpp"

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <stdexcept>
#include <string>
#include <system_error>

namespace fjord {

namespace {

// accept(2) on Linux passes on errors already pending on the new
// connection; the man page asks TCP servers to treat these like EAGAIN
// and take the next one. ECONNABORTED: the peer reset it before we took it.
bool connection_error(int e) noexcept {
  switch (e) {
    case EINTR:
    case ECONNABORTED:
    case ENETDOWN:
    case EPROTO:
    case ENOPROTOOPT:
    case EHOSTDOWN:
    case ENONET:
    case EHOSTUNREACH:
    case EOPNOTSUPP:
    case ENETUNREACH:
      return true;
    default:
      return false;
  }
}

}  // namespace

tcp_listener tcp_listener::bind(const ip_endpoint& at, int backlog) {
  if (backlog < 1) {
    throw std::invalid_argument("fjord: a listen backlog must be at least 1, not " +
                                std::to_string(backlog));
  }
  const int fd =
      ::socket(at.is_v6() ? AF_INET6 : AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    const int failure = errno;  // read before the message allocates
    throw std::system_error(failure, std::generic_category(),
                            "fjord: cannot make a socket to listen on " + at.to_string());
  }
  tcp_listener l(fd);
  const int on = 1;
  if (::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof on) != 0 ||
      (at.is_v6() && ::setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &on, sizeof on) != 0) ||
      ::bind(fd, at.data(), at.size()) != 0 || ::listen(fd, backlog) != 0) {
    const int failure = errno;  // read before the message allocates
    throw std::system_error(failure, std::generic_category(),
                            "fjord: cannot listen on " + at.to_string());
  }
  return l;
}

task<tcp_stream> tcp_listener::accept(io_deadline deadline) {
  const detail::socket_handle::operation op(socket_, "accept");
  while (true) {
    const int fd = ::accept4(socket_.fd(), nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd >= 0) {
      tcp_stream s(fd, tcp_stream::tcp_socket);
      s.set_no_delay(true);
      co_return s;
    }
    // An error of that one connection, not of the listener: take the next.
    if (connection_error(errno)) {
      continue;
    }
    if (errno != EAGAIN && errno != EWOULDBLOCK) {
      socket_.throw_error(errno, "accept");
    }
    socket_.throw_unless_ready(co_await socket_.wait(detail::io_direction::read, deadline),
                               "accept");
  }
}

ip_endpoint tcp_listener::local_endpoint() const {
  return socket_.endpoint(false);
}

}  // namespace fjord
