#include "fjord/tcp_stream.hpp"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include <cerrno>
#include <string>
#include <system_error>
#include <utility>

namespace fjord {

using detail::io_direction;

task<tcp_stream> tcp_stream::connect(ip_endpoint to, io_deadline deadline) {
  const int fd =
      ::socket(to.is_v6() ? AF_INET6 : AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    const int failure = errno;  // read before the message allocates
    throw std::system_error(failure, std::generic_category(),
                            "fjord: cannot make a socket to connect to " + to.to_string());
  }
  tcp_stream s(fd, tcp_socket);
  s.set_no_delay(true);
  if (::connect(fd, to.data(), to.size()) != 0) {
    if (errno != EINPROGRESS) {
      const int failure = errno;  // read before the message allocates
      throw std::system_error(failure, std::generic_category(),
                              "fjord: connect to " + to.to_string());
    }
    // Writable is not proof of a connection: a fresh socket reports
    // EPOLLOUT when registered, and a stale readiness may linger. Until the
    // peer is known (getpeername), wait again (as Go's connect does).
    while (true) {
      const io_status status = co_await s.socket_.wait(io_direction::write, deadline);
      if (status != io_status::ready) {
        s.socket_.throw_unless_ready(status, ("connect to " + to.to_string()).c_str());
      }
      int error = 0;
      socklen_t length = sizeof error;
      if (::getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &length) != 0) {
        error = errno;
      }
      if (error != 0) {
        throw std::system_error(error, std::generic_category(),
                                "fjord: connect to " + to.to_string());
      }
      sockaddr_storage peer{};
      socklen_t peer_length = sizeof peer;
      if (::getpeername(fd, reinterpret_cast<sockaddr*>(&peer), &peer_length) == 0) {
        break;
      }
      if (errno != ENOTCONN) {
        const int failure = errno;  // read before the message allocates
        throw std::system_error(failure, std::generic_category(),
                                "fjord: connect to " + to.to_string());
      }
    }
  }
  co_return s;
}

tcp_stream::tcp_stream(int fd) : socket_(fd) {
  // Plain TCP only: not another kind of stream, and not TCP under an upper
  // layer protocol (kernel TLS stops a read at a record boundary with
  // records still queued).
  int protocol = 0;
  socklen_t length = sizeof protocol;
  char upper_layer[16] = {};
  socklen_t upper_length = sizeof upper_layer;
  trusts_short_reads_ = ::getsockopt(fd, SOL_SOCKET, SO_PROTOCOL, &protocol, &length) == 0 &&
                        protocol == IPPROTO_TCP &&
                        (::getsockopt(fd, IPPROTO_TCP, TCP_ULP, upper_layer, &upper_length) != 0 ||
                         upper_layer[0] == '\0');
}

task<std::size_t> tcp_stream::read(std::span<std::byte> buffer, io_deadline deadline) {
  const detail::socket_handle::operation op(socket_, "read");
  if (buffer.empty()) {
    co_return 0;
  }
  // After a short read, the wait comes first; if it ends without an edge
  // (deadline, stop), the recv still runs once, so data that is there is
  // never reported as a timeout.
  io_status early = io_status::ready;
  if (std::exchange(receive_queue_empty_, false)) {
    early = co_await socket_.wait(io_direction::read, deadline);
    if (early == io_status::closed) {
      socket_.throw_unless_ready(early, "read");
    }
  }
  while (true) {
    const ssize_t n = ::recv(socket_.fd(), buffer.data(), buffer.size(), 0);
    if (n >= 0) {
      const auto got = static_cast<std::size_t>(n);
      // Unless an event already said the stream ended (or urgent data
      // came): its edge is spent, and none comes for what is still queued.
      receive_queue_empty_ =
          trusts_short_reads_ && got != 0 && got < buffer.size() && !socket_.read_has_ended();
      co_return got;
    }
    if (errno == EINTR) {
      continue;
    }
    if (errno != EAGAIN && errno != EWOULDBLOCK) {
      socket_.throw_error(errno, "read");
    }
    socket_.throw_unless_ready(std::exchange(early, io_status::ready), "read");
    socket_.throw_unless_ready(co_await socket_.wait(io_direction::read, deadline), "read");
  }
}

task<void> tcp_stream::read_exactly(std::span<std::byte> buffer, io_deadline deadline) {
  std::size_t done = 0;
  while (done < buffer.size()) {
    const std::size_t n = co_await read(buffer.subspan(done), deadline);
    if (n == 0) {
      throw end_of_stream("fjord: the stream on fd " + std::to_string(socket_.fd()) +
                          " ended after " + std::to_string(done) + " of " +
                          std::to_string(buffer.size()) + " bytes");
    }
    done += n;
  }
}

task<std::size_t> tcp_stream::write(std::span<const std::byte> data, io_deadline deadline) {
  const detail::socket_handle::operation op(socket_, "write");
  while (true) {
    // MSG_NOSIGNAL: a peer that went away is EPIPE, not a SIGPIPE.
    const ssize_t n = ::send(socket_.fd(), data.data(), data.size(), MSG_NOSIGNAL);
    if (n >= 0) {
      co_return static_cast<std::size_t>(n);
    }
    if (errno == EINTR) {
      continue;
    }
    if (errno != EAGAIN && errno != EWOULDBLOCK) {
      socket_.throw_error(errno, "write");
    }
    socket_.throw_unless_ready(co_await socket_.wait(io_direction::write, deadline), "write");
  }
}

task<void> tcp_stream::write_all(std::span<const std::byte> data, io_deadline deadline) {
  std::size_t done = 0;
  while (done < data.size()) {
    done += co_await write(data.subspan(done), deadline);
  }
}

void tcp_stream::shutdown_write() {
  const detail::socket_handle::operation op(socket_, "shutdown");
  if (::shutdown(socket_.fd(), SHUT_WR) != 0) {
    socket_.throw_error(errno, "shutdown");
  }
}

void tcp_stream::set_no_delay(bool on) {
  const detail::socket_handle::operation op(socket_, "set_no_delay");
  const int value = on ? 1 : 0;
  if (::setsockopt(socket_.fd(), IPPROTO_TCP, TCP_NODELAY, &value, sizeof value) != 0) {
    socket_.throw_error(errno, "setsockopt(TCP_NODELAY)");
  }
}

ip_endpoint tcp_stream::local_endpoint() const {
  return socket_.endpoint(false);
}

ip_endpoint tcp_stream::remote_endpoint() const {
  return socket_.endpoint(true);
}

}  // namespace fjord
