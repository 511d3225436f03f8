// A trace's two file forms: Chrome trace-event JSON and the compact binary
// form (docs/tracing.md, "Files").

#include <algorithm>
#include <array>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <map>
#include <stdexcept>
#include <string>
#include <string_view>
#include <system_error>
#include <unordered_map>
#include <utility>
#include <vector>

#include "fjord/detail/trace_data.hpp"

namespace fjord::detail {

namespace {

// Buffered output that reports a failed stream once, at the end.
class output {
 public:
  explicit output(std::FILE* f) : file_(f) { buffer_.reserve(capacity); }
  output(const output&) = delete;
  output& operator=(const output&) = delete;
  ~output() = default;

  void put(std::string_view s) {
    buffer_.append(s);
    if (buffer_.size() >= capacity) {
      flush();
    }
  }
  void put(char c) { put(std::string_view(&c, 1)); }
  void put_raw(const void* p, std::size_t n) {
    put(std::string_view(static_cast<const char*>(p), n));
  }
  template <class T>
  void put_number(T v) {
    std::array<char, 32> digits{};
    const auto r = std::to_chars(digits.data(), digits.data() + digits.size(), v);
    put(std::string_view(digits.data(), static_cast<std::size_t>(r.ptr - digits.data())));
  }
  // Microseconds with nanosecond digits: what the JSON's "ts" and "dur" hold.
  void put_micros(double us) {
    std::array<char, 48> digits{};
    const auto r = std::to_chars(digits.data(), digits.data() + digits.size(), us,
                                 std::chars_format::fixed, 3);
    put(std::string_view(digits.data(), static_cast<std::size_t>(r.ptr - digits.data())));
  }
  void put_hex(std::uint64_t v) {
    std::array<char, 24> digits{};
    const auto r = std::to_chars(digits.data(), digits.data() + digits.size(), v, 16);
    put("\"0x");
    put(std::string_view(digits.data(), static_cast<std::size_t>(r.ptr - digits.data())));
    put('"');
  }
  void put_string(std::string_view s) {
    put('"');
    for (const char c : s) {
      const auto u = static_cast<unsigned char>(c);
      if (c == '"' || c == '\\') {
        put('\\');
        put(c);
      } else if (u < 0x20) {
        put("\\u00");
        constexpr std::string_view hex = "0123456789abcdef";
        put(hex[u >> 4]);
        put(hex[u & 15]);
      } else {
        put(c);
      }
    }
    put('"');
  }
  void flush() {
    if (!buffer_.empty() &&
        std::fwrite(buffer_.data(), 1, buffer_.size(), file_) != buffer_.size()) {
      throw std::system_error(errno, std::generic_category(), "fjord::trace: writing the trace");
    }
    buffer_.clear();
  }

 private:
  static constexpr std::size_t capacity = std::size_t{1} << 20;
  std::FILE* file_;
  std::string buffer_;
};

// Where each track goes in the JSON: one process per pool, one for the
// threads that belong to none.
struct track_place {
  std::uint64_t pid;
  std::uint64_t tid;
};

class json_writer {
 public:
  json_writer(const trace_data& data, std::FILE* f) : data_(data), out_(f) {}

  void write() {
    out_.put(
        "{\"displayTimeUnit\":\"ns\",\"otherData\":{\"producer\":\"fjord\",\"dropped_events\":");
    out_.put_number(data_.dropped());
    out_.put("},\"traceEvents\":[\n");
    place_tracks();
    index_job_begins();
    for (std::size_t i = 0; i < data_.tracks.size(); ++i) {
      write_track(i);
    }
    out_.put("]}\n");
    out_.flush();
  }

 private:
  struct open_slice {
    trace_kind kind;
    std::uint64_t tsc;
    std::uint64_t a;
    std::uint32_t small;
  };
  struct begin_at {
    std::uint64_t tsc;
    std::size_t track;
  };

  double micros(std::uint64_t tsc) const {
    const auto ticks = static_cast<double>(static_cast<std::int64_t>(tsc - data_.tsc_origin));
    return ticks * data_.ns_per_tick / 1000.0;
  }

  void place_tracks() {
    std::map<std::uint64_t, std::string> pools;  // by id: the order pools were made
    for (const auto& t : data_.tracks) {
      if (t.pool_id != 0) {
        pools.emplace(t.pool_id, t.pool_name);
      }
    }
    std::uint64_t next_pid = 2;
    for (const auto& [id, name] : pools) {
      pool_pid_[id] = next_pid;
      metadata_process(next_pid, "pool \"" + name + "\"", next_pid);
      ++next_pid;
    }
    bool others = false;
    for (const auto& t : data_.tracks) {
      const std::uint64_t pid = t.pool_id == 0 ? 1 : pool_pid_.at(t.pool_id);
      places_.push_back({pid, t.tid});
      others = others || t.pool_id == 0;
      std::string name = t.pool_id != 0 ? "worker " + std::to_string(t.worker_index)
                                        : (t.thread_name.empty() ? "thread" : t.thread_name);
      name += " (tid ";
      name += std::to_string(t.tid);
      name += ')';
      begin_event("M", pid, t.tid, "thread_name");
      out_.put(",\"args\":{\"name\":");
      out_.put_string(name);
      out_.put("}},\n");
      begin_event("M", pid, t.tid, "thread_sort_index");
      out_.put(",\"args\":{\"sort_index\":");
      out_.put_number(t.pool_id != 0 ? t.worker_index : 0);
      out_.put("}},\n");
    }
    if (others) {
      metadata_process(1, "other threads", next_pid);
    }
  }

  void metadata_process(std::uint64_t pid, const std::string& name, std::uint64_t order) {
    begin_event("M", pid, 0, "process_name");
    out_.put(",\"args\":{\"name\":");
    out_.put_string(name);
    out_.put("}},\n");
    begin_event("M", pid, 0, "process_sort_index");
    out_.put(",\"args\":{\"sort_index\":");
    out_.put_number(order);
    out_.put("}},\n");
  }

  // Where jobs began, by job address: flows end at the first begin of the
  // same job after their start.
  void index_job_begins() {
    for (std::size_t i = 0; i < data_.tracks.size(); ++i) {
      for (const trace_event& e : data_.tracks[i].events) {
        if (static_cast<trace_kind>(e.kind) == trace_kind::job_begin) {
          begins_[e.a].push_back({e.tsc, i});
        } else if (static_cast<trace_kind>(e.kind) == trace_kind::fork) {
          forks_[e.a].push_back({e.tsc, i});
        }
      }
    }
    auto by_time = [](const begin_at& x, const begin_at& y) { return x.tsc < y.tsc; };
    for (auto& [job, list] : begins_) {
      std::sort(list.begin(), list.end(), by_time);
    }
    for (auto& [job, list] : forks_) {
      std::sort(list.begin(), list.end(), by_time);
    }
  }

  const begin_at* begin_after(std::uint64_t job, std::uint64_t tsc) const {
    const auto it = begins_.find(job);
    if (it == begins_.end()) {
      return nullptr;
    }
    const auto& list = it->second;
    const auto at = std::lower_bound(list.begin(), list.end(), tsc,
                                     [](const begin_at& b, std::uint64_t t) { return b.tsc < t; });
    return at == list.end() ? nullptr : &*at;
  }

  const begin_at* fork_before(std::uint64_t job, std::uint64_t tsc, std::size_t track) const {
    const auto it = forks_.find(job);
    if (it == forks_.end()) {
      return nullptr;
    }
    const auto& list = it->second;
    auto at = std::upper_bound(list.begin(), list.end(), tsc,
                               [](std::uint64_t t, const begin_at& b) { return t < b.tsc; });
    while (at != list.begin()) {
      --at;
      if (at->track == track) {
        return &*at;
      }
    }
    return nullptr;
  }

  void begin_event(std::string_view ph, std::uint64_t pid, std::uint64_t tid,
                   std::string_view name) {
    out_.put("{\"ph\":\"");
    out_.put(ph);
    out_.put("\",\"pid\":");
    out_.put_number(pid);
    out_.put(",\"tid\":");
    out_.put_number(tid);
    out_.put(",\"name\":");
    out_.put_string(name);
  }

  void put_ts(std::uint64_t tsc) {
    out_.put(",\"ts\":");
    out_.put_micros(micros(tsc));
  }

  std::string_view name_of(std::uint64_t address) const {
    const auto it = data_.names.find(address);
    return it == data_.names.end() ? std::string_view("?") : std::string_view(it->second);
  }

  static std::string_view slice_name(const open_slice& s) {
    switch (s.kind) {
      case trace_kind::job_begin:
        return "job";
      case trace_kind::search_begin:
        return "searching";
      case trace_kind::park_begin:
        switch (static_cast<park_reason>(s.small)) {
          case park_reason::polling:
            return "parked, polling I/O";
          case park_reason::blocked:
            return "blocked";
          case park_reason::idle:
            break;
        }
        return "parked";
      default:
        return "span";
    }
  }

  static trace_kind begin_of(trace_kind end) {
    switch (end) {
      case trace_kind::job_end:
        return trace_kind::job_begin;
      case trace_kind::search_end:
        return trace_kind::search_begin;
      case trace_kind::park_end:
        return trace_kind::park_begin;
      default:
        return trace_kind::span_begin;
    }
  }

  void emit_slice(const track_place& p, const open_slice& s, std::uint64_t end_tsc, bool open) {
    const std::string_view name = s.kind == trace_kind::span_begin ? name_of(s.a) : slice_name(s);
    begin_event("X", p.pid, p.tid, name);
    out_.put(",\"cat\":");
    out_.put(s.kind == trace_kind::span_begin ? "\"user\"" : "\"fjord\"");
    put_ts(s.tsc);
    out_.put(",\"dur\":");
    out_.put_micros(std::max(0.0, micros(end_tsc) - micros(s.tsc)));
    if (s.kind == trace_kind::job_begin || open) {
      out_.put(",\"args\":{");
      if (s.kind == trace_kind::job_begin) {
        out_.put("\"job\":");
        out_.put_hex(s.a);
      }
      if (open) {
        out_.put(s.kind == trace_kind::job_begin ? ",\"unfinished\":true" : "\"unfinished\":true");
      }
      out_.put('}');
    }
    out_.put("},\n");
  }

  void emit_instant(const track_place& p, const trace_event& e, std::string_view name,
                    std::string_view category) {
    begin_event("i", p.pid, p.tid, name);
    out_.put(",\"s\":\"t\",\"cat\":\"");
    out_.put(category);
    out_.put('"');
    put_ts(e.tsc);
  }

  // An instant with one argument, an address shown in hex (a job, a parker).
  void emit_instant_at(const track_place& p, const trace_event& e, std::string_view name,
                       std::string_view arg) {
    emit_instant(p, e, name, "fjord");
    out_.put(",\"args\":{\"");
    out_.put(arg);
    out_.put("\":");
    out_.put_hex(e.a);
    out_.put("}},\n");
  }

  // A flow arrow from (pid, tid, tsc) to the slice that begins at `to`.
  void emit_flow(std::string_view name, const track_place& from, std::uint64_t from_tsc,
                 const track_place& to, std::uint64_t to_tsc) {
    const std::uint64_t id = next_flow_id_++;
    begin_event("s", from.pid, from.tid, name);
    out_.put(",\"cat\":\"flow\",\"id\":");
    out_.put_number(id);
    put_ts(from_tsc);
    out_.put("},\n");
    begin_event("f", to.pid, to.tid, name);
    out_.put(",\"cat\":\"flow\",\"bp\":\"e\",\"id\":");
    out_.put_number(id);
    put_ts(to_tsc);
    out_.put("},\n");
  }

  // A flow from this event to where its job began next, if it did.
  void flow_to_begin(std::string_view name, const track_place& from, const trace_event& e) {
    if (const begin_at* b = begin_after(e.a, e.tsc)) {
      emit_flow(name, from, e.tsc, places_[b->track], b->tsc);
    }
  }

  void write_track(std::size_t index) {
    const trace_track& t = data_.tracks[index];
    const track_place& p = places_[index];
    std::vector<open_slice> open;
    std::uint64_t last = 0;
    for (const trace_event& e : t.events) {
      last = e.tsc;
      const auto kind = static_cast<trace_kind>(e.kind);
      switch (kind) {
        case trace_kind::job_begin:
        case trace_kind::search_begin:
        case trace_kind::park_begin:
        case trace_kind::span_begin:
          open.push_back({kind, e.tsc, e.a, e.small});
          break;
        case trace_kind::job_end:
        case trace_kind::search_end:
        case trace_kind::park_end:
        case trace_kind::span_end:
          close(p, open, begin_of(kind), e.tsc);
          break;
        case trace_kind::fork:
          emit_instant_at(p, e, "fork", "job");
          break;
        case trace_kind::steal:
          write_steal(index, e);
          break;
        case trace_kind::inject:
          emit_instant_at(p, e, "submit", "job");
          flow_to_begin("submit", p, e);
          break;
        case trace_kind::coroutine_suspend:
          emit_instant_at(p, e, "coroutine suspends", "job");
          break;
        case trace_kind::coroutine_wake:
          emit_instant_at(p, e, "coroutine woken", "job");
          flow_to_begin("wake", p, e);
          break;
        case trace_kind::timer_fire:
          emit_instant(p, e, "timer fires", "fjord");
          out_.put("},\n");
          break;
        case trace_kind::channel_block:
          emit_instant_at(
              p, e, e.small == 0 ? "coroutine waits on a channel" : "thread waits on a channel",
              "parker");
          break;
        case trace_kind::channel_unblock:
          emit_instant_at(p, e, "channel wakes a waiter", "parker");
          break;
        case trace_kind::io_wait:
        case trace_kind::io_ready:
          emit_instant(p, e, kind == trace_kind::io_wait ? "fd wait" : "fd wait ends", "fjord");
          out_.put(",\"args\":{\"fd\":");
          out_.put_number(e.small);
          if (kind == trace_kind::io_ready) {
            constexpr std::array<std::string_view, 4> outcomes = {"\"ready\"", "\"timeout\"",
                                                                  "\"canceled\"", "\"closed\""};
            out_.put(",\"outcome\":");
            out_.put(e.b < outcomes.size() ? outcomes[e.b] : std::string_view("\"?\""));
          }
          out_.put("}},\n");
          break;
        case trace_kind::counter:
          begin_event("C", p.pid, p.tid, name_of(e.a));
          put_ts(e.tsc);
          out_.put(",\"args\":{\"value\":");
          out_.put_number(static_cast<std::int64_t>(e.b));
          out_.put("}},\n");
          break;
        case trace_kind::instant:
          emit_instant(p, e, name_of(e.a), "user");
          out_.put("},\n");
          break;
        case trace_kind::thread_start:
          emit_instant(p, e, "worker starts", "fjord");
          out_.put("},\n");
          break;
      }
    }
    // Still open when the trace was taken: closed at the track's last event.
    while (!open.empty()) {
      emit_slice(p, open.back(), last, true);
      open.pop_back();
    }
    if (t.dropped != 0) {
      begin_event("i", p.pid, p.tid, "events dropped (trace buffer full)");
      out_.put(",\"s\":\"t\",\"cat\":\"fjord\"");
      put_ts(last);
      out_.put(",\"args\":{\"dropped\":");
      out_.put_number(t.dropped);
      out_.put("}},\n");
    }
    // The last element of the array may not end in a comma.
    if (index + 1 == data_.tracks.size()) {
      begin_event("M", p.pid, p.tid, "trace_end");
      out_.put(",\"args\":{}}\n");
    }
  }

  void write_steal(std::size_t index, const trace_event& e) {
    const track_place& p = places_[index];
    emit_instant(p, e, "steal", "fjord");
    out_.put(",\"args\":{\"victim\":");
    out_.put_number(e.small);
    out_.put(",\"job\":");
    out_.put_hex(e.a);
    out_.put("}},\n");
    // From the victim's track (its fork if recorded, else the moment of
    // the steal) to the stolen job on ours.
    const trace_track& t = data_.tracks[index];
    std::size_t victim = data_.tracks.size();
    for (std::size_t i = 0; i < data_.tracks.size(); ++i) {
      if (data_.tracks[i].pool_id == t.pool_id && data_.tracks[i].worker_index == e.small) {
        victim = i;
        break;
      }
    }
    if (victim == data_.tracks.size()) {
      return;  // the victim recorded nothing this session
    }
    std::uint64_t from = e.tsc;
    if (const begin_at* f = fork_before(e.a, e.tsc, victim)) {
      from = f->tsc;
    }
    const begin_at* b = begin_after(e.a, e.tsc);
    const bool ours = b != nullptr && b->track == index;
    emit_flow("steal", places_[victim], from, p, ours ? b->tsc : e.tsc);
  }

  void close(const track_place& p, std::vector<open_slice>& open, trace_kind begin,
             std::uint64_t tsc) {
    // Slices nest; an end without its begin (it came before start()) is
    // skipped.
    const auto it = std::find_if(open.rbegin(), open.rend(),
                                 [begin](const open_slice& s) { return s.kind == begin; });
    if (it == open.rend()) {
      return;
    }
    // Anything opened inside it and never closed ends with it.
    const auto at = static_cast<std::size_t>(open.rend() - it) - 1;
    while (open.size() > at + 1) {
      emit_slice(p, open.back(), tsc, true);
      open.pop_back();
    }
    emit_slice(p, open.back(), tsc, false);
    open.pop_back();
  }

  const trace_data& data_;
  output out_;
  std::vector<track_place> places_;
  std::unordered_map<std::uint64_t, std::uint64_t> pool_pid_;
  std::unordered_map<std::uint64_t, std::vector<begin_at>> begins_;
  std::unordered_map<std::uint64_t, std::vector<begin_at>> forks_;
  std::uint64_t next_flow_id_ = 1;
};

constexpr std::array<char, 8> binary_magic = {'F', 'J', 'T', 'R', 'A', 'C', 'E', '1'};

template <class T>
void put_value(output& out, T v) {
  out.put_raw(&v, sizeof v);
}

void put_bytes(output& out, const std::string& s) {
  put_value(out, static_cast<std::uint32_t>(s.size()));
  out.put(s);
}

class input {
 public:
  explicit input(std::FILE* f) : file_(f) {}

  void read(void* p, std::size_t n, const char* what) {
    if (n != 0 && std::fread(p, 1, n, file_) != n) {
      throw std::runtime_error(std::string("fjord trace file: truncated while reading ") + what);
    }
  }
  template <class T>
  T value(const char* what) {
    T v{};
    read(&v, sizeof v, what);
    return v;
  }
  std::string bytes(const char* what) {
    const auto n = value<std::uint32_t>(what);
    if (n > (std::uint32_t{1} << 20)) {
      throw std::runtime_error(std::string("fjord trace file: ") + what + " of " +
                               std::to_string(n) + " bytes is implausibly long");
    }
    std::string s(n, '\0');
    read(s.data(), n, what);
    return s;
  }

 private:
  std::FILE* file_;
};

}  // namespace

void write_chrome_json(const trace_data& data, std::FILE* out) {
  json_writer(data, out).write();
}

void write_trace_binary(const trace_data& data, std::FILE* f) {
  output out(f);
  out.put_raw(binary_magic.data(), binary_magic.size());
  put_value(out, std::uint32_t{0});  // flags: none yet
  put_value(out, static_cast<std::uint32_t>(sizeof(trace_event)));
  put_value(out, data.pid);
  put_value(out, data.tsc_origin);
  put_value(out, data.ns_per_tick);
  put_value(out, static_cast<std::uint64_t>(data.names.size()));
  for (const auto& [address, name] : data.names) {
    put_value(out, address);
    put_bytes(out, name);
  }
  put_value(out, static_cast<std::uint64_t>(data.tracks.size()));
  for (const trace_track& t : data.tracks) {
    put_value(out, t.tid);
    put_value(out, t.pool_id);
    put_value(out, t.worker_index);
    put_value(out, t.dropped);
    put_bytes(out, t.pool_name);
    put_bytes(out, t.thread_name);
    put_value(out, static_cast<std::uint64_t>(t.events.size()));
    out.put_raw(t.events.data(), t.events.size() * sizeof(trace_event));
  }
  out.flush();
}

trace_data read_trace_binary(std::FILE* f) {
  input in(f);
  std::array<char, 8> magic{};
  in.read(magic.data(), magic.size(), "the header");
  if (magic != binary_magic) {
    throw std::runtime_error("fjord trace file: not a fjord binary trace (bad magic)");
  }
  trace_data data;
  static_cast<void>(in.value<std::uint32_t>("the flags"));
  if (const auto size = in.value<std::uint32_t>("the event size"); size != sizeof(trace_event)) {
    throw std::runtime_error("fjord trace file: events of " + std::to_string(size) +
                             " bytes, this reader knows " + std::to_string(sizeof(trace_event)));
  }
  data.pid = in.value<std::int64_t>("the pid");
  data.tsc_origin = in.value<std::uint64_t>("the origin");
  data.ns_per_tick = in.value<double>("the tick rate");
  if (!(data.ns_per_tick > 0.0)) {
    throw std::runtime_error("fjord trace file: tick rate " + std::to_string(data.ns_per_tick) +
                             " is not positive");
  }
  const auto names = in.value<std::uint64_t>("the name count");
  for (std::uint64_t i = 0; i < names; ++i) {
    const auto address = in.value<std::uint64_t>("a name");
    data.names.emplace(address, in.bytes("a name"));
  }
  const auto tracks = in.value<std::uint64_t>("the track count");
  for (std::uint64_t i = 0; i < tracks; ++i) {
    trace_track t;
    t.tid = in.value<std::uint64_t>("a track");
    t.pool_id = in.value<std::uint64_t>("a track");
    t.worker_index = in.value<std::uint32_t>("a track");
    t.dropped = in.value<std::uint64_t>("a track");
    t.pool_name = in.bytes("a pool name");
    t.thread_name = in.bytes("a thread name");
    const auto count = in.value<std::uint64_t>("an event count");
    // Read in pieces: a corrupt count fails on the missing bytes, not on
    // an enormous allocation.
    constexpr std::uint64_t piece = 1 << 16;
    for (std::uint64_t done = 0; done < count;) {
      const std::uint64_t n = std::min(piece, count - done);
      const std::size_t at = t.events.size();
      t.events.resize(at + n);
      in.read(t.events.data() + at, n * sizeof(trace_event), "events");
      done += n;
    }
    for (const trace_event& e : t.events) {
      if (e.kind == 0 || e.kind > trace_kind_last) {
        throw std::runtime_error("fjord trace file: unknown event kind " + std::to_string(e.kind));
      }
    }
    data.tracks.push_back(std::move(t));
  }
  return data;
}

}  // namespace fjord::detail
