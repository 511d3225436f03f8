// pool_stats as text: the Prometheus exposition and the one-line summary.

#include "fjord/pool_stats.hpp"

#include <array>
#include <charconv>
#include <cstdio>
#include <string>

namespace fjord {

namespace {

// A label value: backslash, double quote and newline escaped (the text
// format's rules).
std::string label_value(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (const char c : s) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '"') {
      out += "\\\"";
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  return out;
}

std::string number(double v) {
  std::array<char, 32> digits{};
  const auto r = std::to_chars(digits.data(), digits.data() + digits.size(), v);
  return {digits.data(), r.ptr};
}

class exposition {
 public:
  explicit exposition(std::string_view pool_name)
      : pool_label_("pool=\"" + label_value(pool_name) + "\"") {}

  void family(std::string_view name, std::string_view type, std::string_view help) {
    text_ += "# HELP ";
    text_ += name;
    text_ += ' ';
    text_ += help;
    text_ += "\n# TYPE ";
    text_ += name;
    text_ += ' ';
    text_ += type;
    text_ += '\n';
  }
  // name{pool="...",worker="i",extra} value; worker < 0 for none.
  void sample(std::string_view name, long worker, std::string_view extra, const std::string& v) {
    text_ += name;
    text_ += '{';
    text_ += pool_label_;
    if (worker >= 0) {
      text_ += ",worker=\"";
      text_ += std::to_string(worker);
      text_ += '"';
    }
    if (!extra.empty()) {
      text_ += ',';
      text_ += extra;
    }
    text_ += "} ";
    text_ += v;
    text_ += '\n';
  }
  std::string take() { return std::move(text_); }

 private:
  std::string pool_label_;
  std::string text_;
};

double seconds(std::chrono::nanoseconds d) {
  return static_cast<double>(d.count()) / 1e9;
}

}  // namespace

std::string to_prometheus(const pool_stats& stats, std::string_view pool_name) {
  exposition out(pool_name);
  struct counter_field {
    const char* name;
    const char* help;
    std::uint64_t worker_stats::*field;
  };
  static constexpr std::array<counter_field, 6> counters = {{
      {"fjord_jobs_run_total", "Jobs taken from a queue or stolen, then run.",
       &worker_stats::jobs_run},
      {"fjord_steals_total", "Jobs taken from another worker's deque.", &worker_stats::steals},
      {"fjord_failed_steals_total", "Steal attempts that lost a race.",
       &worker_stats::failed_steals},
      {"fjord_injected_taken_total", "Jobs taken from the injection queues.",
       &worker_stats::injected_taken},
      {"fjord_parks_total", "Times a worker went to sleep.", &worker_stats::parks},
      {"fjord_wakeups_total", "Times a worker woke up.", &worker_stats::wakeups},
  }};
  for (const auto& c : counters) {
    out.family(c.name, "counter", c.help);
    for (std::size_t i = 0; i < stats.workers.size(); ++i) {
      out.sample(c.name, static_cast<long>(i), "", std::to_string(stats.workers[i].*c.field));
    }
  }
  out.family("fjord_worker_seconds_total", "counter",
             "Time of each worker by state: busy (running jobs), searching, parked.");
  for (std::size_t i = 0; i < stats.workers.size(); ++i) {
    const worker_stats& w = stats.workers[i];
    out.sample("fjord_worker_seconds_total", static_cast<long>(i), "state=\"busy\"",
               number(seconds(w.busy)));
    out.sample("fjord_worker_seconds_total", static_cast<long>(i), "state=\"searching\"",
               number(seconds(w.searching)));
    out.sample("fjord_worker_seconds_total", static_cast<long>(i), "state=\"parked\"",
               number(seconds(w.parked)));
  }
  out.family("fjord_queue_depth", "gauge",
             "Jobs on each worker's deque or posted to its thread alone.");
  for (std::size_t i = 0; i < stats.workers.size(); ++i) {
    out.sample("fjord_queue_depth", static_cast<long>(i), "",
               std::to_string(stats.workers[i].queue_depth));
  }
  out.family("fjord_injection_depth", "gauge",
             "Jobs from outside the pool waiting on its injection path.");
  out.sample("fjord_injection_depth", -1, "", std::to_string(stats.injection_depth));
  out.family("fjord_running_threads", "gauge",
             "Threads in the running set (neither blocked nor retired).");
  out.sample("fjord_running_threads", -1, "", std::to_string(stats.running_threads));
  out.family("fjord_retired_threads", "gauge", "Threads parked out of the running set.");
  out.sample("fjord_retired_threads", -1, "", std::to_string(stats.retired_threads));
  out.family("fjord_suppressed_exceptions_total", "counter",
             "Exceptions that lost to an earlier one in the same join or group.");
  out.sample("fjord_suppressed_exceptions_total", -1, "",
             std::to_string(stats.suppressed_exceptions));
  // The sampled durations, cumulative as the format wants, in seconds.
  out.family("fjord_job_duration_seconds", "histogram",
             "Durations of a sample of jobs (one in " +
                 std::to_string(job_duration_sample_interval) + ").");
  const worker_stats total = stats.total();
  std::uint64_t cumulative = 0;
  for (std::size_t i = 0; i < job_duration_buckets; ++i) {
    cumulative += total.job_durations[i];
    if (i + 1 == job_duration_buckets) {
      break;  // the last bucket is open above: it is +Inf
    }
    const double le = static_cast<double>(std::uint64_t{2} << i) / 1e9;
    out.sample("fjord_job_duration_seconds_bucket", -1, "le=\"" + number(le) + "\"",
               std::to_string(cumulative));
  }
  out.sample("fjord_job_duration_seconds_bucket", -1, "le=\"+Inf\"", std::to_string(cumulative));
  // The sum is estimated from bucket midpoints: the workers keep counts only.
  double sum = 0;
  for (std::size_t i = 0; i < job_duration_buckets; ++i) {
    sum += static_cast<double>(total.job_durations[i]) * 1.5 *
           static_cast<double>(std::uint64_t{1} << i) / 1e9;
  }
  out.sample("fjord_job_duration_seconds_sum", -1, "", number(sum));
  out.sample("fjord_job_duration_seconds_count", -1, "", std::to_string(cumulative));
  return out.take();
}

std::string summary_line(const pool_stats& stats, std::string_view pool_name) {
  const worker_stats t = stats.total();
  const auto all = static_cast<double>((t.busy + t.searching + t.parked).count());
  auto percent = [all](std::chrono::nanoseconds d) {
    return all <= 0 ? 0.0 : 100.0 * static_cast<double>(d.count()) / all;
  };
  const std::uint64_t queued = t.queue_depth + stats.injection_depth;
  std::array<char, 256> line{};
  std::snprintf(line.data(), line.size(),
                "%zu threads, %llu jobs, %llu steals (%.0f%% of attempts), %.0f%% busy, "
                "%.0f%% searching, %.0f%% parked, %llu parks, %llu queued",
                stats.workers.size(), static_cast<unsigned long long>(t.jobs_run),
                static_cast<unsigned long long>(t.steals), 100.0 * t.steal_success_rate(),
                percent(t.busy), percent(t.searching), percent(t.parked),
                static_cast<unsigned long long>(t.parks), static_cast<unsigned long long>(queued));
  return "fjord: pool \"" + std::string(pool_name) + "\": " + line.data();
}

}  // namespace fjord
