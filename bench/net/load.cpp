// The one load generator of the network benchmarks (issue 16): it starts a
// server program, drives it over loopback, stops it, and prints
//   RESULT {"value": <requests/s>, "unit": "req/s", "p50_us": ..., "p99_us": ..., ...}
// so bench/run measures every server (fjord, tokio, Go net, Boost.Asio)
// with the same client.
//
//   bench_net_load --impl NAME --mode MODE --connections C --size B --requests N
//                  [--seconds S] -- server-program args... ({port} is replaced)
//
// Modes (C connections, each a closed loop: one request out, the whole
// reply back, then the next; N requests in all, the first 5% warm up and
// are not counted):
//   echo    a B-byte message, echoed back;
//   http    a keep-alive GET; the reply is read to the end of the body its
//           Content-Length gives;
//   accept  a new connection per request: connect, a B-byte echo, close
//           (with SO_LINGER 0, so no port waits in TIME_WAIT); requests/s
//           are connections/s;
//   idle    C connections, one echo each, then S seconds of silence: the
//           value is the server's CPU over them (from its threads'
//           schedstat, in ns), in percent of one core.
// One thread and epoll drive all connections, so the client's cost is the
// same for every server. The server's peak RSS (VmHWM) is reported as the
// run's, and its CPU time per request.

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
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
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

// A connected socket, or -1. Non-blocking: the connection may still be in
// progress (EINPROGRESS), and the first send then waits for EPOLLOUT.
int connect_to(int port, bool non_blocking) {
  const int fd =
      ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | (non_blocking ? SOCK_NONBLOCK : 0), 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = htons(static_cast<std::uint16_t>(port));
  if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 &&
      !(non_blocking && errno == EINPROGRESS)) {
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

enum class mode { echo, http, accept, idle };

constexpr std::string_view http_request = "GET / HTTP/1.1\r\nHost: localhost\r\n\r\n";

// The CPU time the server's live threads have had (schedstat's first
// field, in nanoseconds: finer than /proc/PID/stat's ticks), in
// microseconds. A thread that ended meanwhile takes its time with it, so
// this is for quiet intervals only.
double live_threads_cpu_us(pid_t pid) {
  double total_ns = 0;
  const std::string tasks = "/proc/" + std::to_string(pid) + "/task";
  std::error_code ignored;
  for (const auto& entry : std::filesystem::directory_iterator(tasks, ignored)) {
    std::ifstream stat(entry.path() / "schedstat");
    double ns = 0;
    if (stat >> ns) {
      total_ns += ns;
    }
  }
  return total_ns / 1e3;
}

struct connection {
  int fd = -1;
  bool connecting = false;  // accept mode: the request waits for EPOLLOUT
  std::string in;           // what came back of the current reply
  clock_type::time_point started;
};

// The length of a whole HTTP reply at the start of `in`, or 0 while its
// head is incomplete. Content-Length is required (every server sends it).
std::size_t http_reply_length(const std::string& in) {
  const auto head_end = in.find("\r\n\r\n");
  if (head_end == std::string::npos) {
    return 0;
  }
  const auto field = in.find("Content-Length:");
  if (field == std::string::npos || field > head_end) {
    fail("a reply without Content-Length");
  }
  return head_end + 4 + std::strtoul(in.c_str() + field + 15, nullptr, 10);
}

}  // namespace

int main(int argc, char** argv) {
  std::string impl = "?";
  std::string mode_name = "echo";
  int connections = 100;
  std::size_t size = 64;
  long requests = 1'000'000;
  double idle_seconds = 5;
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
      mode_name = value;
    } else if (key == "--connections") {
      connections = std::atoi(value);
    } else if (key == "--size") {
      size = static_cast<std::size_t>(std::atol(value));
    } else if (key == "--requests") {
      requests = std::atol(value);
    } else if (key == "--seconds") {
      idle_seconds = std::atof(value);
    } else {
      fail("unknown option " + key);
    }
  }
  const mode m = mode_name == "http"     ? mode::http
                 : mode_name == "accept" ? mode::accept
                 : mode_name == "idle"   ? mode::idle
                                         : mode::echo;
  if (m == mode::idle) {
    requests = connections;
  }
  if (i >= argc - 1 || (m == mode::echo && mode_name != "echo") || connections < 1 || size < 1 ||
      requests < connections || !(idle_seconds > 0)) {
    std::fprintf(stderr,
                 "usage: bench_net_load --impl NAME --mode echo|http|accept|idle --connections C "
                 "--size B --requests N [--seconds S] -- server args... ({port} is replaced)\n");
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
  auto give_up = [&](const std::string& why) {
    stop_server();
    fail(why);
  };

  // Wait until the server listens.
  const auto patience = clock_type::now() + std::chrono::seconds(20);
  int probe = -1;
  while ((probe = connect_to(port, false)) < 0) {
    if (clock_type::now() > patience) {
      give_up("the server never accepted a connection");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }

  const int ep = ::epoll_create1(EPOLL_CLOEXEC);
  std::vector<connection> conns(static_cast<std::size_t>(connections));
  const std::string message = m == mode::http ? std::string(http_request) : std::string(size, 'm');
  auto watch = [&](std::size_t k, std::uint32_t events, int op) {
    epoll_event ev{};
    ev.events = events;
    ev.data.u64 = k;
    if (::epoll_ctl(ep, op, conns[k].fd, &ev) != 0) {
      give_up("epoll_ctl failed");
    }
  };
  auto open = [&](std::size_t k) {
    connection& c = conns[k];
    if (m == mode::accept) {
      c.fd = connect_to(port, true);
      c.connecting = true;
      if (c.fd < 0) {
        give_up("connect failed");
      }
      watch(k, EPOLLIN | EPOLLOUT, EPOLL_CTL_ADD);
    } else {
      c.fd = k == 0 ? std::exchange(probe, -1) : connect_to(port, false);
      if (c.fd < 0) {
        give_up("connect failed");
      }
      watch(k, EPOLLIN, EPOLL_CTL_ADD);
    }
  };
  if (probe >= 0 && m == mode::accept) {
    ::close(probe);
  }
  for (std::size_t k = 0; k < conns.size(); ++k) {
    open(k);
  }

  const long warm_up = m == mode::idle ? 0 : requests / 20;
  long issued = 0;
  long completed = 0;
  std::vector<float> latencies_us;
  latencies_us.reserve(static_cast<std::size_t>(requests - warm_up));
  clock_type::time_point timed_start = clock_type::now();
  double cpu_at_start = 0;
  auto send = [&](std::size_t k) {
    connection& c = conns[k];
    if (c.connecting) {
      int error = 0;
      socklen_t length = sizeof error;
      if (::getsockopt(c.fd, SOL_SOCKET, SO_ERROR, &error, &length) != 0 || error != 0) {
        errno = error;
        give_up("a connection was refused");
      }
      c.connecting = false;
      watch(k, EPOLLIN, EPOLL_CTL_MOD);
    }
    c.in.clear();
    // Small requests go out whole on a fresh loopback socket; loop anyway.
    std::size_t off = 0;
    while (off < message.size()) {
      const ssize_t n = ::send(c.fd, message.data() + off, message.size() - off, MSG_NOSIGNAL);
      if (n <= 0) {
        give_up("send failed");
      }
      off += static_cast<std::size_t>(n);
    }
  };
  auto start = [&](std::size_t k) {
    conns[k].started = clock_type::now();
    ++issued;
    if (!conns[k].connecting) {
      send(k);
    }
  };
  for (std::size_t k = 0; k < conns.size(); ++k) {
    start(k);
  }
  std::vector<epoll_event> events(conns.size());
  std::vector<char> buffer(65536);
  while (completed < requests) {
    const int n = ::epoll_wait(ep, events.data(), static_cast<int>(events.size()), 10000);
    if (n <= 0) {
      give_up("no reply for 10 s");
    }
    for (int e = 0; e < n; ++e) {
      const std::size_t k = events[static_cast<std::size_t>(e)].data.u64;
      connection& c = conns[k];
      if (c.connecting) {
        send(k);
        continue;
      }
      const ssize_t got = ::recv(c.fd, buffer.data(), buffer.size(), MSG_DONTWAIT);
      if (got <= 0) {
        if (got < 0 && errno == EAGAIN) {
          continue;
        }
        give_up("the server closed a connection");
      }
      c.in.append(buffer.data(), static_cast<std::size_t>(got));
      const std::size_t whole = m == mode::http ? http_reply_length(c.in) : size;
      if (whole == 0 || c.in.size() < whole) {
        continue;
      }
      if (c.in.size() > whole) {
        give_up("more reply than was asked for");
      }
      ++completed;
      const auto now = clock_type::now();
      if (completed == warm_up) {
        timed_start = now;
        cpu_at_start = cpu_us(server);
      } else if (completed > warm_up) {
        latencies_us.push_back(std::chrono::duration<float, std::micro>(now - c.started).count());
      }
      if (m == mode::accept) {
        // A reset, not a FIN: neither side keeps the port in TIME_WAIT.
        const linger abort{1, 0};
        ::setsockopt(c.fd, SOL_SOCKET, SO_LINGER, &abort, sizeof abort);
        ::close(c.fd);
        if (issued < requests) {
          open(k);
        }
      }
      if (issued < requests) {
        start(k);
      }
    }
  }
  double seconds = std::chrono::duration<double>(clock_type::now() - timed_start).count();
  double value = static_cast<double>(requests - warm_up) / seconds;
  const char* unit = m == mode::accept ? "connections/s" : "req/s";
  double server_cpu = cpu_us(server) - cpu_at_start;
  if (m == mode::idle) {
    // Every connection has had its echo and waits; the server should sleep.
    const double before = live_threads_cpu_us(server);
    const auto quiet_start = clock_type::now();
    std::this_thread::sleep_for(std::chrono::duration<double>(idle_seconds));
    seconds = std::chrono::duration<double>(clock_type::now() - quiet_start).count();
    server_cpu = live_threads_cpu_us(server) - before;
    value = server_cpu / (seconds * 1e6) * 100;
    unit = "% of a core";
  }
  const long rss = peak_rss_kib(server);
  stop_server();
  for (auto& c : conns) {
    if (m != mode::accept) {
      ::close(c.fd);
    }
  }
  std::sort(latencies_us.begin(), latencies_us.end());
  const auto at = [&](double q) {
    return latencies_us.empty() ? 0.0F
                                : latencies_us[static_cast<std::size_t>(
                                      q * static_cast<double>(latencies_us.size() - 1))];
  };
  std::printf(
      "RESULT {\"value\": %.6g, \"unit\": \"%s\", \"min\": %.6g, \"max\": %.6g, \"tasks\": %ld, "
      "\"p50_us\": %.1f, \"p99_us\": %.1f, \"server_cpu_us_per_request\": %.2f, "
      "\"peak_rss_kib\": %ld, \"impl\": \"%s\"}\n",
      value, unit, value, value, requests - warm_up, static_cast<double>(at(0.5)),
      static_cast<double>(at(0.99)),
      m == mode::idle ? 0.0 : server_cpu / static_cast<double>(requests - warm_up), rss,
      impl.c_str());
  return 0;
}
