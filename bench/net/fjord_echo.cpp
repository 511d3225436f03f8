// fjord's echo server for bench_net_load: one coroutine per connection on a
// pool of --threads workers, reads and writes with no deadline (as the
// peers' servers have none).
//
//   bench_net_fjord_echo PORT THREADS

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <vector>

#include "fjord/pool.hpp"
#include "fjord/spawn.hpp"
#include "fjord/sync_wait.hpp"
#include "fjord/task.hpp"
#include "fjord/tcp_listener.hpp"
#include "fjord/tcp_stream.hpp"

namespace {

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

fjord::task<void> serve(fjord::pool& p, fjord::tcp_listener& listener) {
  co_await p.schedule();
  while (true) {
    fjord::spawn(p, echo(co_await listener.accept()));
  }
}

}  // namespace

int main(int argc, char** argv) try {
  if (argc != 3) {
    std::fprintf(stderr, "usage: bench_net_fjord_echo PORT THREADS\n");
    return 2;
  }
  fjord::pool p(fjord::pool_options{.workers = std::strtoul(argv[2], nullptr, 10)});
  auto listener = fjord::tcp_listener::bind(fjord::ip_endpoint::loopback_v4(
      static_cast<std::uint16_t>(std::strtoul(argv[1], nullptr, 10))));
  fjord::sync_wait(serve(p, listener));
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "bench_net_fjord_echo: %s\n", e.what());
  return 1;
}
