#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <mutex>

#include "fjord/detail/chrono.hpp"
#include "fjord/detail/futex_mutex.hpp"
#include "fjord/detail/job.hpp"

namespace fjord::detail {

// The threads fjord::blocking runs its calls on, apart from every pool's
// workers: a thread is made when a call finds none idle (up to a limit,
// beyond which calls queue), and an idle thread ends after keep_alive
// (tokio's spawn_blocking pool, libcsp's block). One per process; made
// anew in the child of a fork().
//
// A call goes straight to the idle thread that went idle last, through
// that thread's own slot and futex word: one wake-up per call, no shared
// condition variable for the woken thread to queue on, and the threads
// idle longest are the ones whose keep-alive runs out, so under a steady
// load the pool shrinks to what the load needs (a condition variable wakes
// idle threads in turn, which keeps every one of them alive).
class blocking_pool {
 public:
  static blocking_pool& instance();

  // Runs j on one of the threads. Throws std::system_error when no thread
  // is running and none can be made.
  void submit(job* j);

  // fjord::set_blocking_limits.
  void set_limits(std::size_t max_threads, std::chrono::nanoseconds keep_alive);

  std::size_t threads() const;

 private:
  // An idle thread's place in the idle list, on that thread's stack.
  struct idle_slot {
    // The futex the thread sleeps on: 0 asleep, 1 look again (a call was
    // handed over, or the limits changed). Written under mutex_.
    std::atomic<std::uint32_t> word{0};
    // The call handed over. Set under mutex_ while the slot is listed (and
    // unlisted in the same critical section), taken by its thread.
    std::atomic<job*> handed{nullptr};
    idle_slot* newer = nullptr;  // guarded: the idle list, newest first
    idle_slot* older = nullptr;
  };

  blocking_pool() = default;
  static void forget_in_child() noexcept;
  void thread_main(job* first) noexcept;
  // The thread's next call after one ended, or nullptr when it is to end
  // (its place given back). Called and returns with lock held.
  job* next_call(idle_slot& self, std::unique_lock<futex_mutex>& lock) noexcept;
  // Under lock: j to the newest idle thread, if any, waking it after the
  // unlock. false (lock still held) when no thread is idle.
  bool hand_to_idle(job* j, std::unique_lock<futex_mutex>& lock) noexcept;
  void enqueue(job* j) noexcept;       // under mutex_
  void unlist(idle_slot& s) noexcept;  // under mutex_
  // A detached thread for a place already counted in threads_, starting
  // with first; false when the system refuses one (the place not given back).
  bool start_thread(job* first) noexcept;

  mutable futex_mutex mutex_;
  job* head_ = nullptr;  // guarded: calls waiting for a thread, oldest first
  job* tail_ = nullptr;
  idle_slot* idle_ = nullptr;  // guarded: the idle thread that went idle last
  std::size_t threads_ = 0;    // guarded
  std::size_t max_threads_ = 512;
  std::chrono::nanoseconds keep_alive_ = std::chrono::seconds(10);
};

}  // namespace fjord::detail
