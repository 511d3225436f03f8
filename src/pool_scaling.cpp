// Dynamic scaling: the bounds, growth, shrinking after an idle timeout, the
// replacement of workers blocked without saying so, and the monitor thread
// that watches for the last two. The protocol is argued in
// docs/scheduler.md, "Scaling"; it reuses the compensation of "Blocking".

#include <fcntl.h>
#include <pthread.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <mutex>
#include <stdexcept>
#include <string>
#include <string_view>
#include <system_error>

#include "fjord/detail/fork_generation.hpp"
#include "fjord/detail/pool_core.hpp"
#include "fjord/detail/pool_core_cold.hpp"
#include "fjord/pool_options.hpp"

namespace fjord::detail {

namespace {

using std::chrono::steady_clock;

constexpr std::chrono::nanoseconds growth_interval = std::chrono::milliseconds(1);
constexpr std::chrono::nanoseconds min_interval = std::chrono::microseconds(100);
constexpr std::chrono::nanoseconds cpu_check_interval = std::chrono::seconds(1);
constexpr std::chrono::nanoseconds max_quiet_interval = std::chrono::milliseconds(50);

}  // namespace

std::size_t pool_core::min_workers() const noexcept {
  return cold_->min_workers.load(std::memory_order_relaxed);
}

std::size_t pool_core::max_workers() const noexcept {
  return cold_->max_workers.load(std::memory_order_relaxed);
}

void pool_core::resize(std::size_t min, std::size_t max) {
  if (min == 0 || min > max || max > max_threads_) {
    throw std::invalid_argument(
        "fjord::pool::resize: the bounds must satisfy 1 <= min <= max <= " +
        std::to_string(max_threads_) +
        " (the pool's thread slots: max_workers at construction + max_spare_threads), got min " +
        std::to_string(min) + ", max " + std::to_string(max));
  }
  if (fork_generation_ != fork_generation()) {
    throw_forked();
  }
  if (is_shut_down()) {
    throw_shutdown();
  }
  if (min < max) {
    start_monitor();  // a fixed pool that now scales; first, so a throw changes nothing
  }
  set_bounds(min, max, /*follow_cpus=*/false, /*from_monitor=*/false);
}

void pool_core::set_bounds(std::size_t min, std::size_t max, bool follow_cpus,
                           bool from_monitor) noexcept {
  std::size_t added = 0;
  bool wake = false;
  {
    std::lock_guard lock(cold_->idle_mutex);
    if (from_monitor && !cold_->follow_cpus) {
      return;  // a resize() came first: it ended the following
    }
    cold_->min_workers.store(min, std::memory_order_relaxed);
    cold_->max_workers.store(max, std::memory_order_relaxed);
    cold_->follow_cpus = follow_cpus;
    const std::size_t now = size();
    const std::size_t next = std::clamp(now, min, max);
    size_.store(next, std::memory_order_relaxed);
    if (next > now) {
      added = next - now;
    } else if (next < now) {
      // Phantoms beyond the new size would only start stand-ins to retire.
      while (cold_->deficit > 0 && cold_->running + cold_->deficit > next) {
        --cold_->deficit;
        census_.remove_sleeper();
      }
      publish_thread_counts_locked();
    }
    // Parked workers look again: beyond a smaller size they retire at the
    // top of their loop, and above a lower minimum they park again with
    // the idle timeout.
    wake = next < now || next > min;
    // The monitor's interval may have changed.
    cold_->monitor_parked = false;
    cold_->monitor_wake.notify_one();
  }
  add_workers(added);
  if (wake) {
    wake_all();
  }
}

void pool_core::shrink_after_refusal_locked(std::size_t n) noexcept {
  const std::size_t floor = std::max<std::size_t>(1, min_workers());
  const std::size_t now = size();
  size_.store(now > floor + n ? now - n : floor, std::memory_order_relaxed);
  publish_thread_counts_locked();
}

bool pool_core::leave_after_idle_timeout(worker& w) noexcept {
  // Out of the census now, so a pusher from here on wakes someone else or
  // nobody: look once more for work one may have left us (as a searcher
  // leaving does, docs/scheduler.md "Leaving the search"); the heavy fence
  // pairs with the pushers' light fences.
  heavy_fence();
  const bool work = any_work_visible() || w.inbox.maybe_nonempty();
  std::lock_guard lock(cold_->idle_mutex);
  // Settled first, as retire() does: a presumed block counted us out of the
  // running set once already.
  clear_presumed_block_locked(w);
  if (work || size() <= min_workers() || cold_->running <= min_workers() ||
      drained_.load(std::memory_order_relaxed)) {
    wake_monitor_locked();  // awake after all
    return false;
  }
  size_.store(size() - 1, std::memory_order_relaxed);
  leave_for_retired_list_locked(w);
  return true;
}

void pool_core::wake_monitor_locked() noexcept {
  if (cold_->monitor_parked) {
    cold_->monitor_parked = false;
    cold_->monitor_wake.notify_one();
  }
}

void pool_core::start_monitor() {
  std::lock_guard once(cold_->monitor_mutex);
  if (cold_->monitor_started || cold_->monitor_closed) {
    return;
  }
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setstacksize(&attr, std::size_t{256} << 10);
  const int rc = pthread_create(
      &cold_->monitor_thread, &attr,
      [](void* self) -> void* {
        static_cast<pool_core*>(self)->monitor_main();
        return nullptr;
      },
      this);
  pthread_attr_destroy(&attr);
  if (rc != 0) {
    throw std::system_error(rc, std::generic_category(),
                            "fjord::pool: could not start the scaling monitor thread");
  }
  // Named before anyone can look (Linux keeps 15 bytes).
  std::string name = name_ + "-mon";
  name.resize(std::min<std::size_t>(name.size(), 15));
  pthread_setname_np(cold_->monitor_thread, name.c_str());
  cold_->monitor_started = true;
}

void pool_core::stop_monitor() noexcept {
  std::lock_guard once(cold_->monitor_mutex);
  cold_->monitor_closed = true;  // a resize() racing close() starts none
  if (!cold_->monitor_started) {
    return;
  }
  {
    std::lock_guard lock(cold_->idle_mutex);
    cold_->monitor_stop = true;
    cold_->monitor_wake.notify_one();
  }
  pthread_join(cold_->monitor_thread, nullptr);
  cold_->monitor_started = false;
  for (auto& s : cold_->samples) {
    if (s.schedstat_fd >= 0) {
      ::close(s.schedstat_fd);
      s.schedstat_fd = -1;
    }
  }
}

std::chrono::nanoseconds pool_core::monitor_interval_locked() const noexcept {
  std::chrono::nanoseconds base = std::chrono::nanoseconds::zero();
  if (cold_->replace_blocked_after.count() != 0) {
    base = std::clamp(cold_->replace_blocked_after / 2, min_interval, growth_interval);
  } else if (min_workers() < max_workers()) {
    base = growth_interval;
  } else if (cold_->follow_cpus) {
    return cpu_check_interval;
  } else {
    return base;  // nothing to watch
  }
  // While no work waits, neither a blocked worker nor starvation can cost
  // anything: look less often, down to every max_quiet_interval (Go's
  // sysmon backs off the same way).
  const unsigned doublings = std::min(cold_->quiet_looks, 16u);
  return std::min(base * (1u << doublings), std::max(base, max_quiet_interval));
}

void pool_core::monitor_main() noexcept {
  std::unique_lock lock(cold_->idle_mutex);
  cold_->samples.reserve(max_threads_);
  while (!cold_->monitor_stop) {
    const std::chrono::nanoseconds interval = monitor_interval_locked();
    // Every thread idle in its main loop or retired: nothing can be
    // blocked or starved until a worker wakes, and the one that does wakes
    // us (sleep()). So an idle pool costs no CPU here.
    const bool idle = cold_->idle_main_loop + cold_->retired.size() == cold_->reserved;
    if (idle || interval.count() == 0) {
      cold_->monitor_parked = true;
      cold_->starved_last_look = false;
      cold_->quiet_looks = 0;
      cold_->monitor_wake.wait(lock,
                               [this] { return !cold_->monitor_parked || cold_->monitor_stop; });
      continue;
    }
    cold_->monitor_wake.wait_for(lock, interval);
    if (cold_->monitor_stop) {
      break;
    }
    lock.unlock();
    monitor_tick();
    lock.lock();
  }
}

void pool_core::monitor_tick() noexcept {
  const auto now = steady_clock::now();
  bool follow = false;
  {
    std::lock_guard lock(cold_->idle_mutex);
    follow = cold_->follow_cpus && now - cold_->last_cpu_check >= cpu_check_interval;
    if (follow) {
      cold_->last_cpu_check = now;
    }
  }
  if (follow) {
    // The affinity mask or the cgroup quota may have changed: the pool
    // follows, as it was made to (no bound was given), unless a resize()
    // meanwhile ended the following.
    const std::size_t cpus = std::min(available_cpus(), max_threads_);
    if (cpus != size()) {
      set_bounds(cpus, cpus, /*follow_cpus=*/true, /*from_monitor=*/true);
    }
  }
  // A paused pool's workers hold jobs and use no CPU by request: neither
  // blocked nor starved (docs/scheduler.md, "Pause").
  if (is_paused()) {
    return;
  }
  const bool work_waits = any_work_visible();
  {
    std::lock_guard lock(cold_->idle_mutex);
    cold_->quiet_looks = work_waits ? 0 : cold_->quiet_looks + 1;
  }
  replace_blocked_workers(now, work_waits);
  grow_if_starved();
}

namespace {

// What the thread wanted of a CPU so far: its CPU time plus its time
// runnable on a run queue (/proc/self/task/<tid>/schedstat: "run wait
// slices", in ns). A thread descheduled on a loaded machine still wants a
// CPU; a thread asleep in the kernel does not.
bool wanted_cpu(int fd, std::chrono::nanoseconds& out) noexcept {
  std::array<char, 96> text{};
  const ssize_t n = ::pread(fd, text.data(), text.size() - 1, 0);
  if (n <= 0) {
    return false;
  }
  unsigned long long run = 0;
  unsigned long long wait = 0;
  if (std::sscanf(text.data(), "%llu %llu", &run, &wait) != 2) {
    return false;
  }
  out = std::chrono::nanoseconds(run + wait);
  return true;
}

// Whether the thread is on a run queue now (state R in
// /proc/self/task/<tid>/stat). schedstat's wait time grows only when a
// waiting thread gets its CPU, so a computing thread kept off the CPUs for
// the whole window by a loaded machine shows no progress there; its state
// tells it apart from a thread asleep in the kernel. Unknown counts as
// runnable: never presume what cannot be seen.
bool runnable_now(int tid) noexcept {
  std::array<char, 64> path{};
  std::snprintf(path.data(), path.size(), "/proc/self/task/%d/stat", tid);
  const int fd = ::open(path.data(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    return true;
  }
  std::array<char, 128> text{};
  const ssize_t n = ::read(fd, text.data(), text.size() - 1);
  ::close(fd);
  if (n <= 0) {
    return true;
  }
  // "tid (name) S ...": the name may hold spaces and parentheses, so the
  // state follows the last ')'.
  const std::string_view line(text.data(), static_cast<std::size_t>(n));
  const std::size_t close = line.rfind(')');
  if (close == std::string_view::npos || close + 2 >= line.size()) {
    return true;
  }
  return line[close + 2] == 'R';
}

int open_schedstat(int tid) noexcept {
  std::array<char, 64> path{};
  std::snprintf(path.data(), path.size(), "/proc/self/task/%d/schedstat", tid);
  return ::open(path.data(), O_RDONLY | O_CLOEXEC);
}

}  // namespace

void pool_core::replace_blocked_workers(steady_clock::time_point now, bool work_waits) noexcept {
  if (cold_->replace_blocked_after.count() == 0) {
    return;
  }
  // One sample per thread made so far (index i: worker i).
  for (std::size_t i = cold_->samples.size(); i < thread_count(); ++i) {
    cold_->samples.emplace_back();
  }
  std::size_t phantoms = 0;
  bool vacated = false;  // a worker presumed blocked with no phantom for it
  {
    std::lock_guard lock(cold_->idle_mutex);
    for (std::size_t i = 0; i < cold_->samples.size(); ++i) {
      worker& w = *workers_[i];
      auto& s = cold_->samples[i];
      // A job begun or a wake-up since the last look is progress; an idle,
      // retired or blocked thread is not in a job of its own. Either starts
      // the window afresh.
      const std::uint64_t progress = w.counters.jobs_run.read() + w.counters.wakeups.read();
      if (progress != s.progress || w.idle_position != ~std::size_t{0} || w.retired || w.blocked ||
          w.presumed_blocked.load(std::memory_order_relaxed)) {
        s.progress = progress;
        s.window_open = false;
        continue;
      }
      // Inside one job since the last look: what it wanted of a CPU says
      // whether it computes (or waits for one) or sleeps in the kernel. One
      // read of a file kept open, only for such threads.
      if (s.schedstat_fd < 0) {
        const int tid = w.tid.load(std::memory_order_relaxed);
        if (tid == 0 || (s.schedstat_fd = open_schedstat(tid)) < 0) {
          continue;  // not started yet, or no scheduler statistics: never presumed
        }
      }
      std::chrono::nanoseconds wanted{0};
      if (!wanted_cpu(s.schedstat_fd, wanted)) {
        continue;
      }
      if (!s.window_open) {
        s.window_open = true;
        s.since = now;
        s.wanted_at_since = wanted;
        continue;
      }
      const auto stuck = now - s.since;
      // Wanted under half a CPU over the window: blocked, not computing
      // (a computing job gains nothing from a second thread on its CPU).
      if (work_waits && stuck >= cold_->replace_blocked_after &&
          2 * (wanted - s.wanted_at_since) < stuck &&
          !runnable_now(w.tid.load(std::memory_order_relaxed))) {
        w.presumed_blocked.store(true, std::memory_order_relaxed);
        if (leave_running_locked()) {
          ++phantoms;
        } else {
          vacated = true;
        }
        s.window_open = false;
      }
    }
  }
  if (phantoms == 0 && !vacated) {
    return;
  }
  // As begin_blocking(): a phantom registers as a sleeper does. Without
  // one, a sleeper (perhaps standing aside for the guest, which no longer
  // fills the pool) comes for the work waiting.
  heavy_fence();
  for (phantoms = std::max<std::size_t>(phantoms, 1); phantoms > 0 && any_work_visible();
       --phantoms) {
    wake_one_sleeper();
  }
}

void pool_core::grow_if_starved() noexcept {
  bool grow = false;
  {
    std::lock_guard lock(cold_->idle_mutex);
    // Work waits and nobody is free for it: no parked worker, nobody
    // searching (a worker just added searches until it takes work), no
    // phantom about to bring a stand-in. Two looks in a row (a
    // growth_interval apart) before the first growth, so a worker about to
    // take the work is not raced; then one worker a look while it lasts.
    const bool starved = size() < max_workers() && cold_->idle.empty() && cold_->deficit == 0 &&
                         census_.load(std::memory_order_seq_cst).searchers() == 0 &&
                         !exit_.load(std::memory_order_relaxed) && any_work_visible();
    grow = starved && cold_->starved_last_look;
    cold_->starved_last_look = starved;
    if (grow) {
      size_.store(size() + 1, std::memory_order_relaxed);
    }
  }
  if (grow) {
    add_workers(1);
  }
}

}  // namespace fjord::detail
