#include "fjord/udp_socket.hpp"

#include <gtest/gtest.h>

#include <array>
#include <chrono>
#include <string>
#include <system_error>

#include "fjord/sync_wait.hpp"
#include "fjord/task.hpp"
#include "fjord/when_all.hpp"

namespace {

using namespace std::chrono_literals;

TEST(udp_socket, sends_and_receives_a_datagram_with_its_sender) {
  auto a = fjord::udp_socket::bind(fjord::ip_endpoint::loopback_v4(0));
  auto b = fjord::udp_socket::bind(fjord::ip_endpoint::loopback_v4(0));
  auto body = [&]() -> fjord::task<void> {
    auto receive = [&]() -> fjord::task<void> {
      std::string buffer(64, '\0');
      const auto d = co_await b.receive_from(std::as_writable_bytes(std::span(buffer)), 10s);
      EXPECT_EQ(buffer.substr(0, d.size), "hello");
      EXPECT_FALSE(d.truncated);
      EXPECT_EQ(d.from, a.local_endpoint());
    };
    auto send = [&]() -> fjord::task<void> {
      const std::string text = "hello";
      EXPECT_EQ(co_await a.send_to(std::as_bytes(std::span(text)), b.local_endpoint()), 5u);
    };
    co_await fjord::when_all(receive(), send());
  };
  fjord::sync_wait(body());
}

TEST(udp_socket, a_datagram_longer_than_the_buffer_is_reported_truncated) {
  auto a = fjord::udp_socket::bind(fjord::ip_endpoint::loopback_v4(0));
  auto b = fjord::udp_socket::bind(fjord::ip_endpoint::loopback_v4(0));
  auto body = [&]() -> fjord::task<fjord::udp_socket::datagram> {
    const std::string text(100, 'x');
    co_await a.send_to(std::as_bytes(std::span(text)), b.local_endpoint());
    std::byte small[10];
    co_return co_await b.receive_from(small, 10s);
  };
  const auto d = fjord::sync_wait(body());
  EXPECT_EQ(d.size, 10u);
  EXPECT_TRUE(d.truncated);
}

TEST(udp_socket, a_receive_times_out) {
  auto s = fjord::udp_socket::bind(fjord::ip_endpoint::loopback_v4(0));
  auto body = [&]() -> fjord::task<int> {
    std::byte b[8];
    try {
      co_await s.receive_from(b, 20ms);
    } catch (const std::system_error& e) {
      co_return e.code().value();
    }
    co_return 0;
  };
  EXPECT_EQ(fjord::sync_wait(body()), ETIMEDOUT);
}

TEST(udp_socket, works_over_ipv6) {
  auto a = fjord::udp_socket::bind(fjord::ip_endpoint::loopback_v6(0));
  auto b = fjord::udp_socket::bind(fjord::ip_endpoint::loopback_v6(0));
  auto body = [&]() -> fjord::task<std::size_t> {
    const std::byte data[3] = {};
    co_await a.send_to(data, b.local_endpoint());
    std::byte buffer[8];
    co_return (co_await b.receive_from(buffer, 10s)).size;
  };
  EXPECT_EQ(fjord::sync_wait(body()), 3u);
}

TEST(udp_socket, a_send_that_fails_names_the_destination) {
  fjord::udp_socket s = fjord::udp_socket::bind(fjord::ip_endpoint::loopback_v4(0));
  // An IPv4 socket cannot send to an IPv6 address.
  const fjord::ip_endpoint to = fjord::ip_endpoint::loopback_v6(9);
  const std::array<std::byte, 1> one{};
  try {
    static_cast<void>(fjord::sync_wait(s.send_to(one, to)));
    ADD_FAILURE() << "no error";
  } catch (const std::system_error& e) {
    EXPECT_NE(std::string(e.what()).find(to.to_string()), std::string::npos) << e.what();
  }
}

}  // namespace
