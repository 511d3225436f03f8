// A TCP echo server on fjord's coroutines: one coroutine per connection, no
// thread per connection, no callback.
//
//   example_echo_server 7000        serves on port 7000 until killed
//   example_echo_server             serves on a free port, talks to itself
//                                   with 50 clients, checks, and exits
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>
#include <vector>

#include "fjord/pool.hpp"
#include "fjord/spawn.hpp"
#include "fjord/sync_wait.hpp"
#include "fjord/task.hpp"
#include "fjord/tcp_listener.hpp"
#include "fjord/tcp_stream.hpp"
#include "fjord/when_all.hpp"

using namespace std::chrono_literals;

// Echoes until the peer ends the stream (or goes quiet for a minute).
fjord::task<void> echo(fjord::tcp_stream s) {
  std::vector<std::byte> buffer(4096);
  try {
    while (const std::size_t n = co_await s.read(buffer, 60s)) {
      co_await s.write_all(std::span(buffer).first(n), 60s);
    }
  } catch (const std::system_error& e) {
    std::fprintf(stderr, "connection ended: %s\n", e.what());
  }
}

// Accepts forever (or `limit` connections), one coroutine each.
fjord::task<void> serve(fjord::pool& p, fjord::tcp_listener& listener, int limit) {
  co_await p.schedule();
  for (int i = 0; limit < 0 || i < limit; ++i) {
    fjord::spawn(p, echo(co_await listener.accept()));
  }
}

// A client: sends `rounds` lines and checks each comes back.
fjord::task<bool> client(fjord::ip_endpoint at, int id, int rounds) {
  fjord::tcp_stream s = co_await fjord::tcp_stream::connect(at, 5s);
  for (int r = 0; r < rounds; ++r) {
    const std::string line = "client " + std::to_string(id) + " round " + std::to_string(r) + "\n";
    co_await s.write_all(std::as_bytes(std::span(line)), 5s);
    std::string back(line.size(), '\0');
    co_await s.read_exactly(std::as_writable_bytes(std::span(back)), 5s);
    if (back != line) {
      co_return false;
    }
  }
  co_return true;
}

int main(int argc, char** argv) try {
  fjord::pool p;  // one worker per CPU
  if (argc > 1) {
    auto listener = fjord::tcp_listener::bind(
        fjord::ip_endpoint::any_v4(static_cast<std::uint16_t>(std::strtoul(argv[1], nullptr, 10))));
    std::printf("echo server on %s\n", listener.local_endpoint().to_string().c_str());
    fjord::sync_wait(serve(p, listener, -1));
    return 0;
  }
  constexpr int clients = 50;
  auto listener = fjord::tcp_listener::bind(fjord::ip_endpoint::loopback_v4(0));
  const fjord::ip_endpoint at = listener.local_endpoint();
  auto demo = [&]() -> fjord::task<int> {
    co_await p.schedule();
    std::vector<fjord::task<bool>> talks;
    talks.reserve(clients);
    for (int i = 0; i < clients; ++i) {
      talks.push_back(client(at, i, 20));
    }
    auto [served, results] =
        co_await fjord::when_all(serve(p, listener, clients), fjord::when_all(std::move(talks)));
    static_cast<void>(served);
    int ok = 0;
    for (const bool r : results) {
      ok += r ? 1 : 0;
    }
    co_return ok;
  };
  const int ok = fjord::sync_wait(demo());
  std::printf("%d of %d clients got every line back from %s\n", ok, clients,
              at.to_string().c_str());
  return ok == clients ? 0 : 1;
} catch (const std::exception& e) {
  std::fprintf(stderr, "error: %s\n", e.what());
  return 1;
}
