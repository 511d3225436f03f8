// How tcp_listener::accept treats the errors accept(2) returns. Loopback
// cannot make a connection fail with EPROTO or ENETDOWN, so this test
// program defines accept4 itself: the definition in the executable comes
// before the C library's, and it fails as told before making the real call.

#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <system_error>
#include <vector>

#include "fjord/sync_wait.hpp"
#include "fjord/task.hpp"
#include "fjord/tcp_listener.hpp"
#include "fjord/tcp_stream.hpp"
#include "fjord/when_all.hpp"

namespace {

// Errors the next accept4 calls return, in order; then the real call.
std::vector<int> errors_to_return;  // NOLINT: set before each test's coroutines run
std::atomic<int> accept_calls{0};

}  // namespace

extern "C" int accept4(int fd, sockaddr* address, socklen_t* length, int flags) {
  accept_calls.fetch_add(1);
  if (!errors_to_return.empty()) {
    errno = errors_to_return.front();
    errors_to_return.erase(errors_to_return.begin());
    return -1;
  }
  return static_cast<int>(::syscall(SYS_accept4, fd, address, length, flags));
}

namespace {

using namespace std::chrono_literals;

// Connects to l while it accepts; returns the accepted stream's open state
// or the accept's error code.
int accept_one(fjord::tcp_listener& l) {
  auto body = [&]() -> fjord::task<int> {
    auto accept = [&]() -> fjord::task<int> {
      try {
        fjord::tcp_stream s = co_await l.accept(10s);
        co_return s.is_open() ? 0 : -1;
      } catch (const std::system_error& e) {
        co_return e.code().value();
      }
    };
    auto connect = [&]() -> fjord::task<void> {
      fjord::tcp_stream c = co_await fjord::tcp_stream::connect(l.local_endpoint(), 10s);
    };
    auto [accepted, connected] = co_await fjord::when_all(accept(), connect());
    static_cast<void>(connected);
    co_return accepted;
  };
  return fjord::sync_wait(body());
}

TEST(accept_errors, errors_of_the_new_connection_are_skipped) {
  auto listener = fjord::tcp_listener::bind(fjord::ip_endpoint::loopback_v4(0));
  // The errors accept(2) says a TCP server should treat like EAGAIN.
  errors_to_return = {EPROTO,       ENETDOWN,   ENOPROTOOPT, EHOSTDOWN,    ENONET,
                      EHOSTUNREACH, EOPNOTSUPP, ENETUNREACH, ECONNABORTED, EINTR};
  const std::size_t injected = errors_to_return.size();
  accept_calls = 0;
  EXPECT_EQ(accept_one(listener), 0);
  EXPECT_TRUE(errors_to_return.empty());
  EXPECT_GT(accept_calls.load(), static_cast<int>(injected)) << "the real accept ran last";
}

TEST(accept_errors, running_out_of_descriptors_is_reported_by_errno) {
  auto listener = fjord::tcp_listener::bind(fjord::ip_endpoint::loopback_v4(0));
  errors_to_return = {EMFILE};
  EXPECT_EQ(accept_one(listener), EMFILE) << "the caller decides when to try again";
  // The connection is still there for the next accept.
  errors_to_return.clear();
  auto again = [&]() -> fjord::task<bool> {
    fjord::tcp_stream s = co_await listener.accept(10s);
    co_return s.is_open();
  };
  EXPECT_TRUE(fjord::sync_wait(again()));
}

}  // namespace
