#pragma once

#include <cstdint>
#include <cstdio>
#include <string>
#include <unordered_map>
#include <vector>

#include "fjord/detail/trace_point.hpp"

// A finished trace in memory: what trace::write() collects from the threads'
// buffers and what the binary file holds. Both output formats are written
// from this one model (src/trace_file.cpp), so the converter and the library
// cannot disagree.

namespace fjord::detail {

// One event as recorded: 32 bytes, no pointers to follow (names are
// resolved through trace_data::names when the trace is written).
struct trace_event {
  std::uint64_t tsc;  // time stamp counter ticks (cycle_clock)
  std::uint64_t a;
  std::uint64_t b;
  std::uint32_t kind;  // a trace_kind
  std::uint32_t small;
};
static_assert(sizeof(trace_event) == 32);

// The events of one thread, oldest first, with timestamps that never go back.
struct trace_track {
  std::uint64_t tid = 0;      // the OS thread id
  std::uint64_t pool_id = 0;  // 0: not a worker of any pool
  std::string pool_name;
  std::uint32_t worker_index = 0;
  std::string thread_name;
  std::uint64_t dropped = 0;  // events lost to a full buffer
  std::vector<trace_event> events;
};

struct trace_data {
  std::int64_t pid = 0;
  std::uint64_t tsc_origin = 0;  // the tick that is time zero (trace::start())
  double ns_per_tick = 1.0;
  std::vector<trace_track> tracks;
  // The names of spans, counters and instants, by the address recorded.
  std::unordered_map<std::uint64_t, std::string> names;

  std::uint64_t dropped() const noexcept {
    std::uint64_t n = 0;
    for (const auto& t : tracks) {
      n += t.dropped;
    }
    return n;
  }
  std::size_t event_count() const noexcept {
    std::size_t n = 0;
    for (const auto& t : tracks) {
      n += t.events.size();
    }
    return n;
  }
};

// Chrome trace-event JSON (Perfetto, chrome://tracing): one process per pool,
// one track per thread, slices for jobs, searching, parking and spans, flows
// from a stolen or submitted job's origin to where it ran. Throws
// std::system_error when the stream fails.
void write_chrome_json(const trace_data& data, std::FILE* out);

// The compact form: a header, the names, then each track's raw events.
void write_trace_binary(const trace_data& data, std::FILE* out);
// Reads what write_trace_binary wrote; throws std::runtime_error naming what
// is wrong with a file that is not one.
trace_data read_trace_binary(std::FILE* in);

}  // namespace fjord::detail
