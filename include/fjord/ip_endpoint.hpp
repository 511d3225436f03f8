#pragma once

#include <sys/socket.h>

#include <cstdint>
#include <string>
#include <string_view>

namespace fjord {

/// An IPv4 or IPv6 address with a port: what sockets bind to, connect to
/// and report. Numeric only (no name lookup: run getaddrinfo through
/// fjord::blocking).
class ip_endpoint {
 public:
  /// 0.0.0.0:0.
  ip_endpoint() noexcept;

  /// "127.0.0.1:8080", "[::1]:8080" or "[fe80::1%eth0]:80". Throws
  /// std::invalid_argument naming the text when it is not one of those.
  static ip_endpoint parse(std::string_view text);
  /// An address ("10.0.0.1", "::1") and a port; throws like parse().
  static ip_endpoint from_address(std::string_view address, std::uint16_t port);
  /// `127.0.0.1:port`.
  static ip_endpoint loopback_v4(std::uint16_t port) noexcept;
  /// `[::1]:port`.
  static ip_endpoint loopback_v6(std::uint16_t port) noexcept;
  /// `0.0.0.0:port`: every IPv4 address of this host.
  static ip_endpoint any_v4(std::uint16_t port) noexcept;
  /// `[::]:port`: every IPv6 address of this host.
  static ip_endpoint any_v6(std::uint16_t port) noexcept;
  /// From what accept(), getsockname() or recvfrom() filled in. Throws
  /// std::invalid_argument for a family other than AF_INET and AF_INET6.
  static ip_endpoint from_sockaddr(const sockaddr* address, socklen_t length);

  /// Whether this is an IPv6 endpoint.
  bool is_v6() const noexcept { return storage_.ss_family == AF_INET6; }
  /// The port, in host byte order.
  std::uint16_t port() const noexcept;
  /// "127.0.0.1:8080" or "[::1]:8080": parse() reads it back.
  std::string to_string() const;

  /// The address for socket calls (bind, connect, sendto).
  const sockaddr* data() const noexcept { return reinterpret_cast<const sockaddr*>(&storage_); }
  /// The size of what data() points to.
  socklen_t size() const noexcept;

  /// Same family, address and port.
  friend bool operator==(const ip_endpoint& a, const ip_endpoint& b) noexcept;

 private:
  sockaddr_storage storage_{};
};

}  // namespace fjord
