// The Boost.Asio peer of the network benchmarks, driven by bench_net_load:
// C++20 coroutines (asio::awaitable), one per connection, on an io_context
// run by THREADS threads; reads into a 4 KiB buffer and writes back what it
// read.
//
//   bench_net_asio_echo PORT THREADS

#include <utility>  // before asio: Boost 1.74's awaitable.hpp uses std::exchange unincluded

#include <boost/asio.hpp>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <vector>

namespace asio = boost::asio;
using asio::ip::tcp;

namespace {

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

asio::awaitable<void> serve(tcp::acceptor& acceptor) {
  while (true) {
    tcp::socket s = co_await acceptor.async_accept(asio::use_awaitable);
    s.set_option(tcp::no_delay(true));
    asio::co_spawn(acceptor.get_executor(), echo(std::move(s)), asio::detached);
  }
}

}  // namespace

int main(int argc, char** argv) try {
  if (argc != 3) {
    std::fprintf(stderr, "usage: bench_net_asio_echo PORT THREADS\n");
    return 2;
  }
  const int threads = std::atoi(argv[2]);
  asio::io_context context(threads);
  tcp::acceptor acceptor(context, tcp::endpoint(asio::ip::address_v4::loopback(),
                                                static_cast<unsigned short>(std::atoi(argv[1]))));
  asio::co_spawn(context, serve(acceptor), asio::detached);
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
  std::fprintf(stderr, "bench_net_asio_echo: %s\n", e.what());
  return 1;
}
