#include "fjord/detail/blocking_pool.hpp"

#include <pthread.h>

#include <algorithm>
#include <atomic>
#include <new>
#include <stdexcept>
#include <string>
#include <system_error>
#include <thread>

#include "fjord/detail/fork_generation.hpp"

namespace fjord::detail {

namespace {

std::atomic<blocking_pool*> the_pool{nullptr};
constinit std::mutex creation_mutex;
bool fork_handler_registered = false;  // guarded by creation_mutex

}  // namespace

void blocking_pool::forget_in_child() noexcept {
  // Its threads do not exist in the child: a new pool (the old one leaks).
  the_pool.store(nullptr, std::memory_order_relaxed);
  ::new (static_cast<void*>(&creation_mutex)) std::mutex;
}

blocking_pool& blocking_pool::instance() {
  if (blocking_pool* p = the_pool.load(std::memory_order_acquire)) [[likely]] {
    return *p;
  }
  std::lock_guard lock(creation_mutex);
  if (blocking_pool* p = the_pool.load(std::memory_order_relaxed)) {
    return *p;
  }
  if (!fork_handler_registered) {
    on_fork_child(&forget_in_child);
    fork_handler_registered = true;
  }
  // Never destroyed: its detached threads may outlive main().
  auto* p = new blocking_pool();
  the_pool.store(p, std::memory_order_release);
  return *p;
}

void blocking_pool::submit(job* j) {
  j->next().store(nullptr, std::memory_order_relaxed);
  std::unique_lock lock(mutex_);
  if (tail_ == nullptr) {
    head_ = j;
  } else {
    tail_->next().store(j, std::memory_order_relaxed);
  }
  tail_ = j;
  ++queued_;
  if (idle_ > wakeups_) {
    ++wakeups_;
    lock.unlock();
    work_.notify_one();
    return;
  }
  if (threads_ >= max_threads_) {
    return;  // queued: the next thread to finish a call takes it
  }
  ++threads_;
  lock.unlock();
  if (start_thread()) {
    return;
  }
  lock.lock();
  if (threads_ != 0 || !take_back(j)) {
    return;  // other threads are running (or one that ended since took it): they run it
  }
  throw std::system_error(std::make_error_code(std::errc::resource_unavailable_try_again),
                          "fjord::blocking: no blocking thread is running and none can be made");
}

bool blocking_pool::start_thread() noexcept {
  try {
    std::thread([this] { thread_main(); }).detach();
    return true;
  } catch (...) {
    const std::lock_guard lock(mutex_);
    --threads_;
    return false;
  }
}

bool blocking_pool::take_back(job* j) noexcept {
  job* prev = nullptr;
  job* k = head_;
  while (k != nullptr && k != j) {
    prev = k;
    k = k->next().load(std::memory_order_relaxed);
  }
  if (k != j) {
    return false;
  }
  job* after = j->next().load(std::memory_order_relaxed);
  if (prev == nullptr) {
    head_ = after;
  } else {
    prev->next().store(after, std::memory_order_relaxed);
  }
  if (tail_ == j) {
    tail_ = prev;
  }
  --queued_;
  return true;
}

void blocking_pool::thread_main() noexcept {
  // Its own name, not the name of the worker that started it (profilers,
  // top -H and the trace tell the two apart).
  ::pthread_setname_np(::pthread_self(), "fjord-blocking");
  std::unique_lock lock(mutex_);
  while (true) {
    if (head_ != nullptr) {
      job* j = head_;
      head_ = j->next().load(std::memory_order_relaxed);
      if (head_ == nullptr) {
        tail_ = nullptr;
      }
      --queued_;
      lock.unlock();
      run_job(j);
      lock.lock();
      continue;
    }
    // Idle: wait for a call, at most keep_alive_ (re-read when set_limits
    // changes it), then end. Above a lowered limit, end at once.
    if (threads_ > max_threads_) {
      --threads_;
      return;
    }
    ++idle_;
    const auto idle_since = std::chrono::steady_clock::now();
    bool woken = false;
    while (true) {
      if (wakeups_ != 0) {
        --wakeups_;
        woken = true;
        break;
      }
      const auto until = idle_since + keep_alive_;
      if (threads_ > max_threads_ || std::chrono::steady_clock::now() >= until) {
        break;  // above a lowered limit, or idle for the keep-alive
      }
      work_.wait_until(lock, until);
    }
    --idle_;
    if (woken || head_ != nullptr) {
      continue;
    }
    --threads_;
    return;
  }
}

void blocking_pool::set_limits(std::size_t max_threads, std::chrono::nanoseconds keep_alive) {
  if (max_threads == 0) {
    throw std::invalid_argument("fjord: the blocking pool needs at least 1 thread, not 0");
  }
  if (keep_alive < std::chrono::nanoseconds::zero()) {
    throw std::invalid_argument("fjord: a negative keep-alive (" +
                                std::to_string(keep_alive.count()) + " ns) for blocking threads");
  }
  std::unique_lock lock(mutex_);
  max_threads_ = max_threads;
  // Capped at a year: a wait_for much longer overflows the clock.
  keep_alive_ = std::min<std::chrono::nanoseconds>(keep_alive, std::chrono::hours(24 * 365));
  work_.notify_all();  // idle threads re-read keep_alive_
  // A raised limit starts threads for the calls that queued at the old
  // one (those not already promised to an idle thread). If the system
  // refuses a thread, the calls stay queued for the running ones.
  const std::size_t waiting = queued_ > wakeups_ ? queued_ - wakeups_ : 0;
  std::size_t start = std::min(waiting, max_threads_ > threads_ ? max_threads_ - threads_ : 0);
  threads_ += start;
  lock.unlock();
  for (; start != 0; --start) {
    if (!start_thread()) {
      lock.lock();
      threads_ -= start - 1;  // start_thread gave back its own
      return;
    }
  }
}

std::size_t blocking_pool::threads() const {
  std::lock_guard lock(mutex_);
  return threads_;
}

std::size_t blocking_pool::idle_threads() const {
  std::lock_guard lock(mutex_);
  return idle_;
}

}  // namespace fjord::detail
