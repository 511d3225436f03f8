// The Boost.Asio peer of the network benchmarks, driven by bench_net_load:
// C++20 coroutines (asio::awaitable), one per connection, on an io_context
// run by THREADS threads.
//
//   bench_net_asio_server PORT THREADS echo|http
//
// echo reads into a 4 KiB buffer and writes back what it read; http answers
// every request head with the same fixed reply as the other servers.

#include <utility>  // before asio: Boost 1.74's awaitable.hpp uses std::exchange unincluded

#include <boost/asio.hpp>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

namespace asio = boost::asio;
using asio::ip::tcp;

namespace {

constexpr std::string_view http_reply =
    "HTTP/1.1 200 OK\r\nContent-Length: 13\r\nContent-Type: text/plain\r\n\r\nHello, world!";

asio::awaitable<void> echo(tcp::socket s) {
  std::vector<char> buffer(4096);
  try {
    while (true) {
      const std::size_t n = co_await s.async_read_some(asio::buffer(buffer), asio::use_awaitable);
      co_await asio::async_write(s, asio::buffer(buffer.data(), n), asio::use_awaitable);
    }
  } catch (const std::exception&) {
    // The load generator went away.
  }
}

asio::awaitable<void> http(tcp::socket s) {
  std::vector<char> buffer(4096);
  std::string replies;
  std::size_t matched = 0;  // how much of "\r\n\r\n" the bytes read so far end with
  try {
    while (true) {
      const std::size_t n = co_await s.async_read_some(asio::buffer(buffer), asio::use_awaitable);
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
        co_await asio::async_write(s, asio::buffer(replies), asio::use_awaitable);
      }
    }
  } catch (const std::exception&) {
    // The load generator went away.
  }
}

asio::awaitable<void> serve(tcp::acceptor& acceptor, bool is_http) {
  while (true) {
    tcp::socket s = co_await acceptor.async_accept(asio::use_awaitable);
    s.set_option(tcp::no_delay(true));
    asio::co_spawn(acceptor.get_executor(), is_http ? http(std::move(s)) : echo(std::move(s)),
                   asio::detached);
  }
}

}  // namespace

int main(int argc, char** argv) try {
  if (argc != 4 || (std::strcmp(argv[3], "echo") != 0 && std::strcmp(argv[3], "http") != 0)) {
    std::fprintf(stderr, "usage: bench_net_asio_server PORT THREADS echo|http\n");
    return 2;
  }
  const int threads = std::atoi(argv[2]);
  asio::io_context context(threads);
  tcp::acceptor acceptor(context, tcp::endpoint(asio::ip::address_v4::loopback(),
                                                static_cast<unsigned short>(std::atoi(argv[1]))));
  asio::co_spawn(context, serve(acceptor, std::strcmp(argv[3], "http") == 0), asio::detached);
  std::vector<std::thread> runners;
  for (int i = 1; i < threads; ++i) {
    runners.emplace_back([&] { context.run(); });
  }
  context.run();
  for (auto& t : runners) {
    t.join();
  }
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "bench_net_asio_server: %s\n", e.what());
  return 1;
}
