// fjord's server for bench_net_load: one coroutine per connection on a pool
// of THREADS workers, reads and writes with no deadline (as the peers'
// servers have none).
//
//   bench_net_fjord_server PORT THREADS echo|http
//
// echo writes back what it reads. http answers every request (a head up to
// its blank line) with a fixed 13-byte body, keep-alive: the same minimal
// protocol as the peers' servers (the full example is
// examples/http_server.cpp).

#include <cstdio>
#include <cstdlib>
#include <cstring>
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

namespace {

constexpr std::string_view http_reply =
    "HTTP/1.1 200 OK\r\nContent-Length: 13\r\nContent-Type: text/plain\r\n\r\nHello, world!";

fjord::task<void> echo(fjord::tcp_stream s) {
  std::vector<std::byte> buffer(4096);
  try {
    while (const std::size_t n = co_await s.read(buffer)) {
      co_await s.write_all(std::span(buffer).first(n));
    }
  } catch (const std::system_error&) {
    // The load generator went away.
  }
}

fjord::task<void> http(fjord::tcp_stream s) {
  std::vector<char> buffer(4096);
  std::string replies;
  std::size_t matched = 0;  // how much of "\r\n\r\n" the bytes read so far end with
  try {
    while (const std::size_t n = co_await s.read(std::as_writable_bytes(std::span(buffer)))) {
      replies.clear();
      for (std::size_t i = 0; i < n; ++i) {
        const char c = buffer[i];
        matched = c == "\r\n\r\n"[matched] ? matched + 1 : (c == '\r' ? 1 : 0);
        if (matched == 4) {
          replies += http_reply;
          matched = 0;
        }
      }
      if (!replies.empty()) {
        co_await s.write_all(std::as_bytes(std::span(replies)));
      }
    }
  } catch (const std::system_error&) {
    // The load generator went away.
  }
}

fjord::task<void> serve(fjord::pool& p, fjord::tcp_listener& listener, bool is_http) {
  co_await p.schedule();
  while (true) {
    fjord::tcp_stream s = co_await listener.accept();
    fjord::spawn(p, is_http ? http(std::move(s)) : echo(std::move(s)));
  }
}

}  // namespace

int main(int argc, char** argv) try {
  if (argc != 4 || (std::strcmp(argv[3], "echo") != 0 && std::strcmp(argv[3], "http") != 0)) {
    std::fprintf(stderr, "usage: bench_net_fjord_server PORT THREADS echo|http\n");
    return 2;
  }
  fjord::pool p(fjord::pool_options{.workers = std::strtoul(argv[2], nullptr, 10)});
  auto listener = fjord::tcp_listener::bind(fjord::ip_endpoint::loopback_v4(
      static_cast<std::uint16_t>(std::strtoul(argv[1], nullptr, 10))));
  fjord::sync_wait(serve(p, listener, std::strcmp(argv[3], "http") == 0));
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "bench_net_fjord_server: %s\n", e.what());
  return 1;
}
