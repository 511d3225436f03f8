#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <random>
#include <stop_token>
#include <string>
#include <string_view>
#include <system_error>
#include <thread>
#include <utility>
#include <vector>

#include "fjord/pool.hpp"
#include "fjord/sleep.hpp"
#include "fjord/spawn.hpp"
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

// A connected pair on loopback (client first).
fjord::task<std::pair<fjord::tcp_stream, fjord::tcp_stream>> connected_pair(
    fjord::tcp_listener& listener) {
  auto accepted = listener.accept(10s);
  fjord::tcp_stream c = co_await fjord::tcp_stream::connect(listener.local_endpoint(), 10s);
  fjord::tcp_stream s = co_await std::move(accepted);
  co_return std::pair{std::move(c), std::move(s)};
}

std::vector<std::byte> bytes_of(std::string_view text) {
  std::vector<std::byte> out(text.size());
  std::memcpy(out.data(), text.data(), text.size());
  return out;
}

// A read that returns less than asked for makes the next read wait for new
// data before its recv (docs/io.md, "Short reads"): data that
// came meanwhile, data that comes later and the end of the stream all
// still reach it.
TEST(tcp, a_read_after_a_short_read_gets_what_came_before_and_after_it) {
  fjord::pool pool(fjord::pool_options{.workers = 2});
  auto listener = fjord::tcp_listener::bind(fjord::ip_endpoint::loopback_v4(0));
  auto body = [&]() -> fjord::task<std::string> {
    co_await pool.schedule();
    auto pair = co_await connected_pair(listener);
    fjord::tcp_stream& c = pair.first;
    fjord::tcp_stream& s = pair.second;
    std::string got;
    std::array<std::byte, 64> buffer{};
    auto read_some = [&]() -> fjord::task<std::size_t> {
      const std::size_t n = co_await c.read(buffer, 10s);
      got.append(reinterpret_cast<const char*>(buffer.data()), n);
      co_return n;
    };
    co_await s.write_all(bytes_of("abc"), 10s);
    EXPECT_EQ(co_await read_some(), 3U);  // short
    // Sent before the next read begins: its edge came while nobody waited.
    co_await s.write_all(bytes_of("defg"), 10s);
    std::this_thread::sleep_for(20ms);
    EXPECT_EQ(co_await read_some(), 4U);  // short again
    // Sent while the read waits.
    auto later = [&]() -> fjord::task<void> {
      co_await fjord::sleep_for(20ms);
      co_await s.write_all(bytes_of("hi"), 10s);
    };
    auto [n, sent] = co_await fjord::when_all(read_some(), later());
    static_cast<void>(sent);
    EXPECT_EQ(n, 2U);
    // The end of the stream after a short read.
    s.shutdown_write();
    EXPECT_EQ(co_await read_some(), 0U);
    co_return got;
  };
  EXPECT_EQ(fjord::sync_wait(body()), "abcdefghi");
}

TEST(tcp, a_read_after_a_short_read_still_times_out_and_an_empty_read_returns_at_once) {
  auto listener = fjord::tcp_listener::bind(fjord::ip_endpoint::loopback_v4(0));
  auto body = [&]() -> fjord::task<int> {
    auto pair = co_await connected_pair(listener);
    fjord::tcp_stream& c = pair.first;
    fjord::tcp_stream& s = pair.second;
    co_await s.write_all(bytes_of("x"), 10s);
    std::array<std::byte, 8> buffer{};
    EXPECT_EQ(co_await c.read(buffer, 10s), 1U);
    EXPECT_EQ(co_await c.read(std::span<std::byte>(), 10s), 0U);
    try {
      co_await c.read(buffer, 20ms);
    } catch (const std::system_error& e) {
      co_return e.code().value();
    }
    co_return 0;
  };
  EXPECT_EQ(fjord::sync_wait(body()), ETIMEDOUT);
}

// Reads until the end of the stream. A read that waited for an edge that
// never came would end by its deadline and then find the data (see
// a_read_with_a_deadline_already_passed...): such a hang shows as the
// deadline reached, which fails the test.
fjord::task<std::string> read_to_end(fjord::tcp_stream& c) {
  std::string got;
  std::array<std::byte, 64> buffer{};
  const auto deadline = std::chrono::steady_clock::now() + 5s;
  while (const std::size_t n = co_await c.read(buffer, deadline)) {
    got.append(reinterpret_cast<const char*>(buffer.data()), n);
  }
  EXPECT_LT(std::chrono::steady_clock::now(), deadline) << "a read waited for its deadline";
  co_return got;
}

void set_cork(const fjord::tcp_stream& s, bool on) {
  const int value = on ? 1 : 0;
  ASSERT_EQ(::setsockopt(s.native_handle(), IPPROTO_TCP, TCP_CORK, &value, sizeof value), 0);
}

// Connects a pair, runs writer(server end) beside read_to_end(client end)
// and returns what the client read. `writer` is a coroutine lambda without
// captures, taking the server end by reference.
template <class Writer>
std::string read_while_writing(fjord::tcp_listener& listener, Writer writer) {
  auto body = [&]() -> fjord::task<std::string> {
    auto pair = co_await connected_pair(listener);
    auto [got, done] = co_await fjord::when_all(read_to_end(pair.first), writer(pair.second));
    static_cast<void>(done);
    co_return got;
  };
  return fjord::sync_wait(body());
}

// Corked, the data and the end of the stream leave in one segment: one
// edge announces both, the read that consumes it gets the data (a short
// read), and the next read must still see the end, with no edge to come.
TEST(tcp, a_short_read_whose_edge_also_carried_the_end_still_reads_the_end) {
  auto listener = fjord::tcp_listener::bind(fjord::ip_endpoint::loopback_v4(0));
  auto writer = [](fjord::tcp_stream& s) -> fjord::task<void> {
    co_await fjord::sleep_for(20ms);  // the reader waits by then
    set_cork(s, true);
    co_await s.write_all(bytes_of("xyz"), 10s);
    s.shutdown_write();
  };
  EXPECT_EQ(read_while_writing(listener, writer), "xyz");
}

// A TCP read stops short at the urgent mark with data still queued behind
// it: urgent data turns the short-read hint off. (The kernel may send the
// urgent byte in a segment of its own, which gives a second edge: then this
// passes without that rule too; it still checks what a reader gets.)
TEST(tcp, a_read_stopped_short_by_urgent_data_goes_on_past_it) {
  auto listener = fjord::tcp_listener::bind(fjord::ip_endpoint::loopback_v4(0));
  auto writer = [](fjord::tcp_stream& s) -> fjord::task<void> {
    co_await fjord::sleep_for(20ms);
    set_cork(s, true);
    const int fd = s.native_handle();
    EXPECT_EQ(::send(fd, "ab", 2, MSG_OOB), 2);  // "b" is the urgent byte
    EXPECT_EQ(::send(fd, "cd", 2, 0), 2);
    set_cork(s, false);
    co_await fjord::sleep_for(20ms);
    s.shutdown_write();
  };
  // Not SO_OOBINLINE: the urgent byte is out of band.
  EXPECT_EQ(read_while_writing(listener, writer), "acd");
}

// After a short read the next read waits first; if that wait ends by its
// deadline, data that is there is still returned, not a timeout.
TEST(tcp, a_read_with_a_deadline_already_passed_returns_data_that_is_there) {
  auto listener = fjord::tcp_listener::bind(fjord::ip_endpoint::loopback_v4(0));
  auto body = [&]() -> fjord::task<std::string> {
    auto pair = co_await connected_pair(listener);
    fjord::tcp_stream& c = pair.first;
    fjord::tcp_stream& s = pair.second;
    std::array<std::byte, 16> buffer{};
    co_await s.write_all(bytes_of("1"), 10s);
    EXPECT_EQ(co_await c.read(buffer, 10s), 1U);  // short
    co_await s.write_all(bytes_of("23"), 10s);
    std::this_thread::sleep_for(20ms);  // arrived; nobody polled for it
    const std::size_t n = co_await c.read(buffer, 0ms);
    co_return std::string(reinterpret_cast<const char*>(buffer.data()), n);
  };
  EXPECT_EQ(fjord::sync_wait(body()), "23");
}

// Sends two bytes with an fd attached (SCM_RIGHTS). A plain function: the
// control buffer needs cmsghdr's alignment, which a coroutine frame does
// not give a local array under g++ 12.
void send_with_an_fd(int socket, const char (&two)[3], int fd) {
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
  char bytes[2] = {two[0], two[1]};
  iovec data{bytes, 2};
  msghdr message{};
  message.msg_iov = &data;
  message.msg_iovlen = 1;
  message.msg_control = control;
  message.msg_controllen = sizeof control;
  cmsghdr* c = CMSG_FIRSTHDR(&message);
  c->cmsg_level = SOL_SOCKET;
  c->cmsg_type = SCM_RIGHTS;
  c->cmsg_len = CMSG_LEN(sizeof(int));
  std::memcpy(CMSG_DATA(c), &fd, sizeof(int));
  EXPECT_EQ(::sendmsg(socket, &message, 0), 2);
}

// A Unix stream socket stops a read short after a message that carries
// fds, with data still queued behind it and no edge to come: a tcp_stream
// adopted from such an fd takes no short-read hint (it asks SO_PROTOCOL),
// so the next read gets that data at once, not after its deadline.
TEST(tcp, a_stream_adopted_from_a_unix_socket_reads_past_a_short_read) {
  int fds[2] = {-1, -1};
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds), 0);
  fjord::tcp_stream reader(fds[0]);
  // Sent while the reader waits, so no readiness is left over from before:
  // "ab" carries an fd (a duplicate of the sender's end), "cd" follows.
  auto writer = [&]() -> fjord::task<void> {
    send_with_an_fd(fds[1], "ab", fds[1]);
    EXPECT_EQ(::send(fds[1], "cd", 2, 0), 2);
    co_return;
  };
  auto read_twice = [&]() -> fjord::task<std::string> {
    std::array<std::byte, 64> buffer{};
    std::string got;
    const std::size_t first = co_await reader.read(buffer, 10s);
    got.append(reinterpret_cast<const char*>(buffer.data()), first);
    got += '|';
    const auto start = std::chrono::steady_clock::now();
    const std::size_t second = co_await reader.read(buffer, 5s);
    got.append(reinterpret_cast<const char*>(buffer.data()), second);
    EXPECT_LT(std::chrono::steady_clock::now() - start, 4s) << "the read waited for its deadline";
    co_return got;
  };
  auto body = [&]() -> fjord::task<std::string> {
    auto [got, done] = co_await fjord::when_all(read_twice(), writer());
    static_cast<void>(done);
    co_return got;
  };
  // The kernel stops the first read after the message with the fd.
  EXPECT_EQ(fjord::sync_wait(body()), "ab|cd");
  reader.close();
  ::close(fds[1]);
}

// Many connections, each a long run of tiny round trips, on two workers:
// the traffic that makes workers hand the poller role to each other and
// wake each other to poll thousands of times. Every round trip completes,
// exactly once, with the right bytes.
TEST(tcp, small_round_trips_on_many_connections_all_complete) {
  constexpr int connections = 64;
  constexpr int trips = 300;
  fjord::pool pool(fjord::pool_options{.workers = 2});
  auto listener = fjord::tcp_listener::bind(fjord::ip_endpoint::loopback_v4(0), 256);
  const fjord::ip_endpoint at = listener.local_endpoint();
  std::atomic<int> completed{0};
  auto client = [&](int id) -> fjord::task<void> {
    fjord::tcp_stream c = co_await fjord::tcp_stream::connect(at, 10s);
    std::array<std::byte, 8> out{};
    std::array<std::byte, 8> in{};
    for (int t = 0; t < trips; ++t) {
      const std::uint64_t word =
          (std::uint64_t{static_cast<unsigned>(id)} << 32) | static_cast<unsigned>(t);
      std::memcpy(out.data(), &word, sizeof word);
      co_await c.write_all(out, 10s);
      co_await c.read_exactly(in, 10s);
      EXPECT_EQ(std::memcmp(in.data(), out.data(), sizeof word), 0) << id << " " << t;
      completed.fetch_add(1, std::memory_order_relaxed);
    }
  };
  auto body = [&]() -> fjord::task<void> {
    co_await pool.schedule();
    std::vector<fjord::task<void>> clients;
    for (int i = 0; i < connections; ++i) {
      clients.push_back(client(i));
    }
    co_await fjord::when_all(serve(listener, connections), fjord::when_all(std::move(clients)));
  };
  fjord::sync_wait(body());
  EXPECT_EQ(completed.load(), connections * trips);
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

TEST(tcp, a_connect_that_times_out_names_the_endpoint) {
  // A listener that never accepts, with the smallest backlog: once its
  // queue is full the kernel drops further SYNs, and a connect waits.
  auto listener = fjord::tcp_listener::bind(fjord::ip_endpoint::loopback_v4(0), 1);
  const fjord::ip_endpoint to = listener.local_endpoint();
  std::vector<fjord::tcp_stream> held;
  std::string message;
  for (int i = 0; i < 16 && message.empty(); ++i) {
    try {
      held.push_back(fjord::sync_wait(fjord::tcp_stream::connect(to, 100ms)));
    } catch (const std::system_error& e) {
      EXPECT_EQ(e.code(), std::errc::timed_out) << e.what();
      message = e.what();
    }
  }
  ASSERT_FALSE(message.empty()) << "every connect went through: the queue never filled";
  EXPECT_NE(message.find("connect to " + to.to_string()), std::string::npos) << message;
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

TEST(tcp, adopting_an_fd_another_stream_owns_throws_and_leaves_it_open) {
  int fds[2] = {-1, -1};
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds), 0);
  fjord::tcp_stream owner(fds[0]);
  try {
    const fjord::tcp_stream second(fds[0]);
    ADD_FAILURE() << "a second stream adopted fd " << fds[0];
  } catch (const std::system_error& e) {
    EXPECT_EQ(e.code(), std::errc::file_exists) << e.what();
    EXPECT_NE(std::string(e.what()).find(std::to_string(fds[0])), std::string::npos) << e.what();
  }
  // Still open, and still the owner's: a byte goes through it.
  EXPECT_NE(::fcntl(fds[0], F_GETFD), -1);
  ASSERT_EQ(::send(fds[1], "x", 1, 0), 1);
  std::array<std::byte, 4> buffer{};
  EXPECT_EQ(fjord::sync_wait(owner.read(buffer, 10s)), 1u);
  owner.close();
  ::close(fds[1]);
}

TEST(tcp, a_second_accept_that_waits_while_one_waits_is_a_logic_error) {
  fjord::pool pool(fjord::pool_options{.workers = 1});
  auto listener = fjord::tcp_listener::bind(fjord::ip_endpoint::loopback_v4(0));
  auto attempt = [&]() -> fjord::task<std::string> {
    try {
      co_await listener.accept(300ms);
      co_return "accepted";
    } catch (const std::logic_error&) {
      co_return "logic_error";
    } catch (const std::system_error& e) {
      co_return e.code() == std::errc::timed_out ? "timed out" : e.what();
    }
  };
  auto body = [&]() -> fjord::task<std::vector<std::string>> {
    co_await pool.schedule();
    auto [a, b] = co_await fjord::when_all(attempt(), attempt());
    co_return std::vector<std::string>{a, b};
  };
  std::vector<std::string> outcomes = fjord::sync_wait(body());
  std::sort(outcomes.begin(), outcomes.end());
  EXPECT_EQ(outcomes, (std::vector<std::string>{"logic_error", "timed out"}));
}

TEST(tcp, a_stream_made_before_a_fork_says_so_when_it_would_wait_in_the_child) {
  int fds[2] = {-1, -1};
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds), 0);
  fjord::tcp_stream stream(fds[0]);
  const pid_t pid = ::fork();
  if (pid == 0) {
    int code = 1;
    try {
      std::array<std::byte, 4> buffer{};
      static_cast<void>(fjord::sync_wait(stream.read(buffer, 5s)));
      code = 2;
    } catch (const std::system_error& e) {
      const std::string what = e.what();
      code = e.code().value() == EBADF && what.find("before a fork()") != std::string::npos &&
                     what.find("fd " + std::to_string(fds[0])) != std::string::npos
                 ? 0
                 : 3;
    }
    std::_Exit(code);
  }
  ASSERT_GT(pid, 0);
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
  stream.close();
  ::close(fds[1]);
}

// Destroys a stream while a coroutine's read on it waits (the misuse the
// destructor must catch).
void destroy_a_stream_a_read_waits_on() {
  int fds[2] = {-1, -1};
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) != 0) {
    std::_Exit(3);  // not the death the test looks for: its message is missing
  }
  fjord::pool pool(fjord::pool_options{.workers = 1});
  auto* stream = new fjord::tcp_stream(fds[0]);
  std::atomic<bool> reading{false};
  fjord::spawn(pool, [](fjord::tcp_stream& s, std::atomic<bool>& r) -> fjord::task<void> {
    std::array<std::byte, 4> buffer{};
    r = true;
    try {
      co_await s.read(buffer, 30s);
    } catch (...) {
    }
  }(*stream, reading));
  while (!reading) {
    std::this_thread::yield();
  }
  std::this_thread::sleep_for(100ms);
  delete stream;  // NOLINT(cppcoreguidelines-owning-memory): the misuse under test
}

TEST(tcp, destroying_a_stream_while_a_read_is_in_progress_aborts_naming_the_fd) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_DEATH(
      destroy_a_stream_a_read_waits_on(),
      "socket \\(fd [0-9]+\\) was destroyed while an operation on it was still in progress");
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
