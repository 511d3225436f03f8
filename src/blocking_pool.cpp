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
  std::unique_lock lock(mutex_);
  if (hand_to_idle(j, lock)) {
    return;
  }
  if (threads_ >= max_threads_) {
    enqueue(j);  // the next thread to finish a call takes it
    return;
  }
  ++threads_;
  lock.unlock();
  if (start_thread(j)) {
    return;
  }
  lock.lock();
  --threads_;
  if (hand_to_idle(j, lock)) {
    return;
  }
  if (threads_ != 0) {
    enqueue(j);  // busy threads look at the queue before they go idle
    return;
  }
  throw std::system_error(std::make_error_code(std::errc::resource_unavailable_try_again),
                          "fjord::blocking: no blocking thread is running and none can be made");
}

bool blocking_pool::hand_to_idle(job* j, std::unique_lock<futex_mutex>& lock) noexcept {
  idle_slot* s = idle_;
  if (s == nullptr) {
    return false;
  }
  unlist(*s);
  // Release: the thread that takes j (with acquire, maybe without the
  // lock) sees what the submitter wrote into the call.
  s->handed.store(j, std::memory_order_release);
  s->word.store(1, std::memory_order_relaxed);
  lock.unlock();
  // After the unlock, so the woken thread does not find the lock held. The
  // slot may be gone by now (its thread saw the call on a spurious wake-up,
  // ran it and ended): a wake on a dead address wakes nobody (futex.hpp).
  futex_wake_one(&s->word);
  return true;
}

void blocking_pool::enqueue(job* j) noexcept {
  j->next().store(nullptr, std::memory_order_relaxed);
  if (tail_ == nullptr) {
    head_ = j;
  } else {
    tail_->next().store(j, std::memory_order_relaxed);
  }
  tail_ = j;
}

void blocking_pool::unlist(idle_slot& s) noexcept {
  if (s.newer == nullptr) {
    idle_ = s.older;
  } else {
    s.newer->older = s.older;
  }
  if (s.older != nullptr) {
    s.older->newer = s.newer;
  }
  s.newer = nullptr;
  s.older = nullptr;
}

bool blocking_pool::start_thread(job* first) noexcept {
  try {
    std::thread([this, first] { thread_main(first); }).detach();
    return true;
  } catch (...) {
    return false;
  }
}

void blocking_pool::thread_main(job* first) noexcept {
  // Its own name, not the name of the worker that started it (profilers,
  // top -H and the trace tell the two apart).
  ::pthread_setname_np(::pthread_self(), "fjord-blocking");
  idle_slot self;
  std::unique_lock lock(mutex_, std::defer_lock);
  for (job* j = first; j != nullptr;) {
    run_job(j);
    lock.lock();
    j = next_call(self, lock);
    lock.unlock();
  }
}

job* blocking_pool::next_call(idle_slot& self, std::unique_lock<futex_mutex>& lock) noexcept {
  if (job* j = head_; j != nullptr) {
    head_ = j->next().load(std::memory_order_relaxed);
    if (head_ == nullptr) {
      tail_ = nullptr;
    }
    return j;
  }
  // The queue is empty, and stays so while any thread is idle (submit hands
  // calls to idle threads first): wait in the idle list, newest first.
  self.older = idle_;
  if (idle_ != nullptr) {
    idle_->newer = &self;
  }
  idle_ = &self;
  const auto idle_since = std::chrono::steady_clock::now();
  while (true) {
    if (job* j = self.handed.exchange(nullptr, std::memory_order_acquire)) {
      return j;  // submit unlisted us
    }
    // Re-read each time: set_limits may change both and wake us.
    const auto left = idle_since + keep_alive_ - std::chrono::steady_clock::now();
    if (threads_ > max_threads_ || left <= std::chrono::nanoseconds::zero()) {
      unlist(self);
      --threads_;
      return nullptr;
    }
    self.word.store(0, std::memory_order_relaxed);
    lock.unlock();
    // A call handed over meanwhile set the word to 1 first (under the
    // lock we just left), so the wait returns at once: no lost wake-up.
    futex_wait_for(&self.word, 0, left);
    if (job* j = self.handed.exchange(nullptr, std::memory_order_acquire)) {
      lock.lock();  // the caller expects it held
      return j;
    }
    lock.lock();
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
  // Capped at a year: a wait much longer overflows the clock.
  keep_alive_ = std::min<std::chrono::nanoseconds>(keep_alive, std::chrono::hours(24 * 365));
  // Idle threads look again at both (those above a lowered limit end). Woken
  // under the lock: the slots stay listed, so their threads are still there.
  for (idle_slot* s = idle_; s != nullptr; s = s->older) {
    s->word.store(1, std::memory_order_relaxed);
    futex_wake_one(&s->word);
  }
  // A raised limit starts threads for the calls that queued at the old one
  // (none are queued while a thread is idle). If the system refuses a
  // thread, the calls stay queued for the running ones.
  while (head_ != nullptr && threads_ < max_threads_) {
    job* j = head_;
    head_ = j->next().load(std::memory_order_relaxed);
    if (head_ == nullptr) {
      tail_ = nullptr;
    }
    ++threads_;
    lock.unlock();
    const bool started = start_thread(j);
    lock.lock();
    if (!started) {
      --threads_;
      // Back at the head, in order, for the running threads.
      j->next().store(head_, std::memory_order_relaxed);
      head_ = j;
      if (tail_ == nullptr) {
        tail_ = j;
      }
      return;
    }
  }
}

std::size_t blocking_pool::threads() const {
  std::lock_guard lock(mutex_);
  return threads_;
}

}  // namespace fjord::detail
