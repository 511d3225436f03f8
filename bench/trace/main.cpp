// The cost of a trace point (docs/tracing.md, "Cost"): ns per event on the
// recording thread's path with tracing on, and per trace point with it off.
// The floor is the time stamp read alone, which every event needs.
//
//   bench_trace --mode on|off|floor [--events N] [--rounds R]
// Prints RESULT {"value": <ns per event>, ...} like the other benchmarks.

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "fjord/detail/cycle_clock.hpp"
#include "fjord/trace.hpp"

int main(int argc, char** argv) {
  std::string mode = "on";
  long events = 1'000'000;
  int rounds = 10;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (std::strcmp(argv[i], "--mode") == 0) {
      mode = argv[i + 1];
    } else if (std::strcmp(argv[i], "--events") == 0) {
      events = std::atol(argv[i + 1]);
    } else if (std::strcmp(argv[i], "--rounds") == 0) {
      rounds = std::atoi(argv[i + 1]);
    }
  }
  if ((mode != "on" && mode != "off" && mode != "floor") || events <= 0 || rounds <= 0) {
    std::fprintf(stderr, "usage: bench_trace --mode on|off|floor [--events N] [--rounds R]\n");
    return 2;
  }
  std::vector<double> per_event;
  for (int r = 0; r <= rounds; ++r) {  // round 0 warms up
    if (mode == "on") {
      // Room for every event: the path measured is the recording one.
      fjord::trace::start({.buffer_bytes = static_cast<std::size_t>(events) * 64 + (1 << 20)});
    }
    std::uint64_t sink = 0;
    const auto t0 = std::chrono::steady_clock::now();
    if (mode == "floor") {
      for (long i = 0; i < events; ++i) {
        sink += fjord::detail::cycle_clock::now();
      }
    } else {
      for (long i = 0; i < events; ++i) {
        fjord::trace::counter("bench", i);
      }
    }
    const auto t1 = std::chrono::steady_clock::now();
    if (sink == 1) {
      std::puts("");  // keeps the floor loop's reads
    }
    if (mode == "on") {
      fjord::trace::stop();
      if (fjord::trace::dropped() != 0) {
        std::fprintf(stderr, "bench_trace: events were dropped\n");
        return 1;
      }
    }
    if (r > 0) {
      per_event.push_back(std::chrono::duration<double, std::nano>(t1 - t0).count() /
                          static_cast<double>(events));
    }
  }
  std::sort(per_event.begin(), per_event.end());
  std::printf(
      "RESULT {\"value\": %.3f, \"unit\": \"ns\", \"min\": %.3f, \"max\": %.3f, \"tasks\": %ld, "
      "\"peak_rss_kib\": 0}\n",
      per_event[per_event.size() / 2], per_event.front(), per_event.back(), events);
  return 0;
}
