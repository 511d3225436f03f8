// What the two bare-mechanism servers of the echo benchmark share
// (epoll_server.cpp, uring_server.cpp): their command line and a listener
// per thread. Each thread binds its own SO_REUSEPORT listener, so the
// kernel spreads connections among threads that share nothing: no
// runtime, no stealing, no wake-ups between threads. Their server CPU per
// request is the floor under any runtime's (what the kernel's loopback TCP
// and the mechanism cost), and the pair tells whether io_uring's
// completion model beats epoll's readiness here. Not a throughput
// ceiling: with no stealing, the thread that got more connections limits.
#pragma once

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string_view>
#include <thread>
#include <vector>

namespace raw_server {

[[noreturn]] inline void fail(const char* what) {
  std::fprintf(stderr, "raw server: %s (%s)\n", what, std::strerror(errno));
  std::exit(1);
}

// A listening socket on 127.0.0.1:port that shares the port with the other
// threads' listeners.
inline int reuseport_listener(int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    fail("socket");
  }
  const int one = 1;
  ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  ::setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof one);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<std::uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || ::listen(fd, 1024) != 0) {
    fail("bind/listen");
  }
  return fd;
}

// Parses PORT THREADS echo, then runs serve(listener) on THREADS threads
// (the listeners all bound before any thread starts, so the first client
// connection finds every one).
template <class Serve>
int main(int argc, char** argv, const char* name, Serve serve) {
  if (argc != 4 || std::string_view(argv[3]) != "echo" || std::atoi(argv[2]) < 1) {
    std::fprintf(stderr, "usage: %s PORT THREADS echo\n", name);
    return 2;
  }
  const int port = std::atoi(argv[1]);
  const int threads = std::atoi(argv[2]);
  std::vector<int> listeners;
  for (int i = 0; i < threads; ++i) {
    listeners.push_back(reuseport_listener(port));
  }
  std::vector<std::thread> running;
  for (int fd : listeners) {
    running.emplace_back([fd, &serve] { serve(fd); });
  }
  for (auto& t : running) {
    t.join();
  }
  return 0;
}

}  // namespace raw_server
