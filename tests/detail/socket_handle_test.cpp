#include "fjord/detail/socket_handle.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <random>
#include <system_error>
#include <thread>
#include <vector>

#include "fjord/sync_wait.hpp"
#include "fjord/task.hpp"

namespace {

using namespace std::chrono_literals;
using fjord::detail::socket_handle;

bool fd_is_open(int fd) {
  return ::fcntl(fd, F_GETFD) != -1;
}

// One end of a socket pair in a socket_handle; the other end is ours.
struct socket_pair {
  int peer = -1;
  int handled = -1;
  socket_pair() {
    int fds[2];
    if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, fds) != 0) {
      throw std::system_error(errno, std::generic_category(), "socketpair");
    }
    handled = fds[0];
    peer = fds[1];
  }
  ~socket_pair() { ::close(peer); }
  socket_pair(const socket_pair&) = delete;
  socket_pair& operator=(const socket_pair&) = delete;
};

TEST(socket_handle, the_fd_stays_open_until_the_last_operation_ends) {
  const socket_pair p;
  socket_handle h(p.handled);
  {
    const socket_handle::operation op(h, "read");
    h.close();
    EXPECT_FALSE(h.is_open());
    EXPECT_TRUE(fd_is_open(p.handled)) << "closed under a running operation";
    try {
      const socket_handle::operation late(h, "write");
      FAIL() << "an operation began on a closed socket";
    } catch (const std::system_error& e) {
      EXPECT_EQ(e.code().value(), EBADF);
      EXPECT_NE(std::string(e.what()).find("write on a closed socket"), std::string::npos);
    }
  }
  EXPECT_FALSE(fd_is_open(p.handled));
  h.close();  // idempotent
}

TEST(socket_handle, a_wait_after_close_ends_at_once_with_closed) {
  const socket_pair p;
  socket_handle h(p.handled);
  const socket_handle::operation op(h, "read");
  h.close();
  auto body = [&]() -> fjord::task<fjord::io_status> {
    co_return co_await h.wait(fjord::detail::io_direction::read, 10s);
  };
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_EQ(fjord::sync_wait(body()), fjord::io_status::closed);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 5s);
}

// Threads run operations (a recv that finds nothing) while the main thread
// closes: every operation that began used an open fd, operations that
// begin after the close are refused, and the fd is closed at the end.
TEST(socket_handle, stress_operations_racing_close) {
  for (int round = 0; round < 200; ++round) {
    const socket_pair p;
    const int fd = p.handled;
    socket_handle h(fd);
    std::atomic<bool> go{false};
    std::atomic<int> bad_fd_seen{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < 3; ++t) {
      threads.emplace_back([&] {
        while (!go) {
        }
        for (int i = 0; i < 200; ++i) {
          try {
            const socket_handle::operation op(h, "read");
            char c = 0;
            if (::recv(h.fd(), &c, 1, 0) < 0 && errno == EBADF) {
              bad_fd_seen.fetch_add(1);
            }
          } catch (const std::system_error& e) {
            EXPECT_EQ(e.code().value(), EBADF);
            break;
          }
        }
      });
    }
    std::mt19937 gen(static_cast<unsigned>(round));
    go = true;
    std::this_thread::sleep_for(std::chrono::microseconds(gen() % 200));
    h.close();
    for (auto& t : threads) {
      t.join();
    }
    EXPECT_EQ(bad_fd_seen.load(), 0) << "an operation ran on a closed fd";
    EXPECT_FALSE(fd_is_open(fd));
  }
}

}  // namespace
