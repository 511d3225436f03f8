#include "fjord/ip_endpoint.hpp"

#include <arpa/inet.h>
#include <net/if.h>
#include <netinet/in.h>

#include <charconv>
#include <cstring>
#include <stdexcept>

namespace fjord {

namespace {

[[noreturn]] void throw_bad(std::string_view text, const char* why) {
  throw std::invalid_argument("fjord: \"" + std::string(text) + "\" is not an IP endpoint (" + why +
                              ")");
}

sockaddr_in* v4(sockaddr_storage& s) noexcept {
  return reinterpret_cast<sockaddr_in*>(&s);
}
sockaddr_in6* v6(sockaddr_storage& s) noexcept {
  return reinterpret_cast<sockaddr_in6*>(&s);
}
const sockaddr_in* v4(const sockaddr_storage& s) noexcept {
  return reinterpret_cast<const sockaddr_in*>(&s);
}
const sockaddr_in6* v6(const sockaddr_storage& s) noexcept {
  return reinterpret_cast<const sockaddr_in6*>(&s);
}

}  // namespace

ip_endpoint::ip_endpoint() noexcept {
  storage_.ss_family = AF_INET;
}

ip_endpoint ip_endpoint::from_address(std::string_view address, std::uint16_t port) {
  ip_endpoint e;
  const std::string text(address);
  if (::inet_pton(AF_INET, text.c_str(), &v4(e.storage_)->sin_addr) == 1) {
    v4(e.storage_)->sin_family = AF_INET;
    v4(e.storage_)->sin_port = htons(port);
    return e;
  }
  // An IPv6 address, perhaps with a zone ("fe80::1%eth0").
  std::string host = text;
  std::uint32_t scope = 0;
  if (const std::size_t percent = host.find('%'); percent != std::string::npos) {
    const std::string zone = host.substr(percent + 1);
    scope = ::if_nametoindex(zone.c_str());
    if (scope == 0) {
      const auto [end, error] = std::from_chars(zone.data(), zone.data() + zone.size(), scope);
      if (error != std::errc() || end != zone.data() + zone.size()) {
        throw_bad(address, "unknown zone");
      }
    }
    host.resize(percent);
  }
  e.storage_ = {};
  if (::inet_pton(AF_INET6, host.c_str(), &v6(e.storage_)->sin6_addr) != 1) {
    throw_bad(address, "not a numeric IPv4 or IPv6 address");
  }
  v6(e.storage_)->sin6_family = AF_INET6;
  v6(e.storage_)->sin6_port = htons(port);
  v6(e.storage_)->sin6_scope_id = scope;
  return e;
}

ip_endpoint ip_endpoint::parse(std::string_view text) {
  std::string_view host;
  std::string_view port_text;
  if (!text.empty() && text.front() == '[') {
    const std::size_t close = text.find(']');
    if (close == std::string_view::npos || close + 1 >= text.size() || text[close + 1] != ':') {
      throw_bad(text, "expected [address]:port");
    }
    host = text.substr(1, close - 1);
    port_text = text.substr(close + 2);
  } else {
    const std::size_t colon = text.rfind(':');
    if (colon == std::string_view::npos) {
      throw_bad(text, "no port");
    }
    host = text.substr(0, colon);
    port_text = text.substr(colon + 1);
    if (host.find(':') != std::string_view::npos) {
      throw_bad(text, "an IPv6 address goes in brackets");
    }
  }
  unsigned port = 0;
  const auto [end, error] =
      std::from_chars(port_text.data(), port_text.data() + port_text.size(), port);
  if (port_text.empty() || error != std::errc() || end != port_text.data() + port_text.size() ||
      port > 65535) {
    throw_bad(text, "the port must be a number from 0 to 65535");
  }
  try {
    return from_address(host, static_cast<std::uint16_t>(port));
  } catch (const std::invalid_argument&) {
    throw_bad(text, "not a numeric IPv4 or IPv6 address");
  }
}

ip_endpoint ip_endpoint::loopback_v4(std::uint16_t port) noexcept {
  ip_endpoint e;
  v4(e.storage_)->sin_port = htons(port);
  v4(e.storage_)->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  return e;
}

ip_endpoint ip_endpoint::loopback_v6(std::uint16_t port) noexcept {
  ip_endpoint e;
  e.storage_ = {};
  v6(e.storage_)->sin6_family = AF_INET6;
  v6(e.storage_)->sin6_port = htons(port);
  v6(e.storage_)->sin6_addr = in6addr_loopback;
  return e;
}

ip_endpoint ip_endpoint::any_v4(std::uint16_t port) noexcept {
  ip_endpoint e = loopback_v4(port);
  v4(e.storage_)->sin_addr.s_addr = htonl(INADDR_ANY);
  return e;
}

ip_endpoint ip_endpoint::any_v6(std::uint16_t port) noexcept {
  ip_endpoint e = loopback_v6(port);
  v6(e.storage_)->sin6_addr = in6addr_any;
  return e;
}

ip_endpoint ip_endpoint::from_sockaddr(const sockaddr* address, socklen_t length) {
  ip_endpoint e;
  e.storage_ = {};
  if (address->sa_family == AF_INET && length >= static_cast<socklen_t>(sizeof(sockaddr_in))) {
    std::memcpy(&e.storage_, address, sizeof(sockaddr_in));
  } else if (address->sa_family == AF_INET6 &&
             length >= static_cast<socklen_t>(sizeof(sockaddr_in6))) {
    std::memcpy(&e.storage_, address, sizeof(sockaddr_in6));
  } else {
    throw std::invalid_argument("fjord: an address of family " +
                                std::to_string(address->sa_family) + " and " +
                                std::to_string(length) + " bytes is not a whole IPv4 or IPv6 one");
  }
  return e;
}

std::uint16_t ip_endpoint::port() const noexcept {
  return ntohs(is_v6() ? v6(storage_)->sin6_port : v4(storage_)->sin_port);
}

socklen_t ip_endpoint::size() const noexcept {
  return is_v6() ? sizeof(sockaddr_in6) : sizeof(sockaddr_in);
}

std::string ip_endpoint::to_string() const {
  char text[INET6_ADDRSTRLEN] = {};
  std::string out;
  if (!is_v6()) {
    ::inet_ntop(AF_INET, &v4(storage_)->sin_addr, text, sizeof text);
    out.append(text);
  } else {
    ::inet_ntop(AF_INET6, &v6(storage_)->sin6_addr, text, sizeof text);
    // Appended piece by piece: GCC 12 warns falsely (-Wrestrict, GCC bug
    // 105329) about "[" + host + "]:" chains.
    out.push_back('[');
    out.append(text);
    if (const std::uint32_t scope = v6(storage_)->sin6_scope_id; scope != 0) {
      out.push_back('%');
      out.append(std::to_string(scope));
    }
    out.push_back(']');
  }
  out.push_back(':');
  out.append(std::to_string(port()));
  return out;
}

bool operator==(const ip_endpoint& a, const ip_endpoint& b) noexcept {
  if (a.storage_.ss_family != b.storage_.ss_family || a.port() != b.port()) {
    return false;
  }
  if (!a.is_v6()) {
    return v4(a.storage_)->sin_addr.s_addr == v4(b.storage_)->sin_addr.s_addr;
  }
  return std::memcmp(&v6(a.storage_)->sin6_addr, &v6(b.storage_)->sin6_addr, sizeof(in6_addr)) ==
             0 &&
         v6(a.storage_)->sin6_scope_id == v6(b.storage_)->sin6_scope_id;
}

}  // namespace fjord
