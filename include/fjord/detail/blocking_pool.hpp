#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <mutex>

#include "fjord/detail/chrono.hpp"
#include "fjord/detail/futex_mutex.hpp"
#include "fjord/detail/job.hpp"

namespace fjord::detail {

// A call for the blocking pool: the job that runs it, and how to end it
// with an error instead if it can never run (no thread is running and none
// can be made).
struct blocking_call : job {
  using fail_fn = void (*)(blocking_call*, std::exception_ptr) noexcept;
  blocking_call(execute_fn run, fail_fn fail_with) noexcept : job(run), fail(fail_with) {}
  fail_fn fail;
};

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

  // Runs c on one of the threads. Throws std::system_error when no thread
  // is running and none can be made (and fails the calls queued meanwhile
  // with the same error).
  void submit(blocking_call* c);

  // fjord::set_blocking_limits.
  void set_limits(std::size_t max_threads, std::chrono::nanoseconds keep_alive);

  std::size_t threads() const;

  // For a call that forked and returned in the child, where the calling
  // thread is the only one: ends the child with _exit(0) before anything
  // wakes the parent's coroutine there.
  [[noreturn]] static void end_forked_child() noexcept;

 private:
  // An idle thread's place in the idle list, on that thread's stack.
  struct idle_slot {
    // The futex the thread sleeps on: 0 asleep, 1 look again (a call was
    // handed over, or the limits changed). Written under mutex_.
    std::atomic<std::uint32_t> word{0};
    // The call handed over. Set under mutex_ while the slot is listed (and
    // unlisted in the same critical section), taken by its thread.
    std::atomic<blocking_call*> handed{nullptr};
    idle_slot* newer = nullptr;  // guarded: the idle list, newest first
    idle_slot* older = nullptr;
  };

  blocking_pool() = default;
  static void forget_in_child() noexcept;
  // first nullptr: the thread starts at the queue.
  void thread_main(blocking_call* first) noexcept;
  // The thread's next call after one ended, or nullptr when it is to end
  // (its place given back). Called and returns with lock held.
  blocking_call* next_call(idle_slot& self, std::unique_lock<futex_mutex>& lock) noexcept;
  // Under lock: c to the newest idle thread, if any, waking it after the
  // unlock. false (lock still held) when no thread is idle.
  bool hand_to_idle(blocking_call* c, std::unique_lock<futex_mutex>& lock) noexcept;
  void enqueue(blocking_call* c) noexcept;  // under mutex_
  blocking_call* take_queue() noexcept;     // under mutex_: the whole queue
  // c and the calls linked after it end with the no-thread error.
  static void fail_all(blocking_call* c) noexcept;
  void unlist(idle_slot& s) noexcept;  // under mutex_
  // A detached thread for a place already counted in threads_, starting
  // with first; false when the system refuses one (the place not given back).
  bool start_thread(blocking_call* first) noexcept;

  mutable futex_mutex mutex_;
  blocking_call* head_ = nullptr;  // guarded: calls waiting for a thread, oldest first
  blocking_call* tail_ = nullptr;
  std::size_t queued_ = 0;     // guarded: calls in the queue
  idle_slot* idle_ = nullptr;  // guarded: the idle thread that went idle last
  std::size_t threads_ = 0;    // guarded
  std::size_t max_threads_ = 512;
  std::chrono::nanoseconds keep_alive_ = std::chrono::seconds(10);
};

}  // namespace fjord::detail
