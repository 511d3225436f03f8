#pragma once

#include <atomic>
#include <cstdint>

#include "fjord/detail/config.hpp"
#include "fjord/detail/job.hpp"

namespace fjord::detail {

class sync_wait_loop;

// The innermost sync_wait loop running on this thread (or none). Inline and
// initial-exec, as current_worker: a task_group wait hides it once per
// wait, so reading and writing it must cost one fs-relative access.
__attribute__((tls_model(
    "initial-exec"))) inline constinit thread_local sync_wait_loop* innermost_sync_wait_loop =
    nullptr;

// What a thread blocked in sync_wait waits on: the end of its task, and the
// coroutines of that task that suspended while running on this thread (a
// sleep, an async primitive) and are woken again. They come back here, to
// the thread they came from, instead of to some pool (which a plain thread
// does not have, and which may not exist any more during static
// destruction).
//
// Lifetime: the loop lives in sync_wait's stack frame and is gone the
// moment run() returns, while other threads may still be posting to it. So
// a poster's last touch is one atomic increment of `events_` (after its
// push), and run() returns only once it has taken as many jobs as posters
// have signalled, and the task has signalled its end (finish(), also a last
// touch). Each poster's job belongs to the task, so the task cannot end
// before the loop took it. The futex word is `events_` itself, and a wake
// on it after the loop is gone is harmless (futex.hpp).
class sync_wait_loop {
 public:
  // events_: a count of signalled posts in the low 29 bits, wrapping
  // within them (never carrying into the flags), the task's end, whether
  // the loop's thread sleeps (or is about to), and whether it sleeps in the
  // reactor as its poller (then a signal interrupts the reactor instead of
  // waking the futex word).
  static constexpr std::uint32_t done_bit = 1u << 31;
  static constexpr std::uint32_t sleeping_bit = 1u << 30;
  static constexpr std::uint32_t polling_bit = 1u << 29;
  static constexpr std::uint32_t count_mask = polling_bit - 1;

  sync_wait_loop() noexcept = default;
  // For tests: as if `posts` posts had been signalled and run already.
  explicit sync_wait_loop(std::uint32_t posts) noexcept
      : events_(posts & count_mask), taken_(posts & count_mask) {}
  sync_wait_loop(const sync_wait_loop&) = delete;
  sync_wait_loop& operator=(const sync_wait_loop&) = delete;

  // Any thread: j runs on the loop's thread.
  void post(job* j) noexcept;
  // The task has ended (its root's final step; any thread).
  void finish() noexcept;
  // True once finish() was called: nothing to wait for.
  bool finished() const noexcept {
    return (events_.load(std::memory_order_acquire) & done_bit) != 0;
  }
  // The loop's thread: runs posted jobs until the task has ended and every
  // poster is done with the loop.
  void run() noexcept;

  // The innermost loop running on this thread (nested sync_waits nest).
  static sync_wait_loop* current() noexcept { return innermost_sync_wait_loop; }
  class scope {  // makes a loop (or none) current for a while
   public:
    explicit scope(sync_wait_loop* loop) noexcept : outer_(innermost_sync_wait_loop) {
      innermost_sync_wait_loop = loop;
    }
    ~scope() { innermost_sync_wait_loop = outer_; }
    scope(const scope&) = delete;
    scope& operator=(const scope&) = delete;

   private:
    sync_wait_loop* outer_;
  };

 private:
  void signal(bool done) noexcept;

  std::atomic<job*> posted_{nullptr};     // a LIFO of posted jobs
  std::atomic<std::uint32_t> events_{0};  // posts signalled, plus the two bits
  std::uint32_t taken_ = 0;               // jobs run (the loop's thread only)
};

// Runs j, a job of some other computation, on a thread where a sync_wait
// may be running: hides that sync_wait's loop from it, so a coroutine of
// j's that parks goes back to its pool, not to a loop that ends with a task
// it is not part of. Used where join runs jobs its first closure pushed;
// help_until hides the loop for its whole wait; the main loop never has one.
FJORD_NOINLINE void run_unrelated_job(job* j) noexcept;

}  // namespace fjord::detail
