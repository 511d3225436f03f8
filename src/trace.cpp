// Tracing: per-thread event buffers, the session protocol, and the public
// start / stop / write. docs/tracing.md explains the design.

#include "fjord/trace.hpp"

#include <pthread.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <new>
#include <stdexcept>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

#include "fjord/detail/cycle_clock.hpp"
#include "fjord/detail/pool_core.hpp"
#include "fjord/detail/trace_data.hpp"
#include "fjord/detail/worker.hpp"

namespace fjord::detail {

std::atomic<std::uint64_t> trace_mode{0};

namespace {

// 64 KiB of events. Chunks are kept by their thread and reused by the next
// session; the session's byte budget counts every chunk put to use.
struct trace_chunk {
  static constexpr std::size_t capacity = 2047;
  std::atomic<trace_chunk*> next{nullptr};
  std::atomic<std::uint32_t> used{0};  // events written, published with release
  std::array<trace_event, capacity> events;
};
static_assert(sizeof(trace_chunk) <= std::size_t{64} << 10);

// One thread's buffer. Only the owner writes events; trace::write() reads
// every chunk up to its `used` count (acquire, pairing with the owner's
// release after the event's stores), so it may read while the owner goes on
// recording past that count.
struct trace_thread {
  // Set before registration (published by the registry's mutex), then fixed.
  std::uint64_t tid = 0;
  std::uint64_t pool_id = 0;
  std::string pool_name;
  std::uint32_t worker_index = 0;
  std::string thread_name;
  trace_chunk* first = nullptr;

  // The session these events belong to: stored (release) by the owner after
  // it reset its chunks for that session, so a reader that sees the session
  // sees the reset counts.
  std::atomic<std::uint64_t> session{0};
  std::atomic<std::uint64_t> dropped{0};  // owner-written
  std::atomic<bool> exited{false};

  // The owner's alone.
  std::uint64_t owner_session = 0;
  trace_chunk* current = nullptr;
  std::uint64_t last_tsc = 0;
  bool full = false;  // the budget ran out this session: drop until the next
};

struct trace_registry {
  // start / stop / write, one at a time. A session's buffers are reset by
  // their owners only after start() began the next one, so write() (under
  // this mutex) never reads a chunk its owner is resetting.
  std::mutex control;
  std::uint64_t session = 0;  // the current (or last) session; 0: none yet
  bool running = false;
  std::uint64_t tsc_origin = 0;
  std::chrono::steady_clock::time_point clock_origin;
  std::uint64_t tsc_end = 0;  // at stop()
  std::chrono::steady_clock::time_point clock_end;
  double stopped_ns_per_tick = 0;  // once computed for a stopped session (0: not yet)

  std::mutex threads_mutex;  // guards threads (registration, the reader's copy)
  std::vector<trace_thread*> threads;

  // Bytes of chunks this session may still put to use.
  std::atomic<std::int64_t> budget{0};
};

// Never destroyed: workers may record during static destruction, and the
// FJORD_TRACE writer runs at exit.
trace_registry& registry() noexcept {
  static trace_registry* const r = new trace_registry;  // NOLINT: leaked on purpose
  return *r;
}

// This thread's buffer; `dead_thread` once the thread is exiting (its
// thread_local destructors ran), when events are no longer recorded.
trace_thread dead_thread_marker;
trace_thread* const dead_thread = &dead_thread_marker;
constinit thread_local trace_thread* this_thread_buffer = nullptr;

// Marks a thread's buffer as its thread's no more, so the next start() can
// free it. Not for the main thread: its destructors run at exit, before
// the FJORD_TRACE writer, and it may still record in static destructors.
struct thread_reaper {
  thread_reaper() = default;
  thread_reaper(const thread_reaper&) = delete;
  thread_reaper& operator=(const thread_reaper&) = delete;
  ~thread_reaper() {
    if (this_thread_buffer != nullptr && this_thread_buffer != dead_thread) {
      this_thread_buffer->exited.store(true, std::memory_order_release);
    }
    this_thread_buffer = dead_thread;
  }
};

std::uint64_t os_thread_id() noexcept {
  return static_cast<std::uint64_t>(::syscall(SYS_gettid));
}

bool take_budget() noexcept {
  return registry().budget.fetch_sub(sizeof(trace_chunk), std::memory_order_relaxed) >=
         static_cast<std::int64_t>(sizeof(trace_chunk));
}

FJORD_NOINLINE trace_thread* make_thread_buffer() noexcept {
  auto* t = new (std::nothrow) trace_thread;
  if (t == nullptr) {
    return nullptr;
  }
  try {
    t->tid = os_thread_id();
    // A caller that joined a pool for a call is not one of its threads: its
    // track stays among the other threads.
    if (const worker* w = current_worker; w != nullptr && !w->guest) {
      t->pool_id = w->pool->id();
      t->pool_name = w->pool->name();
      t->worker_index = w->index;
    }
    std::array<char, 16> name{};
    if (pthread_getname_np(pthread_self(), name.data(), name.size()) == 0) {
      t->thread_name = name.data();
    }
    t->first = new trace_chunk;
    if (static_cast<pid_t>(t->tid) != ::getpid()) {
      static thread_local thread_reaper reaper;
      static_cast<void>(reaper);
    }
    trace_registry& r = registry();
    const std::lock_guard lock(r.threads_mutex);
    r.threads.push_back(t);
  } catch (...) {
    delete t->first;
    delete t;
    return nullptr;
  }
  return t;
}

// The owner's first event of a session: its chunks start over.
FJORD_NOINLINE trace_thread* enter_session(trace_thread* t, std::uint64_t session) noexcept {
  if (t == dead_thread) {
    return nullptr;
  }
  if (t == nullptr) {
    t = make_thread_buffer();
    if (t == nullptr) {
      this_thread_buffer = dead_thread;
      return nullptr;
    }
    this_thread_buffer = t;
  }
  for (trace_chunk* c = t->first; c != nullptr; c = c->next.load(std::memory_order_relaxed)) {
    c->used.store(0, std::memory_order_relaxed);
  }
  t->current = t->first;
  t->last_tsc = 0;
  t->full = !take_budget();
  t->dropped.store(0, std::memory_order_relaxed);
  t->owner_session = session;
  t->session.store(session, std::memory_order_release);
  return t;
}

// The current chunk is full: the next one (reused, else new), or nullptr
// when the budget or memory ran out.
FJORD_NOINLINE trace_chunk* next_chunk(trace_thread& t) noexcept {
  if (!take_budget()) {
    t.full = true;
    return nullptr;
  }
  trace_chunk* next = t.current->next.load(std::memory_order_relaxed);
  if (next == nullptr) {
    next = new (std::nothrow) trace_chunk;
    if (next == nullptr) {
      t.full = true;
      return nullptr;
    }
    // Release: a reader that follows the link sees the chunk's zero count.
    t.current->next.store(next, std::memory_order_release);
  }
  t.current = next;
  return next;
}

void drop(trace_thread& t) noexcept {
  t.dropped.store(t.dropped.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
}

}  // namespace

namespace {

void write_event(trace_thread& t, trace_chunk& c, std::uint32_t n, trace_kind kind,
                 std::uint32_t small, std::uint64_t a, std::uint64_t b) noexcept {
  // Never backwards on one track, whatever core the thread moved to.
  std::uint64_t now = cycle_clock::now();
  if (now < t.last_tsc) {
    now = t.last_tsc;
  }
  t.last_tsc = now;
  c.events[n] = trace_event{now, a, b, static_cast<std::uint32_t>(kind), small};
  c.used.store(n + 1, std::memory_order_release);
}

// Everything but the common case: a first event of the session, a full
// chunk, a spent budget.
FJORD_NOINLINE void record_slowly(std::uint64_t session, trace_kind kind, std::uint32_t small,
                                  std::uint64_t a, std::uint64_t b) noexcept {
  trace_thread* t = this_thread_buffer;
  if (t == nullptr || t == dead_thread || t->owner_session != session) {
    t = enter_session(t, session);
    if (t == nullptr) {
      return;
    }
  }
  if (t->full) {
    drop(*t);
    return;
  }
  trace_chunk* c = t->current;
  std::uint32_t n = c->used.load(std::memory_order_relaxed);
  if (n == trace_chunk::capacity) {
    c = next_chunk(*t);
    if (c == nullptr) {
      drop(*t);
      return;
    }
    n = 0;
  }
  write_event(*t, *c, n, kind, small, a, b);
}

}  // namespace

void trace_record(std::uint64_t mode, trace_kind kind, std::uint32_t small, std::uint64_t a,
                  std::uint64_t b) noexcept {
  // The common case touches no callee-saved register, so it needs no stack
  // frame: the rest is a tail call. dead_thread's owner_session is 0, which
  // no session is (start() numbers them from 1).
  const std::uint64_t session = mode >> 32;
  trace_thread* t = this_thread_buffer;
  if (t != nullptr && t->owner_session == session && !t->full) [[likely]] {
    trace_chunk* c = t->current;
    const std::uint32_t n = c->used.load(std::memory_order_relaxed);
    if (n != trace_chunk::capacity) [[likely]] {
      write_event(*t, *c, n, kind, small, a, b);
      return;
    }
  }
  record_slowly(session, kind, small, a, b);
}

namespace {

// The ticks' rate, from the session's two ends; at least 10 ms apart, so
// the clocks' read-out jitter stays below 0.1%.
double ns_per_tick(trace_registry& r, std::uint64_t& tsc_end,
                   std::chrono::steady_clock::time_point& clock_end) {
  constexpr auto span_needed = std::chrono::milliseconds(10);
  if (r.running || clock_end - r.clock_origin < span_needed) {
    const auto elapsed = std::chrono::steady_clock::now() - r.clock_origin;
    if (elapsed < span_needed) {
      std::this_thread::sleep_for(span_needed - elapsed);
    }
    tsc_end = cycle_clock::now();
    clock_end = std::chrono::steady_clock::now();
  }
  const auto ns =
      std::chrono::duration_cast<std::chrono::nanoseconds>(clock_end - r.clock_origin).count();
  const std::uint64_t ticks = tsc_end - r.tsc_origin;
  return ticks == 0 ? 1.0 : static_cast<double>(ns) / static_cast<double>(ticks);
}

// Under r.control: the current session's events.
trace_data collect(trace_registry& r) {
  trace_data data;
  data.pid = ::getpid();
  data.tsc_origin = r.tsc_origin;
  if (r.running || r.stopped_ns_per_tick == 0) {
    std::uint64_t tsc_end = r.tsc_end;
    auto clock_end = r.clock_end;
    data.ns_per_tick = ns_per_tick(r, tsc_end, clock_end);
    if (!r.running) {
      // Every later write of this session says the same.
      r.stopped_ns_per_tick = data.ns_per_tick;
    }
  } else {
    data.ns_per_tick = r.stopped_ns_per_tick;
  }
  std::vector<trace_thread*> threads;
  {
    const std::lock_guard lock(r.threads_mutex);
    threads = r.threads;
  }
  for (trace_thread* t : threads) {
    if (t->session.load(std::memory_order_acquire) != r.session) {
      continue;  // recorded nothing this session
    }
    trace_track track;
    track.tid = t->tid;
    track.pool_id = t->pool_id;
    track.pool_name = t->pool_name;
    track.worker_index = t->worker_index;
    track.thread_name = t->thread_name;
    for (trace_chunk* c = t->first; c != nullptr; c = c->next.load(std::memory_order_acquire)) {
      const std::uint32_t n = c->used.load(std::memory_order_acquire);
      track.events.insert(track.events.end(), c->events.begin(), c->events.begin() + n);
      if (n < trace_chunk::capacity) {
        break;  // the owner fills chunks in order
      }
    }
    track.dropped = t->dropped.load(std::memory_order_relaxed);
    for (const trace_event& e : track.events) {
      const auto kind = static_cast<trace_kind>(e.kind);
      if (kind == trace_kind::span_begin || kind == trace_kind::span_end ||
          kind == trace_kind::counter || kind == trace_kind::instant) {
        if (!data.names.contains(e.a)) {
          // A static_name: a string of static storage duration.
          data.names.emplace(
              e.a, reinterpret_cast<const char*>(e.a));  // NOLINT(performance-no-int-to-ptr)
        }
      }
    }
    data.tracks.push_back(std::move(track));
  }
  return data;
}

// Buffers of threads that have exited and recorded nothing since the last
// session began: nobody can touch them again.
[[maybe_unused]] void free_exited_threads(trace_registry& r) {
  const std::lock_guard lock(r.threads_mutex);
  std::erase_if(r.threads, [](trace_thread* t) {
    if (!t->exited.load(std::memory_order_acquire)) {
      return false;
    }
    trace_chunk* c = t->first;
    while (c != nullptr) {
      trace_chunk* next = c->next.load(std::memory_order_relaxed);
      delete c;
      c = next;
    }
    delete t;
    return true;
  });
}

// fork(): the child has one thread. Another thread may have held either
// mutex, or been appending to the list of buffers, at the moment of the
// fork: the child makes both mutexes and the list anew (abandoning the old
// list, which only the child's copy of memory holds) with its own buffer
// alone in it, and does not trace (its copy of the parent's session would
// be half of a picture). No prepare handler holds the locks across the
// fork: a fork must not wait for a write() in progress.
void after_fork_in_child() noexcept {
  trace_registry& r = registry();
  trace_mode.store(0, std::memory_order_relaxed);
  new (&r.control) std::mutex;
  new (&r.threads_mutex) std::mutex;
  new (&r.threads) std::vector<trace_thread*>;
  r.running = false;  // the session number stays: the next start() is a new one
  trace_thread* mine = this_thread_buffer;
  if (mine != nullptr && mine != dead_thread) {
    try {
      r.threads.push_back(mine);
    } catch (...) {
      this_thread_buffer = dead_thread;  // out of memory: this thread records no more
    }
  }
}
[[maybe_unused]] const int atfork_registered =
    pthread_atfork(nullptr, nullptr, &after_fork_in_child);

}  // namespace

}  // namespace fjord::detail

namespace fjord::trace {

void start(const options& opts) {
#ifdef FJORD_NO_TRACE
  static_cast<void>(opts);
  throw std::logic_error("fjord::trace::start: fjord was built without tracing (FJORD_NO_TRACE)");
#else
  constexpr std::size_t minimum = std::size_t{1} << 20;
  if (opts.buffer_bytes < minimum) {
    throw std::invalid_argument("fjord::trace::start: buffer_bytes " +
                                std::to_string(opts.buffer_bytes) + " is below the 1 MiB minimum");
  }
  auto& r = detail::registry();
  const std::lock_guard lock(r.control);
  if (r.running) {
    throw std::logic_error("fjord::trace::start: tracing is already running");
  }
  detail::free_exited_threads(r);
  // Sessions live in the mode word's top 32 bits. 0 is never one (threads
  // that never traced, and exited ones, have session 0), so after 2^32
  // sessions the count goes on at 1.
  r.session = (r.session + 1) & 0xffff'ffffU;
  if (r.session == 0) {
    r.session = 1;
  }
  r.running = true;
  r.stopped_ns_per_tick = 0;
  r.budget.store(
      static_cast<std::int64_t>(std::min<std::size_t>(opts.buffer_bytes, std::size_t{1} << 62)),
      std::memory_order_relaxed);
  r.clock_origin = std::chrono::steady_clock::now();
  r.tsc_origin = detail::cycle_clock::now();
  // Release: a thread that sees the new session sees its budget.
  detail::trace_mode.store((r.session << 32) | detail::trace_running_bit,
                           std::memory_order_release);
#endif
}

void stop() noexcept {
  auto& r = detail::registry();
  const std::lock_guard lock(r.control);
  if (!r.running) {
    return;
  }
  detail::trace_mode.store(r.session << 32, std::memory_order_release);
  r.tsc_end = detail::cycle_clock::now();
  r.clock_end = std::chrono::steady_clock::now();
  r.running = false;
}

bool running() noexcept {
  return (detail::trace_mode.load(std::memory_order_relaxed) & detail::trace_running_bit) != 0;
}

std::uint64_t dropped() noexcept {
  auto& r = detail::registry();
  const std::lock_guard lock(r.control);
  std::uint64_t n = 0;
  const std::lock_guard threads_lock(r.threads_mutex);
  for (const detail::trace_thread* t : r.threads) {
    if (t->session.load(std::memory_order_acquire) == r.session && r.session != 0) {
      n += t->dropped.load(std::memory_order_relaxed);
    }
  }
  return n;
}

void write(const std::string& path) {
  auto& r = detail::registry();
  const std::lock_guard lock(r.control);
  if (r.session == 0) {
    throw std::logic_error("fjord::trace::write: no trace was started");
  }
  const detail::trace_data data = detail::collect(r);
  std::FILE* out = std::fopen(path.c_str(), "wb");
  if (out == nullptr) {
    const int failure = errno;  // read before the message allocates
    throw std::system_error(failure, std::generic_category(),
                            "fjord::trace::write: cannot open '" + path + "'");
  }
  const bool json = path.size() >= 5 && path.compare(path.size() - 5, 5, ".json") == 0;
  try {
    if (json) {
      detail::write_chrome_json(data, out);
    } else {
      detail::write_trace_binary(data, out);
    }
  } catch (...) {
    std::fclose(out);
    throw;
  }
  if (std::fclose(out) != 0) {
    const int failure = errno;  // read before the message allocates
    throw std::system_error(failure, std::generic_category(),
                            "fjord::trace::write: cannot finish '" + path + "'");
  }
}

}  // namespace fjord::trace

namespace fjord::detail {

namespace {

// FJORD_TRACE=path: trace the whole program, written when it exits. The
// path lives in memory never freed: the writer runs from atexit, after the
// destructors of statics made after its registration.
struct trace_at_exit {
  std::string path;
  pid_t pid = 0;
};
trace_at_exit* at_exit_target = nullptr;

void write_at_exit() noexcept {
  if (::getpid() != at_exit_target->pid) {
    return;  // a fork()ed child: the trace is the parent's to write
  }
  trace::stop();
  try {
    trace::write(at_exit_target->path);
    if (const std::uint64_t lost = trace::dropped(); lost != 0) {
      std::fprintf(stderr, "fjord: trace written to %s; %llu events were dropped (buffer full)\n",
                   at_exit_target->path.c_str(), static_cast<unsigned long long>(lost));
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "fjord: FJORD_TRACE: %s\n", e.what());
  }
}

[[maybe_unused]] const bool traced_from_environment = [] {
  const char* p = std::getenv("FJORD_TRACE");  // NOLINT(concurrency-mt-unsafe): static init
  if (p == nullptr || *p == '\0') {
    return false;
  }
  try {
    at_exit_target = new trace_at_exit{p, ::getpid()};  // NOLINT: leaked on purpose
    trace::start();
    std::atexit(&write_at_exit);
    return true;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "fjord: FJORD_TRACE=%s: %s\n", p, e.what());
    return false;
  }
}();

}  // namespace

}  // namespace fjord::detail
