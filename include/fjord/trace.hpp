#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "fjord/detail/trace_point.hpp"

// Tracing: what every worker did and when, for Perfetto (ui.perfetto.dev)
// or chrome://tracing. Compiled in, off until started; docs/tracing.md.
//
//   fjord::trace::start();
//   run_the_program();
//   fjord::trace::stop();
//   fjord::trace::write("run.json");  // or "run.fjtrace", the compact form
//
// Or with no code at all: FJORD_TRACE=run.json ./program traces from start
// to exit.

namespace fjord::trace {

/// What trace::start records, and where.
struct options {
  /// Memory for events, all threads together (32 bytes an event). Once it is
  /// used up, further events are dropped and counted (dropped()), never
  /// waited for. At least 1 MiB.
  std::size_t buffer_bytes = std::size_t{256} << 20;
};

/// Begins a new session, discarding the events of the previous one. Throws
/// std::invalid_argument for a buffer_bytes below 1 MiB, std::logic_error
/// when tracing is already running or fjord was built without it
/// (FJORD_NO_TRACE).
void start(const options& opts = {});
/// Ends the session; its events stay until the next start(). No effect when
/// not running. Events being recorded as stop() runs may or may not be kept.
void stop() noexcept;
bool running() noexcept;

/// Writes the current session (running or stopped) to path: Chrome trace
/// JSON when the path ends in ".json", else the compact binary form, which
/// `fjord-trace convert` turns into JSON. Throws std::logic_error when no
/// session was started, std::system_error (naming the path) when the file
/// cannot be written.
void write(const std::string& path);

/// Events of the current session lost to a full buffer.
std::uint64_t dropped() noexcept;

/// A name of static storage duration (a string literal): traces record its
/// address, not a copy, so recording never allocates.
class static_name {
 public:
  /// consteval: only a constant expression fits, so the name outlives the
  /// trace.
  consteval static_name(const char* name) noexcept  // NOLINT(google-explicit-constructor)
      : name_(name) {}
  /// The name.
  const char* c_str() const noexcept { return name_; }

 private:
  const char* name_;
};

/// A named interval on the calling thread's track, from construction to
/// destruction: fjord::trace::span s("load input");
class span {
 public:
  /// Records the span's beginning now (its end when it goes out of scope).
  explicit span(static_name name) noexcept : name_(name.c_str()) {
    detail::trace_point(detail::trace_kind::span_begin, 0, detail::trace_address(name_));
  }
  ~span() { detail::trace_point(detail::trace_kind::span_end, 0, detail::trace_address(name_)); }
  span(const span&) = delete;
  span& operator=(const span&) = delete;

 private:
  const char* name_;
};

/// A value over time (a counter track named name).
inline void counter(static_name name, std::int64_t value) noexcept {
  detail::trace_point(detail::trace_kind::counter, 0, detail::trace_address(name.c_str()),
                      static_cast<std::uint64_t>(value));
}

/// A moment on the calling thread's track.
inline void instant(static_name name) noexcept {
  detail::trace_point(detail::trace_kind::instant, 0, detail::trace_address(name.c_str()));
}

}  // namespace fjord::trace
