// fjord-trace: what to do with a binary trace (fjord::trace::write to a
// path not ending in .json).
//
//   fjord-trace convert run.fjtrace run.json   the Chrome trace-event JSON
//   fjord-trace summary run.fjtrace            tracks, events by kind, drops

#include <array>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <exception>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>

#include "fjord/detail/trace_data.hpp"

namespace {

using file_ptr = std::unique_ptr<std::FILE, int (*)(std::FILE*)>;

file_ptr open_file(const char* path, const char* mode) {
  file_ptr f(std::fopen(path, mode), &std::fclose);
  if (!f) {
    throw std::runtime_error(std::string("cannot open '") + path + "': " + std::strerror(errno));
  }
  return f;
}

const char* kind_name(std::uint32_t kind) {
  static constexpr std::array<const char*, fjord::detail::trace_kind_last + 1> names = {
      "?",          "job_begin",     "job_end",           "fork",
      "steal",      "inject",        "search_begin",      "search_end",
      "park_begin", "park_end",      "coroutine_suspend", "coroutine_wake",
      "timer_fire", "channel_block", "channel_unblock",   "io_wait",
      "io_ready",   "span_begin",    "span_end",          "counter",
      "instant",    "thread_start"};
  return kind < names.size() ? names[kind] : "?";
}

void summary(const fjord::detail::trace_data& data) {
  std::printf("pid %lld, %zu tracks, %zu events, %llu dropped\n", static_cast<long long>(data.pid),
              data.tracks.size(), data.event_count(),
              static_cast<unsigned long long>(data.dropped()));
  std::map<std::uint32_t, std::size_t> by_kind;
  for (const auto& t : data.tracks) {
    std::printf("  tid %llu %s%s%s: %zu events, %llu dropped\n",
                static_cast<unsigned long long>(t.tid),
                t.pool_id != 0 ? ("pool \"" + t.pool_name + "\" worker ").c_str() : "",
                t.pool_id != 0 ? std::to_string(t.worker_index).c_str() : "",
                t.pool_id != 0 ? "" : t.thread_name.c_str(), t.events.size(),
                static_cast<unsigned long long>(t.dropped));
    for (const auto& e : t.events) {
      ++by_kind[e.kind];
    }
  }
  for (const auto& [kind, n] : by_kind) {
    std::printf("  %-18s %zu\n", kind_name(kind), n);
  }
}

int usage() {
  std::fputs(
      "usage: fjord-trace convert <trace.fjtrace> <out.json>\n"
      "       fjord-trace summary <trace.fjtrace>\n",
      stderr);
  return 2;
}

}  // namespace

int main(int argc, char** argv) try {
  if (argc < 3) {
    return usage();
  }
  const std::string command = argv[1];
  if (command == "convert" && argc == 4) {
    const auto data = fjord::detail::read_trace_binary(open_file(argv[2], "rb").get());
    const file_ptr out = open_file(argv[3], "wb");
    fjord::detail::write_chrome_json(data, out.get());
    if (std::fflush(out.get()) != 0) {
      throw std::runtime_error(std::string("cannot write '") + argv[3] +
                               "': " + std::strerror(errno));
    }
    return 0;
  }
  if (command == "summary" && argc == 3) {
    summary(fjord::detail::read_trace_binary(open_file(argv[2], "rb").get()));
    return 0;
  }
  return usage();
} catch (const std::exception& e) {
  std::fprintf(stderr, "fjord-trace: %s\n", e.what());
  return 1;
}
