#include <gtest/gtest.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <random>
#include <stop_token>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

#include "fjord/pool.hpp"
#include "fjord/stop_token.hpp"
#include "fjord/sync_wait.hpp"
#include "fjord/task.hpp"
#include "fjord/tcp_listener.hpp"
#include "fjord/tcp_stream.hpp"
#include "fjord/when_all.hpp"

namespace {

using namespace std::chrono_literals;

std::vector<std::byte> random_bytes(std::size_t n, unsigned seed) {
  std::mt19937 gen(seed);
  std::vector<std::byte> out(n);
  for (auto& b : out) {
    b = static_cast<std::byte>(gen());
  }
  return out;
}

// Echoes one connection until the peer ends the stream, then ends ours.
fjord::task<void> echo_one(fjord::tcp_stream s) {
  std::vector<std::byte> buffer(16384);
  while (true) {
    const std::size_t n = co_await s.read(buffer, 10s);
    if (n == 0) {
      break;
    }
    co_await s.write_all(std::span(buffer).first(n), 10s);
  }
  s.shutdown_write();
}

fjord::task<void> serve(fjord::tcp_listener& l, int connections) {
  std::vector<fjord::task<void>> sessions;
  for (int i = 0; i < connections; ++i) {
    sessions.push_back(echo_one(co_await l.accept(10s)));
  }
  co_await fjord::when_all(std::move(sessions));
}

// Sends data in pieces while reading the echo concurrently; returns it.
fjord::task<std::vector<std::byte>> round_trip(fjord::ip_endpoint to, std::vector<std::byte> data) {
  fjord::tcp_stream s = co_await fjord::tcp_stream::connect(to, 10s);
  auto send = [&]() -> fjord::task<void> {
    co_await s.write_all(data, 10s);
    s.shutdown_write();
  };
  auto receive = [&]() -> fjord::task<std::vector<std::byte>> {
    std::vector<std::byte> got;
    std::vector<std::byte> buffer(7000);
    while (true) {
      const std::size_t n = co_await s.read(buffer, 10s);
      if (n == 0) {
        co_return got;
      }
      got.insert(got.end(), buffer.begin(), buffer.begin() + static_cast<std::ptrdiff_t>(n));
    }
  };
  auto [sent, got] = co_await fjord::when_all(send(), receive());
  static_cast<void>(sent);
  co_return got;
}

TEST(tcp, echoes_random_sizes_over_ipv4) {
  fjord::pool pool(fjord::pool_options{.workers = 2});
  auto listener = fjord::tcp_listener::bind(fjord::ip_endpoint::loopback_v4(0));
  const fjord::ip_endpoint at = listener.local_endpoint();
  EXPECT_NE(at.port(), 0);
  const std::size_t sizes[] = {0, 1, 63, 64, 4096, 65537, 1 << 20, 3'000'001};
  constexpr int count = sizeof sizes / sizeof sizes[0];
  auto body = [&]() -> fjord::task<void> {
    co_await pool.schedule();
    std::vector<fjord::task<void>> clients;
    for (int i = 0; i < count; ++i) {
      clients.push_back([](fjord::ip_endpoint to, std::size_t n, int seed) -> fjord::task<void> {
        const auto data = random_bytes(n, static_cast<unsigned>(seed));
        const auto got = co_await round_trip(to, data);
        EXPECT_EQ(got.size(), data.size());
        EXPECT_TRUE(got == data) << "size " << n;
      }(at, sizes[i], i));
    }
    co_await fjord::when_all(serve(listener, count), fjord::when_all(std::move(clients)));
  };
  fjord::sync_wait(body());
}

TEST(tcp, echoes_over_ipv6) {
  // The machines fjord is tested on have ::1; a bind failure is a failure.
  auto listener = fjord::tcp_listener::bind(fjord::ip_endpoint::loopback_v6(0));
  const fjord::ip_endpoint at = listener.local_endpoint();
  EXPECT_TRUE(at.is_v6());
  auto body = [&]() -> fjord::task<void> {
    auto client = [&]() -> fjord::task<void> {
      const auto data = random_bytes(100000, 7);
      EXPECT_TRUE(co_await round_trip(at, data) == data);
    };
    co_await fjord::when_all(serve(listener, 1), client());
  };
  fjord::sync_wait(body());
}

TEST(tcp, read_exactly_reports_a_stream_that_ends_early) {
  auto listener = fjord::tcp_listener::bind(fjord::ip_endpoint::loopback_v4(0));
  auto body = [&]() -> fjord::task<std::string> {
    auto server = [&]() -> fjord::task<void> {
      fjord::tcp_stream s = co_await listener.accept(10s);
      const std::byte three[3] = {};
      co_await s.write_all(three);
      s.close();
    };
    auto client = [&]() -> fjord::task<std::string> {
      fjord::tcp_stream s = co_await fjord::tcp_stream::connect(listener.local_endpoint(), 10s);
      std::byte ten[10];
      try {
        co_await s.read_exactly(ten, 10s);
      } catch (const fjord::end_of_stream& e) {
        co_return e.what();
      }
      co_return "no error";
    };
    auto [done, message] = co_await fjord::when_all(server(), client());
    static_cast<void>(done);
    co_return message;
  };
  const std::string message = fjord::sync_wait(body());
  EXPECT_NE(message.find("3 of 10"), std::string::npos) << message;
}

TEST(tcp, half_close_lets_the_other_direction_go_on) {
  auto listener = fjord::tcp_listener::bind(fjord::ip_endpoint::loopback_v4(0));
  auto body = [&]() -> fjord::task<std::string> {
    auto server = [&]() -> fjord::task<void> {
      fjord::tcp_stream s = co_await listener.accept(10s);
      std::byte b[16];
      // The client's end of stream first, then our reply still arrives.
      EXPECT_EQ(co_await s.read(b, 10s), 0u);
      const std::string reply = "after half-close";
      co_await s.write_all(std::as_bytes(std::span(reply)), 10s);
    };
    auto client = [&]() -> fjord::task<std::string> {
      fjord::tcp_stream s = co_await fjord::tcp_stream::connect(listener.local_endpoint(), 10s);
      s.shutdown_write();
      std::string got(16, '\0');
      co_await s.read_exactly(std::as_writable_bytes(std::span(got)), 10s);
      co_return got;
    };
    auto [done, got] = co_await fjord::when_all(server(), client());
    static_cast<void>(done);
    co_return got;
  };
  EXPECT_EQ(fjord::sync_wait(body()), "after half-close");
}

TEST(tcp, a_peer_reset_is_a_system_error_with_its_errno) {
  auto listener = fjord::tcp_listener::bind(fjord::ip_endpoint::loopback_v4(0));
  auto body = [&]() -> fjord::task<int> {
    auto server = [&]() -> fjord::task<void> {
      fjord::tcp_stream s = co_await listener.accept(10s);
      // SO_LINGER 0: close sends a reset instead of an orderly end.
      const linger hard{1, 0};
      ::setsockopt(s.native_handle(), SOL_SOCKET, SO_LINGER, &hard, sizeof hard);
      s.close();
    };
    auto client = [&]() -> fjord::task<int> {
      std::byte b[16];
      try {
        // The reset may come before connect() has looked at the socket's
        // error: then connect reports it.
        fjord::tcp_stream s = co_await fjord::tcp_stream::connect(listener.local_endpoint(), 10s);
        while (co_await s.read(b, 10s) != 0) {
        }
      } catch (const std::system_error& e) {
        co_return e.code().value();
      }
      co_return 0;
    };
    auto [done, error] = co_await fjord::when_all(server(), client());
    static_cast<void>(done);
    co_return error;
  };
  EXPECT_EQ(fjord::sync_wait(body()), ECONNRESET);
}

TEST(tcp, closing_a_stream_while_a_read_waits_is_a_clear_error) {
  fjord::pool pool(fjord::pool_options{.workers = 2});
  auto listener = fjord::tcp_listener::bind(fjord::ip_endpoint::loopback_v4(0));
  fjord::tcp_stream client;
  std::atomic<bool> reading{false};
  auto body = [&]() -> fjord::task<std::string> {
    co_await pool.schedule();
    auto accepted = listener.accept(10s);
    client = co_await fjord::tcp_stream::connect(listener.local_endpoint(), 10s);
    fjord::tcp_stream server_side = co_await std::move(accepted);
    std::byte b[16];
    reading = true;
    try {
      co_await client.read(b, 10s);
    } catch (const std::system_error& e) {
      EXPECT_EQ(e.code().value(), EBADF);
      co_return e.what();
    }
    co_return "no error";
  };
  std::thread closer([&] {
    while (!reading) {
      std::this_thread::yield();
    }
    std::this_thread::sleep_for(20ms);
    client.close();
  });
  const std::string message = fjord::sync_wait(body());
  closer.join();
  EXPECT_NE(message.find("closed while the operation waited"), std::string::npos) << message;
}

TEST(tcp, a_read_times_out_with_timed_out) {
  auto listener = fjord::tcp_listener::bind(fjord::ip_endpoint::loopback_v4(0));
  auto body = [&]() -> fjord::task<int> {
    auto accepted = listener.accept(10s);
    fjord::tcp_stream c = co_await fjord::tcp_stream::connect(listener.local_endpoint(), 10s);
    fjord::tcp_stream s = co_await std::move(accepted);
    std::byte b[4];
    try {
      co_await c.read(b, 20ms);
    } catch (const std::system_error& e) {
      co_return e.code().value();
    }
    co_return 0;
  };
  EXPECT_EQ(fjord::sync_wait(body()), ETIMEDOUT);
}

TEST(tcp, a_stop_request_cancels_a_blocked_accept) {
  fjord::pool pool(fjord::pool_options{.workers = 2});
  auto listener = fjord::tcp_listener::bind(fjord::ip_endpoint::loopback_v4(0));
  std::stop_source source;
  auto accept = [&]() -> fjord::task<int> {
    co_await pool.schedule();
    try {
      co_await listener.accept();
    } catch (const std::system_error& e) {
      co_return e.code().value();
    }
    co_return 0;
  };
  std::thread stopper([&] {
    std::this_thread::sleep_for(20ms);
    source.request_stop();
  });
  EXPECT_EQ(fjord::sync_wait(fjord::with_stop_token(source.get_token(), accept())), ECANCELED);
  stopper.join();
  // The listener still works afterwards.
  auto again = [&]() -> fjord::task<void> {
    auto accepted = listener.accept(10s);
    fjord::tcp_stream c = co_await fjord::tcp_stream::connect(listener.local_endpoint(), 10s);
    fjord::tcp_stream s = co_await std::move(accepted);
    EXPECT_TRUE(s.is_open());
  };
  fjord::sync_wait(again());
}

TEST(tcp, connecting_to_a_closed_port_is_refused) {
  auto listener = fjord::tcp_listener::bind(fjord::ip_endpoint::loopback_v4(0));
  const fjord::ip_endpoint at = listener.local_endpoint();
  listener.close();
  auto body = [&]() -> fjord::task<int> {
    try {
      co_await fjord::tcp_stream::connect(at, 10s);
    } catch (const std::system_error& e) {
      co_return e.code().value();
    }
    co_return 0;
  };
  EXPECT_EQ(fjord::sync_wait(body()), ECONNREFUSED);
}

TEST(tcp, binding_a_port_in_use_names_the_endpoint) {
  auto first = fjord::tcp_listener::bind(fjord::ip_endpoint::loopback_v4(0));
  const fjord::ip_endpoint at = first.local_endpoint();
  try {
    fjord::tcp_listener::bind(at);
    FAIL() << "no error";
  } catch (const std::system_error& e) {
    EXPECT_EQ(e.code().value(), EADDRINUSE);
    EXPECT_NE(std::string(e.what()).find(at.to_string()), std::string::npos) << e.what();
  }
  EXPECT_THROW(fjord::tcp_listener::bind(fjord::ip_endpoint::loopback_v4(0), 0),
               std::invalid_argument);
}

TEST(tcp, operations_on_a_closed_stream_throw) {
  fjord::tcp_stream s;
  std::byte b[1];
  EXPECT_THROW(fjord::sync_wait(s.read(b)), std::system_error);
  EXPECT_THROW(fjord::sync_wait(s.write(b)), std::system_error);
  EXPECT_THROW(s.shutdown_write(), std::system_error);
}

// The client side of ten_thousand_concurrent_connections, in a child
// process (10,000 connections need 20,000 fds, the hard limit here): plain
// syscalls and buffers made before the fork (no allocation in the child).
// Opens n connections at once, sends 64 bytes on each, half-closes, reads
// the echo back. Exit status 0 when every echo came back whole.
[[noreturn]] void connect_and_talk(const fjord::ip_endpoint& to, std::vector<int>& fds,
                                   std::vector<int>& received, std::vector<epoll_event>& events) {
  const int n = static_cast<int>(fds.size());
  const int ep = ::epoll_create1(0);
  for (int i = 0; i < n; ++i) {
    fds[i] = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
    if (fds[i] < 0 || (::connect(fds[i], to.data(), to.size()) != 0 && errno != EINPROGRESS)) {
      ::_exit(2);
    }
    epoll_event ev{};
    ev.events = EPOLLOUT | EPOLLIN | EPOLLET;
    ev.data.u32 = static_cast<std::uint32_t>(i);
    if (::epoll_ctl(ep, EPOLL_CTL_ADD, fds[i], &ev) != 0) {
      ::_exit(3);
    }
    received[i] = -1;  // not sent yet
  }
  int finished = 0;
  char message[64] = {42};
  char back[64];
  while (finished < n) {
    const int k = ::epoll_wait(ep, events.data(), static_cast<int>(events.size()), 60000);
    if (k <= 0) {
      ::_exit(4);
    }
    for (int e = 0; e < k; ++e) {
      const auto i = static_cast<int>(events[e].data.u32);
      if (received[i] == -1 && (events[e].events & EPOLLOUT) != 0) {
        if (::send(fds[i], message, sizeof message, MSG_NOSIGNAL) != 64) {
          ::_exit(5);
        }
        ::shutdown(fds[i], SHUT_WR);
        received[i] = 0;
      }
      while (received[i] >= 0 && received[i] < 64) {
        const ssize_t got = ::recv(fds[i], back, sizeof back, 0);
        if (got <= 0) {
          if (got < 0 && errno == EAGAIN) {
            break;
          }
          ::_exit(6);  // ended early, or an error
        }
        received[i] += static_cast<int>(got);
        if (received[i] == 64) {
          ++finished;
        }
      }
    }
  }
  ::_exit(0);
}

// 10,000 connections open at once in the fjord process, each echoing one
// 64-byte message, on 2 workers.
TEST(tcp, ten_thousand_concurrent_connections) {
  constexpr int n = 10000;
  rlimit limit{};
  ASSERT_EQ(::getrlimit(RLIMIT_NOFILE, &limit), 0);
  const rlim_t needed = n + 500;
  if (limit.rlim_cur < needed) {
    limit.rlim_cur = std::min(needed, limit.rlim_max);
    ASSERT_EQ(::setrlimit(RLIMIT_NOFILE, &limit), 0);
  }
  ASSERT_GE(limit.rlim_cur, needed) << "RLIMIT_NOFILE's hard limit is " << limit.rlim_max;
  fjord::pool pool(fjord::pool_options{.workers = 2});
  auto listener = fjord::tcp_listener::bind(fjord::ip_endpoint::loopback_v4(0), 4096);
  const fjord::ip_endpoint at = listener.local_endpoint();
  std::vector<int> fds(n);
  std::vector<int> received(n);
  std::vector<epoll_event> events(1024);
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    connect_and_talk(at, fds, received, events);
  }
  std::atomic<int> sessions{0};
  std::atomic<int> open_at_once{0};
  std::atomic<int> most_open{0};
  auto body = [&]() -> fjord::task<void> {
    co_await pool.schedule();
    std::vector<fjord::task<void>> all;
    for (int i = 0; i < n; ++i) {
      fjord::tcp_stream s = co_await listener.accept(60s);
      all.push_back([](fjord::tcp_stream c, std::atomic<int>& done, std::atomic<int>& open,
                       std::atomic<int>& most) -> fjord::task<void> {
        const int now = open.fetch_add(1) + 1;
        int seen = most.load();
        while (now > seen && !most.compare_exchange_weak(seen, now)) {
        }
        co_await echo_one(std::move(c));
        open.fetch_sub(1);
        done.fetch_add(1);
      }(std::move(s), sessions, open_at_once, most_open));
    }
    co_await fjord::when_all(std::move(all));
  };
  fjord::sync_wait(body());
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "child status " << status;
  EXPECT_EQ(sessions.load(), n);
  RecordProperty("most_sessions_open_at_once", most_open.load());
}

}  // namespace
