#include "fjord/ip_endpoint.hpp"

#include <gtest/gtest.h>

#include <stdexcept>
#include <string>

namespace {

TEST(ip_endpoint, parses_and_prints_ipv4_and_ipv6) {
  const auto a = fjord::ip_endpoint::parse("127.0.0.1:8080");
  EXPECT_FALSE(a.is_v6());
  EXPECT_EQ(a.port(), 8080);
  EXPECT_EQ(a.to_string(), "127.0.0.1:8080");
  const auto b = fjord::ip_endpoint::parse("[::1]:65535");
  EXPECT_TRUE(b.is_v6());
  EXPECT_EQ(b.port(), 65535);
  EXPECT_EQ(b.to_string(), "[::1]:65535");
  EXPECT_EQ(fjord::ip_endpoint::parse(b.to_string()), b);
  EXPECT_EQ(a, fjord::ip_endpoint::loopback_v4(8080));
  EXPECT_EQ(b, fjord::ip_endpoint::loopback_v6(65535));
  EXPECT_EQ(fjord::ip_endpoint::from_address("10.1.2.3", 9).to_string(), "10.1.2.3:9");
}

TEST(ip_endpoint, bad_text_is_refused_by_name) {
  for (const std::string bad : {"127.0.0.1", "127.0.0.1:", "127.0.0.1:65536", "::1:80", "[::1]80",
                                "host.example:80", "1.2.3.4:-1", "[::1]:x"}) {
    try {
      fjord::ip_endpoint::parse(bad);
      ADD_FAILURE() << bad << " was accepted";
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find(bad), std::string::npos) << e.what();
    }
  }
}

}  // namespace
