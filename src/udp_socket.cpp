#include "fjord/udp_socket.hpp"

#include <netinet/in.h>
#include <sys/socket.h>

#include <cerrno>
#include <string>
#include <system_error>

namespace fjord {

udp_socket udp_socket::bind(const ip_endpoint& at) {
  const int fd =
      ::socket(at.is_v6() ? AF_INET6 : AF_INET, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    const int failure = errno;  // read before the message allocates
    throw std::system_error(failure, std::generic_category(),
                            "fjord: cannot make a UDP socket for " + at.to_string());
  }
  udp_socket s(fd);
  if (::bind(fd, at.data(), at.size()) != 0) {
    const int failure = errno;  // read before the message allocates
    throw std::system_error(failure, std::generic_category(),
                            "fjord: cannot bind to " + at.to_string());
  }
  return s;
}

task<std::size_t> udp_socket::send_to(std::span<const std::byte> data, ip_endpoint to,
                                      io_deadline deadline) {
  const detail::socket_handle::operation op(socket_, "send_to");
  while (true) {
    const ssize_t n =
        ::sendto(socket_.fd(), data.data(), data.size(), MSG_NOSIGNAL, to.data(), to.size());
    if (n >= 0) {
      co_return static_cast<std::size_t>(n);
    }
    if (errno == EINTR) {
      continue;
    }
    if (errno != EAGAIN && errno != EWOULDBLOCK) {
      const int failure = errno;  // read before the message allocates
      socket_.throw_error(failure, ("send_to " + to.to_string()).c_str());
    }
    const io_status status = co_await socket_.wait(detail::io_direction::write, deadline);
    if (status != io_status::ready) {
      socket_.throw_unless_ready(status, ("send_to " + to.to_string()).c_str());
    }
  }
}

task<udp_socket::datagram> udp_socket::receive_from(std::span<std::byte> buffer,
                                                    io_deadline deadline) {
  const detail::socket_handle::operation op(socket_, "receive_from");
  while (true) {
    sockaddr_storage address{};
    socklen_t length = sizeof address;
    auto* raw = reinterpret_cast<sockaddr*>(&address);
    // MSG_TRUNC: the datagram's full size, to report truncation.
    const ssize_t n =
        ::recvfrom(socket_.fd(), buffer.data(), buffer.size(), MSG_TRUNC, raw, &length);
    if (n >= 0) {
      datagram d;
      d.truncated = static_cast<std::size_t>(n) > buffer.size();
      d.size = d.truncated ? buffer.size() : static_cast<std::size_t>(n);
      d.from = ip_endpoint::from_sockaddr(raw, length);
      co_return d;
    }
    if (errno == EINTR) {
      continue;
    }
    if (errno != EAGAIN && errno != EWOULDBLOCK) {
      socket_.throw_error(errno, "receive_from");
    }
    socket_.throw_unless_ready(co_await socket_.wait(detail::io_direction::read, deadline),
                               "receive_from");
  }
}

ip_endpoint udp_socket::local_endpoint() const {
  return socket_.endpoint(false);
}

}  // namespace fjord
