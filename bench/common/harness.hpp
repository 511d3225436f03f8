#pragma once
// The protocol every C++ benchmark program follows, so bench/run can drive
// them all the same way:
//   program --impl NAME --threads N [--size K] [--grain G] [--rounds R]
// The program warms up, times R rounds of its kernel, checks every result
// (exiting with status 3 and a message on a wrong one), and prints one line
//   RESULT {"value": <median round>, "unit": "...", "min": ..., "max": ..., "tasks": ...}
// bench/run starts each program several times, interleaved, and adds the
// process's peak RSS.

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <map>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace bench {

struct args {
  std::string impl;
  int threads = 1;
  long size = 0;
  long grain = 0;
  int rounds = 10;

  static args parse(int argc, char** argv) {
    args a;
    for (int i = 1; i + 1 < argc; i += 2) {
      const std::string key = argv[i];
      const std::string value = argv[i + 1];
      if (key == "--impl") {
        a.impl = value;
      } else if (key == "--threads") {
        a.threads = std::stoi(value);
      } else if (key == "--size") {
        a.size = std::stol(value);
      } else if (key == "--grain") {
        a.grain = std::stol(value);
      } else if (key == "--rounds") {
        a.rounds = std::stoi(value);
      } else {
        std::fprintf(stderr, "unknown option %s\n", key.c_str());
        std::exit(2);
      }
    }
    if (a.threads < 1 || a.rounds < 1) {
      std::fprintf(stderr, "bad --threads %d or --rounds %d\n", a.threads, a.rounds);
      std::exit(2);
    }
    return a;
  }
};

[[noreturn]] inline void wrong_result(const char* what, long long got, long long expected) {
  std::fprintf(stderr, "WRONG RESULT in %s: got %lld, expected %lld\n", what, got, expected);
  std::exit(3);
}

inline void check(const char* what, long long got, long long expected) {
  if (got != expected) {
    wrong_result(what, got, expected);
  }
}

using clock = std::chrono::steady_clock;

// A field of /proc/self/status in KiB ("VmHWM:", "VmRSS:"), or -1.
inline long status_kib(const std::string& field) {
  std::ifstream status("/proc/self/status");
  std::string key;
  while (status >> key) {
    if (key == field) {
      long kib = 0;
      status >> kib;
      return kib;
    }
    status.ignore(1 << 20, '\n');
  }
  return -1;
}

// This process's peak resident set (VmHWM, KiB). Read here rather than from
// wait4 in the driver: Linux carries the forking parent's high-water mark
// across exec into ru_maxrss, which would floor every figure at the
// driver's own size.
inline long peak_rss_kib() {
  return status_kib("VmHWM:");
}

inline double since_ms(clock::time_point start) {
  return std::chrono::duration<double, std::milli>(clock::now() - start).count();
}

// Prints the RESULT line for the figures of the timed rounds; `extra` is
// more JSON members, each with a leading comma.
inline void print_result(const char* unit, std::vector<double> v, double tasks,
                         const std::string& extra = "") {
  std::sort(v.begin(), v.end());
  const double median =
      v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
  std::printf(
      "RESULT {\"value\": %.6g, \"unit\": \"%s\", \"min\": %.6g, \"max\": %.6g, \"tasks\": %.0f, "
      "\"peak_rss_kib\": %ld%s}\n",
      median, unit, v.front(), v.back(), tasks, peak_rss_kib(), extra.c_str());
}

// Runs one warm-up round, then `rounds` timed rounds; prints the RESULT line.
// `round` returns the figure of one round in `unit`.
inline void run_rounds(const args& a, const char* unit, double tasks,
                       const std::function<double()>& round) {
  round();  // warm-up: threads started, caches and allocators warm
  std::vector<double> v;
  for (int r = 0; r < a.rounds; ++r) {
    v.push_back(round());
  }
  print_result(unit, std::move(v), tasks);
}

// For programs that hold several benchmarks: `--bench NAME` first, then
// the protocol above. Exits with a usage line when it is missing.
struct named_args {
  std::string name;
  args a;
};

inline named_args parse_named(int argc, char** argv) {
  if (argc < 3 || std::string(argv[1]) != "--bench") {
    std::fprintf(stderr, "usage: %s --bench NAME --impl I --threads N --size K\n", argv[0]);
    std::exit(2);
  }
  named_args r{argv[2], {}};
  argv[2] = argv[0];
  r.a = args::parse(argc - 2, argv + 2);
  return r;
}

[[noreturn]] inline void unknown_impl(const std::string& impl) {
  std::fprintf(stderr, "unknown or unavailable --impl %s\n", impl.c_str());
  std::exit(2);
}

}  // namespace bench
