#pragma once

#include <condition_variable>
#include <cstddef>
#include <mutex>
#include <vector>

#include "fjord/detail/chrono.hpp"
#include "fjord/detail/fork_generation.hpp"
#include "fjord/detail/resume_job.hpp"

namespace fjord::detail {

// One thread for the whole process keeps the sleeping coroutines in a binary
// min-heap ordered by deadline and wakes each at its time: no thread per
// timer. Woken coroutines go back to the pool they slept on (or, if they were
// not on a pool, to fjord::default_pool(): user code never runs on the timer
// thread, and never inside the request_stop() that cancels a sleep).
// Every state change of an entry happens under the service's mutex, which is
// what makes expiry and cancellation race-free: whoever takes an armed entry
// out of the heap first (the timer thread, or a stop callback) is the one
// that wakes the coroutine.
class timer_service {
 public:
  using clock = std::chrono::steady_clock;

  struct entry {
    enum class state : unsigned char { arming, armed, fired, canceled };

    clock::time_point deadline;
    waiting_coroutine waiter;
    std::size_t heap_index = 0;
    state status = state::arming;  // guarded by the service's mutex
    // In the child of a fork() the entry's service (and its thread) is gone:
    // a stop requested there must leave the copied entry alone.
    unsigned fork_generation = detail::fork_generation();
    // Optional hooks for entries that do more than wake `waiter` (select
    // timeouts, timer channels, callback timers). on_due runs on the timer
    // thread under the service's mutex when the deadline comes (so disarm()
    // never races with it): false means the entry fires no further. on_fire
    // then runs outside the mutex, instead of waiter.wake(); it must be the
    // entry's last touch by the timer thread, as wake() is.
    bool (*on_due)(entry&) noexcept = nullptr;
    void (*on_fire)(entry&) noexcept = nullptr;
  };

  // Created on first use, never destroyed: coroutines may sleep during
  // static destruction.
  static timer_service& instance();

  // Puts e (its coroutine waiting) in the heap. Returns false, without arming,
  // when e was canceled before it could be armed: do not suspend then.
  bool arm(entry& e);

  // From a stop callback: takes e out of the heap and wakes its coroutine if
  // it is still waiting; marks it canceled if it is not armed yet.
  void cancel(entry& e) noexcept;

  // Takes e out of the heap if it is armed, without waking anything; true
  // if it was armed (so it never fires). Afterwards on_due will not run for
  // e, and rearm() refuses it: an entry being fired right now (on_fire
  // running) stays fired for good.
  bool disarm(entry& e) noexcept;

  // From on_fire (a periodic entry): arms e again for `deadline`, unless
  // disarm() came first; false then.
  bool rearm(entry& e, clock::time_point deadline);

  // Entries in the heap (for tests).
  std::size_t pending() const;

 private:
  timer_service();
  void run() noexcept;
  void push(entry& e);
  void remove(std::size_t i) noexcept;
  void sift_up(std::size_t i) noexcept;
  void sift_down(std::size_t i) noexcept;
  void place(std::size_t i, entry* e) noexcept {
    heap_[i] = e;
    e->heap_index = i;
  }

  mutable std::mutex mutex_;
  std::condition_variable changed_;
  std::vector<entry*> heap_;
};

}  // namespace fjord::detail
