#include "fjord/detail/timer_service.hpp"

#include <pthread.h>

#include "fjord/detail/fork_generation.hpp"
#include "fjord/detail/trace_point.hpp"

#include <algorithm>
#include <atomic>
#include <mutex>
#include <new>
#include <thread>
#include <utility>

namespace fjord::detail {

namespace {

std::atomic<timer_service*> service{nullptr};
// Constant-initialised; made anew in the child of a fork(), where a thread
// that no longer exists may hold it.
constinit std::mutex creation_mutex;
bool fork_handler_registered = false;  // guarded by creation_mutex

void forget_in_child() {
  // The timer thread does not exist in the child: the next sleep makes a
  // new service (the old one is leaked, with whatever it held).
  service.store(nullptr, std::memory_order_relaxed);
  ::new (static_cast<void*>(&creation_mutex)) std::mutex;
}

}  // namespace

timer_service& timer_service::instance() {
  if (timer_service* s = service.load(std::memory_order_acquire)) [[likely]] {
    return *s;
  }
  std::lock_guard lock(creation_mutex);
  if (timer_service* s = service.load(std::memory_order_relaxed)) {
    return *s;
  }
  if (!fork_handler_registered) {
    fork_handler_registered = true;
    on_fork_child(&forget_in_child);
  }
  auto* s = new timer_service;  // never destroyed: sleeps may outlive main
  service.store(s, std::memory_order_release);
  return *s;
}

timer_service::timer_service() {
  std::thread t([this] { run(); });
  pthread_setname_np(t.native_handle(), "fjord-timer");
  t.detach();  // the service is immortal, so is its thread
}

bool timer_service::arm(entry& e) {
  std::lock_guard lock(mutex_);
  if (e.status == entry::state::canceled) {
    return false;
  }
  push(e);
  e.status = entry::state::armed;
  if (e.heap_index == 0) {
    changed_.notify_one();  // a new earliest deadline
  }
  return true;
}

void timer_service::cancel(entry& e) noexcept {
  if (e.fork_generation != fork_generation()) {
    return;  // armed in the parent of a fork(): nothing here knows it
  }
  {
    std::lock_guard lock(mutex_);
    if (e.status == entry::state::arming) {
      e.status = entry::state::canceled;
      return;  // arm() will see it and not suspend
    }
    if (e.status != entry::state::armed) {
      return;  // already fired: the timer thread wakes it
    }
    remove(e.heap_index);
    e.status = entry::state::canceled;
  }
  // Outside the lock. Goes to the coroutine's pool or sync_wait thread,
  // not inline here: this runs inside request_stop().
  e.waiter.wake();
}

bool timer_service::disarm(entry& e) noexcept {
  if (e.fork_generation != fork_generation()) {
    return false;  // armed in the parent of a fork(): nothing here knows it
  }
  std::lock_guard lock(mutex_);
  const bool armed = e.status == entry::state::armed;
  if (armed) {
    remove(e.heap_index);
  }
  e.status = entry::state::canceled;
  return armed;
}

bool timer_service::rearm(entry& e, clock::time_point deadline) {
  std::lock_guard lock(mutex_);
  if (e.status != entry::state::fired) {
    return false;  // disarmed while it fired
  }
  e.deadline = deadline;
  push(e);
  e.status = entry::state::armed;
  if (e.heap_index == 0) {
    changed_.notify_one();
  }
  return true;
}

std::size_t timer_service::pending() const {
  std::lock_guard lock(mutex_);
  return heap_.size();
}

void timer_service::run() noexcept {
  std::vector<entry*> due;
  std::unique_lock lock(mutex_);
  while (true) {
    if (heap_.empty()) {
      changed_.wait(lock);
      continue;
    }
    const clock::time_point now = clock::now();
    while (!heap_.empty() && heap_[0]->deadline <= now) {
      entry* e = heap_[0];
      remove(0);
      e->status = entry::state::fired;
      if (e->on_due == nullptr || e->on_due(*e)) {
        due.push_back(e);
      }
    }
    if (!due.empty()) {
      lock.unlock();
      for (entry* e : due) {
        trace_point(trace_kind::timer_fire, 0, trace_address(e));
        if (e->on_fire != nullptr) {
          e->on_fire(*e);  // e may be gone after this
        } else {
          e->waiter.wake();  // e may be gone after this
        }
      }
      due.clear();
      lock.lock();
      continue;
    }
    // Capped: some libraries mishandle waits until time_point::max().
    // A copy: the entry may be canceled and freed while we wait.
    const clock::time_point next = std::min(heap_[0]->deadline, now + std::chrono::hours(1));
    changed_.wait_until(lock, next);
  }
}

void timer_service::push(entry& e) {
  heap_.push_back(&e);
  e.heap_index = heap_.size() - 1;
  sift_up(e.heap_index);
}

void timer_service::remove(std::size_t i) noexcept {
  entry* last = heap_.back();
  heap_.pop_back();
  if (i == heap_.size()) {
    return;
  }
  place(i, last);
  sift_up(i);
  sift_down(last->heap_index);
}

void timer_service::sift_up(std::size_t i) noexcept {
  entry* e = heap_[i];
  while (i > 0) {
    const std::size_t parent = (i - 1) / 2;
    if (heap_[parent]->deadline <= e->deadline) {
      break;
    }
    place(i, heap_[parent]);
    i = parent;
  }
  place(i, e);
}

void timer_service::sift_down(std::size_t i) noexcept {
  entry* e = heap_[i];
  const std::size_t n = heap_.size();
  while (true) {
    std::size_t child = 2 * i + 1;
    if (child >= n) {
      break;
    }
    if (child + 1 < n && heap_[child + 1]->deadline < heap_[child]->deadline) {
      ++child;
    }
    if (e->deadline <= heap_[child]->deadline) {
      break;
    }
    place(i, heap_[child]);
    i = child;
  }
  place(i, e);
}

}  // namespace fjord::detail
