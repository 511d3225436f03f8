#include "fjord/tcp_listener.hpp"

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <stdexcept>
#include <string>
#include <system_error>

namespace fjord {

tcp_listener tcp_listener::bind(const ip_endpoint& at, int backlog) {
  if (backlog < 1) {
    throw std::invalid_argument("fjord: a listen backlog must be at least 1, not " +
                                std::to_string(backlog));
  }
  const int fd =
      ::socket(at.is_v6() ? AF_INET6 : AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    throw std::system_error(errno, std::generic_category(),
                            "fjord: cannot make a socket to listen on " + at.to_string());
  }
  tcp_listener l(fd);
  const int on = 1;
  if (::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof on) != 0 ||
      (at.is_v6() && ::setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &on, sizeof on) != 0) ||
      ::bind(fd, at.data(), at.size()) != 0 || ::listen(fd, backlog) != 0) {
    throw std::system_error(errno, std::generic_category(),
                            "fjord: cannot listen on " + at.to_string());
  }
  return l;
}

task<tcp_stream> tcp_listener::accept(io_deadline deadline) {
  socket_.check_open("accept");
  while (true) {
    const int fd = ::accept4(socket_.fd(), nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd >= 0) {
      tcp_stream s(fd);
      s.set_no_delay(true);
      co_return s;
    }
    // A connection reset before we took it: take the next.
    if (errno == EINTR || errno == ECONNABORTED) {
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
