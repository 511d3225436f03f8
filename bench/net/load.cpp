// The one load generator of the network benchmarks (issue 16): it starts a
// server program, drives it over loopback, stops it, and prints
//   RESULT {"value": <requests/s>, "unit": "req/s", "p50_us": ..., "p99_us": ..., ...}
// so bench/run measures every server (fjord, tokio, Go net, Boost.Asio)
// with the same client.
//
//   bench_net_load --impl NAME --mode echo --connections C --size B --requests N
//                  -- server-program args... ({port} is replaced by the port)
//
// echo: each of C connections sends a B-byte message and waits for the
// whole echo before sending the next (a closed loop), N round trips in all;
// the first 5% warm up and are not counted. One thread and epoll drive all
// connections, so the client's cost is the same for every server. The
// server's peak RSS (VmHWM) is reported as the run's.

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <spawn.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

extern char** environ;

namespace {

using clock_type = std::chrono::steady_clock;

[[noreturn]] void fail(const std::string& what) {
  std::fprintf(stderr, "bench_net_load: %s (%s)\n", what.c_str(), std::strerror(errno));
  std::exit(1);
}

int free_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) != 0) {
    fail("cannot find a free port");
  }
  ::close(fd);
  return ntohs(a.sin_port);
}

int connect_to(int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = htons(static_cast<std::uint16_t>(port));
  if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
    ::close(fd);
    return -1;
  }
  const int on = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &on, sizeof on);
  return fd;
}

long peak_rss_kib(pid_t pid) {
  std::ifstream status("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("VmHWM:", 0) == 0) {
      return std::atol(line.c_str() + 6);
    }
  }
  return 0;
}

// The server's CPU time so far (user + system, all threads), in
// microseconds, to one clock tick (1/_SC_CLK_TCK s: 10 ms here).
double cpu_us(pid_t pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
  // The command name may hold spaces: the fields start after its ')'.
  const auto close = text.rfind(')');
  if (close == std::string::npos) {
    return 0;
  }
  std::istringstream fields(text.substr(close + 2));
  std::string field;
  unsigned long long utime = 0;
  unsigned long long stime = 0;
  // state is field 3; utime and stime are fields 14 and 15.
  for (int k = 3; k <= 15 && fields >> field; ++k) {
    if (k == 14) {
      utime = std::stoull(field);
    } else if (k == 15) {
      stime = std::stoull(field);
    }
  }
  return static_cast<double>(utime + stime) * 1e6 / static_cast<double>(::sysconf(_SC_CLK_TCK));
}

struct connection {
  int fd = -1;
  std::size_t sent = 0;
  std::size_t received = 0;
  clock_type::time_point started;
};

}  // namespace

int main(int argc, char** argv) {
  std::string impl = "?";
  std::string mode = "echo";
  int connections = 100;
  std::size_t size = 64;
  long requests = 1'000'000;
  int i = 1;
  for (; i < argc && std::strcmp(argv[i], "--") != 0; i += 2) {
    if (i + 1 >= argc) {
      fail(std::string("no value for ") + argv[i]);
    }
    const std::string key = argv[i];
    const char* value = argv[i + 1];
    if (key == "--impl") {
      impl = value;
    } else if (key == "--mode") {
      mode = value;
    } else if (key == "--connections") {
      connections = std::atoi(value);
    } else if (key == "--size") {
      size = static_cast<std::size_t>(std::atol(value));
    } else if (key == "--requests") {
      requests = std::atol(value);
    } else {
      fail("unknown option " + key);
    }
  }
  if (i >= argc - 1 || mode != "echo" || connections < 1 || size < 1 || requests < connections) {
    std::fprintf(stderr,
                 "usage: bench_net_load --impl NAME --mode echo --connections C --size B "
                 "--requests N -- server args... ({port} is replaced)\n");
    return 2;
  }
  ::signal(SIGPIPE, SIG_IGN);

  // The server, on a port of ours.
  const int port = free_port();
  std::vector<std::string> server_args;
  for (int k = i + 1; k < argc; ++k) {
    std::string a = argv[k];
    if (const auto at = a.find("{port}"); at != std::string::npos) {
      a.replace(at, 6, std::to_string(port));
    }
    server_args.push_back(a);
  }
  std::vector<char*> server_argv;
  for (auto& a : server_args) {
    server_argv.push_back(a.data());
  }
  server_argv.push_back(nullptr);
  pid_t server = 0;
  if (posix_spawn(&server, server_argv[0], nullptr, nullptr, server_argv.data(), environ) != 0) {
    fail("cannot start " + server_args[0]);
  }
  auto stop_server = [&] {
    ::kill(server, SIGKILL);
    ::waitpid(server, nullptr, 0);
  };

  // Connect everyone (the server may take a moment to listen).
  std::vector<connection> conns(static_cast<std::size_t>(connections));
  const auto give_up = clock_type::now() + std::chrono::seconds(20);
  for (auto& c : conns) {
    while ((c.fd = connect_to(port)) < 0) {
      if (clock_type::now() > give_up) {
        stop_server();
        fail("the server never accepted a connection");
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
  }
  const int ep = ::epoll_create1(EPOLL_CLOEXEC);
  for (std::size_t k = 0; k < conns.size(); ++k) {
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.u64 = k;
    ::epoll_ctl(ep, EPOLL_CTL_ADD, conns[k].fd, &ev);
  }

  const std::vector<char> message(size, 'm');
  std::vector<char> buffer(size);
  const long warm_up = requests / 20;
  long issued = 0;
  long completed = 0;
  std::vector<float> latencies_us;
  latencies_us.reserve(static_cast<std::size_t>(requests - warm_up));
  clock_type::time_point timed_start;
  double cpu_at_start = 0;
  auto send = [&](connection& c) {
    c.started = clock_type::now();
    c.received = 0;
    // Small messages go out whole on a fresh loopback socket; loop anyway.
    std::size_t off = 0;
    while (off < size) {
      const ssize_t n = ::send(c.fd, message.data() + off, size - off, MSG_NOSIGNAL);
      if (n <= 0) {
        stop_server();
        fail("send failed");
      }
      off += static_cast<std::size_t>(n);
    }
    ++issued;
  };
  for (auto& c : conns) {
    send(c);
  }
  std::vector<epoll_event> events(conns.size());
  while (completed < requests) {
    const int n = ::epoll_wait(ep, events.data(), static_cast<int>(events.size()), 10000);
    if (n <= 0) {
      stop_server();
      fail("no echo for 10 s");
    }
    for (int e = 0; e < n; ++e) {
      connection& c = conns[events[static_cast<std::size_t>(e)].data.u64];
      const ssize_t got = ::recv(c.fd, buffer.data(), size - c.received, MSG_DONTWAIT);
      if (got <= 0) {
        if (got < 0 && errno == EAGAIN) {
          continue;
        }
        stop_server();
        fail("the server closed a connection");
      }
      c.received += static_cast<std::size_t>(got);
      if (c.received < size) {
        continue;
      }
      ++completed;
      const auto now = clock_type::now();
      if (completed == warm_up) {
        timed_start = now;
        cpu_at_start = cpu_us(server);
      } else if (completed > warm_up) {
        latencies_us.push_back(std::chrono::duration<float, std::micro>(now - c.started).count());
      }
      if (issued < requests) {
        send(c);
      }
    }
  }
  const double seconds = std::chrono::duration<double>(clock_type::now() - timed_start).count();
  const long rss = peak_rss_kib(server);
  const double server_cpu = cpu_us(server) - cpu_at_start;
  stop_server();
  for (auto& c : conns) {
    ::close(c.fd);
  }
  std::sort(latencies_us.begin(), latencies_us.end());
  const auto at = [&](double q) {
    return latencies_us[static_cast<std::size_t>(q * static_cast<double>(latencies_us.size() - 1))];
  };
  const double rate = static_cast<double>(requests - warm_up) / seconds;
  std::printf(
      "RESULT {\"value\": %.0f, \"unit\": \"req/s\", \"min\": %.0f, \"max\": %.0f, \"tasks\": %ld, "
      "\"p50_us\": %.1f, \"p99_us\": %.1f, \"server_cpu_us_per_request\": %.2f, "
      "\"peak_rss_kib\": %ld, \"impl\": \"%s\"}\n",
      rate, rate, rate, requests - warm_up, static_cast<double>(at(0.5)),
      static_cast<double>(at(0.99)), server_cpu / static_cast<double>(requests - warm_up), rss,
      impl.c_str());
  return 0;
}
