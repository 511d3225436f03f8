// The bare readiness mechanism under the echo benchmark: one epoll loop
// per thread, no runtime (raw_server.hpp says why it is a ceiling).
//
//   bench_net_epoll_server PORT THREADS echo
//
// Level-triggered: a readable connection gets one recv into a 4 KiB buffer
// and one send of what it read (64-byte messages never send short on
// loopback; a short send is treated as the client's loss and closes).
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "raw_server.hpp"

namespace {

void serve(int listener) {
  const int ep = ::epoll_create1(EPOLL_CLOEXEC);
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.fd = listener;
  if (ep < 0 || ::epoll_ctl(ep, EPOLL_CTL_ADD, listener, &ev) != 0) {
    raw_server::fail("epoll");
  }
  char buffer[4096];
  epoll_event ready[128];
  while (true) {
    const int n = ::epoll_wait(ep, ready, 128, -1);
    for (int i = 0; i < n; ++i) {
      const int fd = ready[i].data.fd;
      if (fd == listener) {
        const int c = ::accept4(listener, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (c >= 0) {
          epoll_event add{};
          add.events = EPOLLIN;
          add.data.fd = c;
          ::epoll_ctl(ep, EPOLL_CTL_ADD, c, &add);
        }
        continue;
      }
      const ssize_t got = ::recv(fd, buffer, sizeof buffer, 0);
      if (got > 0 && ::send(fd, buffer, static_cast<std::size_t>(got), MSG_NOSIGNAL) == got) {
        continue;
      }
      if (got < 0 && errno == EAGAIN) {
        continue;
      }
      ::close(fd);  // the client went away (closing removes it from the epoll set)
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  return raw_server::main(argc, argv, "bench_net_epoll_server", serve);
}
