// Dynamic scaling: the bounds, growth, shrinking after an idle timeout, the
// replacement of workers blocked without saying so, and the monitor thread
// that watches for the last two. The protocol is argued in
// docs/scheduler.md, "Scaling"; it reuses the compensation of "Blocking".

#include <pthread.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <ctime>
#include <mutex>
#include <stdexcept>
#include <string>
#include <system_error>

#include "fjord/detail/pool_core.hpp"
#include "fjord/detail/pool_core_cold.hpp"
#include "fjord/pool_options.hpp"

namespace fjord::detail {

namespace {

using std::chrono::steady_clock;

constexpr std::chrono::nanoseconds growth_interval = std::chrono::milliseconds(1);
constexpr std::chrono::nanoseconds min_interval = std::chrono::microseconds(100);
constexpr std::chrono::nanoseconds cpu_check_interval = std::chrono::seconds(1);

bool thread_cpu_time(clockid_t clock, std::chrono::nanoseconds& out) noexcept {
  timespec t{};
  if (::clock_gettime(clock, &t) != 0) {
    return false;
  }
  out = std::chrono::seconds(t.tv_sec) + std::chrono::nanoseconds(t.tv_nsec);
  return true;
}

}  // namespace

std::size_t pool_core::min_workers() const noexcept {
  std::lock_guard lock(cold_->idle_mutex);
  return cold_->min_workers;
}

std::size_t pool_core::max_workers() const noexcept {
  std::lock_guard lock(cold_->idle_mutex);
  return cold_->max_workers;
}

void pool_core::resize(std::size_t min, std::size_t max) {
  if (min == 0 || min > max || max > max_threads_) {
    throw std::invalid_argument(
        "fjord::pool::resize: the bounds must satisfy 1 <= min <= max <= " +
        std::to_string(max_threads_) +
        " (the pool's thread slots: max_workers at construction + max_spare_threads), got min " +
        std::to_string(min) + ", max " + std::to_string(max));
  }
  if (is_shut_down()) {
    throw_shutdown();
  }
  set_bounds(min, max, /*follow_cpus=*/false);
  if (min < max) {
    start_monitor();  // a fixed pool that now scales
  }
}

void pool_core::set_bounds(std::size_t min, std::size_t max, bool follow_cpus) noexcept {
  std::size_t added = 0;
  bool shrunk = false;
  {
    std::lock_guard lock(cold_->idle_mutex);
    cold_->min_workers = min;
    cold_->max_workers = max;
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
      update_surplus_locked();
      shrunk = true;
    }
    wake_monitor_locked();  // its interval may have changed
  }
  add_workers(added);
  if (shrunk) {
    // Idle workers see the surplus at the top of their loop and retire;
    // busy ones retire at their next job boundary.
    wake_all();
  }
}

bool pool_core::retire_idle_locked(worker& w) noexcept {
  if (size() <= cold_->min_workers || cold_->running <= cold_->min_workers ||
      drained_.load(std::memory_order_relaxed)) {
    return false;
  }
  size_.store(size() - 1, std::memory_order_relaxed);
  --cold_->running;
  w.retired = true;
  cold_->retired.push_back(&w);
  update_surplus_locked();
  // From idle in the main loop to retired: quiescence and the end rule
  // count both, so neither changes.
  return true;
}

void pool_core::wake_monitor_locked() noexcept {
  if (cold_->monitor_parked) {
    cold_->monitor_parked = false;
    cold_->monitor_wake.notify_one();
  }
}

void pool_core::start_monitor() {
  std::lock_guard once(cold_->shut_down_mutex);
  if (cold_->monitor_started || cold_->joined) {
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
  std::lock_guard lock(cold_->idle_mutex);
  cold_->monitor_started = true;
}

void pool_core::stop_monitor() noexcept {
  // Under shut_down_mutex (shut_down()), like start_monitor().
  {
    std::lock_guard lock(cold_->idle_mutex);
    if (!cold_->monitor_started) {
      return;
    }
    cold_->monitor_stop = true;
    cold_->monitor_wake.notify_one();
  }
  pthread_join(cold_->monitor_thread, nullptr);
  std::lock_guard lock(cold_->idle_mutex);
  cold_->monitor_started = false;
}

std::chrono::nanoseconds pool_core::monitor_interval_locked() const noexcept {
  if (cold_->replace_blocked_after.count() != 0) {
    return std::clamp(cold_->replace_blocked_after / 2, min_interval, growth_interval);
  }
  if (cold_->min_workers < cold_->max_workers) {
    return growth_interval;
  }
  if (cold_->follow_cpus) {
    return cpu_check_interval;
  }
  return std::chrono::nanoseconds::zero();  // nothing to watch
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
      cold_->monitor_wake.wait(lock,
                               [this] { return !cold_->monitor_parked || cold_->monitor_stop; });
      continue;
    }
    if (cold_->monitor_wake.wait_for(lock, interval, [this] { return cold_->monitor_stop; })) {
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
    // follows, as it was made to (no bound was given).
    const std::size_t cpus = std::min(available_cpus(), max_threads_);
    if (cpus != size()) {
      set_bounds(cpus, cpus, /*follow_cpus=*/true);
    }
  }
  replace_blocked_workers(now);
  grow_if_starved();
}

void pool_core::replace_blocked_workers(steady_clock::time_point now) noexcept {
  if (cold_->replace_blocked_after.count() == 0) {
    return;
  }
  {
    // The CPU clocks of threads made since the last look (threads[i] is
    // worker i's thread; made threads never go before the pool ends).
    std::lock_guard lock(cold_->threads_mutex);
    for (std::size_t i = cold_->samples.size(); i < cold_->threads.size(); ++i) {
      auto& s = cold_->samples.emplace_back();
      s.has_clock = pthread_getcpuclockid(cold_->threads[i], &s.cpu_clock) == 0;
    }
  }
  std::size_t phantoms = 0;
  {
    std::lock_guard lock(cold_->idle_mutex);
    const bool work_waits = any_work_visible();
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
        s.cpu_known = false;
        continue;
      }
      // Inside one job since the last look: its CPU time says whether it
      // computes or waits (one system call, only for such threads).
      std::chrono::nanoseconds cpu{0};
      if (!s.has_clock || !thread_cpu_time(s.cpu_clock, cpu)) {
        continue;
      }
      if (!s.cpu_known) {
        s.cpu_known = true;
        s.since = now;
        s.cpu_at_since = cpu;
        continue;
      }
      const auto stuck = now - s.since;
      // Less than half a CPU used in the window: blocked, not computing
      // (a computing job gains nothing from a second thread on its CPU).
      if (work_waits && stuck >= cold_->replace_blocked_after &&
          2 * (cpu - s.cpu_at_since) < stuck) {
        w.presumed_blocked.store(true, std::memory_order_relaxed);
        phantoms += leave_running_locked() ? 1 : 0;
        s.cpu_known = false;
      }
    }
  }
  if (phantoms == 0) {
    return;
  }
  // As begin_blocking(): a phantom registers as a sleeper does.
  heavy_fence();
  for (; phantoms > 0 && any_work_visible(); --phantoms) {
    wake_one_sleeper();
  }
}

void pool_core::grow_if_starved() noexcept {
  bool grow = false;
  {
    std::lock_guard lock(cold_->idle_mutex);
    // Work waits and nobody is free for it: no parked worker, nobody
    // searching, no phantom about to bring a stand-in. Twice in a row (a
    // growth_interval apart), so a worker about to take it is not raced.
    const bool starved = size() < cold_->max_workers && cold_->idle.empty() &&
                         cold_->deficit == 0 &&
                         census_.load(std::memory_order_seq_cst).searchers() == 0 &&
                         !exit_.load(std::memory_order_relaxed) && any_work_visible();
    grow = starved && cold_->starved_last_look;
    cold_->starved_last_look = starved && !grow;
    if (grow) {
      size_.store(size() + 1, std::memory_order_relaxed);
    }
  }
  if (grow) {
    add_workers(1);
  }
}

}  // namespace fjord::detail
