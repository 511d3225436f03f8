// A minimal HTTP/1.1 server on fjord's coroutines: keep-alive, a fixed
// 13-byte body, no dependency. It reads requests up to their blank line
// (bodies are not supported: a request with one is answered and closed).
//
//   example_http_server 8080        serves on port 8080 until killed
//   example_http_server             serves on a free port, sends itself
//                                   100 keep-alive requests, checks, exits
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>
#include <string_view>
#include <vector>

#include "fjord/pool.hpp"
#include "fjord/spawn.hpp"
#include "fjord/sync_wait.hpp"
#include "fjord/task.hpp"
#include "fjord/tcp_listener.hpp"
#include "fjord/tcp_stream.hpp"
#include "fjord/when_all.hpp"

using namespace std::chrono_literals;

constexpr std::string_view response =
    "HTTP/1.1 200 OK\r\nContent-Length: 13\r\nContent-Type: text/plain\r\n\r\nHello, world!";

fjord::task<void> session(fjord::tcp_stream s) {
  std::string pending;
  std::vector<char> buffer(4096);
  try {
    while (true) {
      // Answer every complete request already read (pipelining included).
      std::size_t end = 0;
      while ((end = pending.find("\r\n\r\n")) != std::string::npos) {
        const std::string head = pending.substr(0, end);
        pending.erase(0, end + 4);
        co_await s.write_all(std::as_bytes(std::span(response)), 30s);
        if (head.find("Content-Length:") != std::string::npos ||
            head.find("Connection: close") != std::string::npos) {
          co_return;
        }
      }
      if (pending.size() > 16384) {
        co_return;  // a header that never ends
      }
      const std::size_t n = co_await s.read(std::as_writable_bytes(std::span(buffer)), 30s);
      if (n == 0) {
        co_return;
      }
      pending.append(buffer.data(), n);
    }
  } catch (const std::system_error&) {
    // Reset, timed out or closed: the connection is simply over.
  }
}

fjord::task<void> serve(fjord::pool& p, fjord::tcp_listener& listener, int limit) {
  co_await p.schedule();
  for (int i = 0; limit < 0 || i < limit; ++i) {
    fjord::spawn(p, session(co_await listener.accept()));
  }
}

// Sends `requests` GETs on one connection and checks every response.
fjord::task<bool> get_many(fjord::ip_endpoint at, int requests) {
  fjord::tcp_stream s = co_await fjord::tcp_stream::connect(at, 5s);
  const std::string_view request = "GET / HTTP/1.1\r\nHost: localhost\r\n\r\n";
  for (int i = 0; i < requests; ++i) {
    co_await s.write_all(std::as_bytes(std::span(request)), 5s);
    std::string got(response.size(), '\0');
    co_await s.read_exactly(std::as_writable_bytes(std::span(got)), 5s);
    if (got != response) {
      co_return false;
    }
  }
  co_return true;
}

int main(int argc, char** argv) try {
  fjord::pool p;
  if (argc > 1) {
    auto listener = fjord::tcp_listener::bind(
        fjord::ip_endpoint::any_v4(static_cast<std::uint16_t>(std::strtoul(argv[1], nullptr, 10))));
    std::printf("http server on %s\n", listener.local_endpoint().to_string().c_str());
    fjord::sync_wait(serve(p, listener, -1));
    return 0;
  }
  auto listener = fjord::tcp_listener::bind(fjord::ip_endpoint::loopback_v4(0));
  auto demo = [&]() -> fjord::task<bool> {
    co_await p.schedule();
    auto [served, ok] =
        co_await fjord::when_all(serve(p, listener, 1), get_many(listener.local_endpoint(), 100));
    static_cast<void>(served);
    co_return ok;
  };
  const bool ok = fjord::sync_wait(demo());
  std::printf("100 keep-alive requests: %s\n", ok ? "all answered" : "FAILED");
  return ok ? 0 : 1;
} catch (const std::exception& e) {
  std::fprintf(stderr, "error: %s\n", e.what());
  return 1;
}
