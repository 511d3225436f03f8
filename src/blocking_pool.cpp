#include "fjord/detail/blocking_pool.hpp"

#include <pthread.h>
#include <sched.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <new>
#include <stdexcept>
#include <string>
#include <system_error>
#include <thread>

#include "fjord/detail/fork_generation.hpp"

namespace fjord::detail {

namespace {

constexpr const char* no_thread_message =
    "fjord::blocking: no blocking thread is running and none can be made";
std::atomic<blocking_pool*> the_pool{nullptr};
constinit std::mutex creation_mutex;
bool fork_handler_registered = false;  // guarded by creation_mutex

// A new thread inherits the CPU affinity, scheduling policy and nice value
// of the thread that made it: here whichever worker submitted the call that
// found no idle thread, which may be pinned to one CPU (pool_options::cpus,
// or a worker lending its CPU while it blocks) or set to SCHED_IDLE by a
// background pool's start hook. The blocking threads serve every pool for
// their whole lives, so they take the main thread's instead (its pid is its
// tid): what the process as a whole was given, by taskset or chrt for one.
// Best effort: a setting the system refuses stays inherited (leaving
// SCHED_IDLE, or lowering a nice value, needs CAP_SYS_NICE or RLIMIT_NICE).
// A main thread marked SCHED_RESET_ON_FORK wants the threads made from it
// to drop its policy and a negative nice value: they get SCHED_OTHER and
// nice 0, as a thread it made itself would.
void take_main_thread_placement() noexcept {
  const pid_t main_thread = ::getpid();
  cpu_set_t cpus;
  CPU_ZERO(&cpus);
  if (::sched_getaffinity(main_thread, sizeof cpus, &cpus) == 0) {
    static_cast<void>(::sched_setaffinity(0, sizeof cpus, &cpus));
  }
  sched_param param{};
  int policy = ::sched_getscheduler(main_thread);
  if (policy < 0 || ::sched_getparam(main_thread, &param) != 0) {
    return;
  }
  errno = 0;
  int nice = ::getpriority(PRIO_PROCESS, static_cast<id_t>(main_thread));
  const bool nice_known = errno == 0;
  if ((policy & SCHED_RESET_ON_FORK) != 0) {
    policy = SCHED_OTHER;
    param = sched_param{};
    nice = nice < 0 ? 0 : nice;
  }
  static_cast<void>(::sched_setscheduler(0, policy, &param));
  if (nice_known) {
    static_cast<void>(::setpriority(PRIO_PROCESS, 0, nice));
  }
}

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

void blocking_pool::submit(blocking_call* c) {
  std::unique_lock lock(mutex_);
  if (hand_to_idle(c, lock)) {
    return;
  }
  if (threads_ >= max_threads_) {
    enqueue(c);  // the next thread to finish a call takes it
    return;
  }
  ++threads_;
  // Calls still queued (a start refused earlier left them there) go first:
  // c joins the queue and the new thread starts at its head.
  blocking_call* first = c;
  if (head_ != nullptr) {
    enqueue(c);
    first = nullptr;
  }
  lock.unlock();
  if (start_thread(first)) {
    return;
  }
  lock.lock();
  --threads_;
  if (first != nullptr) {
    if (hand_to_idle(c, lock)) {
      return;
    }
    if (threads_ != 0) {
      // Running threads look at the queue before they go idle; a thread
      // still being started either runs (and looks) or fails (and comes here).
      enqueue(c);
      return;
    }
  } else {
    // c was published in the queue: from there a running thread may have
    // taken (and run) it meanwhile, so it must not fail by a throw here.
    // If nobody is left to run the queue, it fails with the queue, through
    // its fail function, like the other calls stranded there.
    blocking_call* stranded = threads_ == 0 ? take_queue() : nullptr;
    lock.unlock();
    fail_all(stranded);
    return;
  }
  // No thread runs and none is being started: the calls queued meanwhile
  // (by submitters that counted on a start that then failed) would wait
  // forever. They fail with the same error, and so does this one (c was
  // never published, so the throw is its only completion).
  blocking_call* stranded = take_queue();
  lock.unlock();
  fail_all(stranded);
  throw std::system_error(std::make_error_code(std::errc::resource_unavailable_try_again),
                          no_thread_message);
}

blocking_call* blocking_pool::take_queue() noexcept {
  blocking_call* all = head_;
  head_ = nullptr;
  tail_ = nullptr;
  queued_ = 0;
  return all;
}

void blocking_pool::fail_all(blocking_call* c) noexcept {
  if (c == nullptr) {
    return;
  }
  std::exception_ptr error;
  try {
    throw std::system_error(std::make_error_code(std::errc::resource_unavailable_try_again),
                            no_thread_message);
  } catch (...) {
    error = std::current_exception();
  }
  while (c != nullptr) {
    auto* next = static_cast<blocking_call*>(c->next().load(std::memory_order_relaxed));
    c->fail(c, error);  // the last touch: the call may be gone after it
    c = next;
  }
}

bool blocking_pool::hand_to_idle(blocking_call* c, std::unique_lock<futex_mutex>& lock) noexcept {
  idle_slot* s = idle_;
  if (s == nullptr) {
    return false;
  }
  unlist(*s);
  // Release: the thread that takes c (with acquire, maybe without the
  // lock) sees what the submitter wrote into the call.
  s->handed.store(c, std::memory_order_release);
  s->word.store(1, std::memory_order_relaxed);
  lock.unlock();
  // After the unlock, so the woken thread does not find the lock held. The
  // slot may be gone by now (its thread saw the call on a spurious wake-up,
  // ran it and ended): a wake on a dead address wakes nobody (futex.hpp).
  futex_wake_one(&s->word);
  return true;
}

void blocking_pool::enqueue(blocking_call* c) noexcept {
  c->next().store(nullptr, std::memory_order_relaxed);
  if (tail_ == nullptr) {
    head_ = c;
  } else {
    tail_->next().store(c, std::memory_order_relaxed);
  }
  tail_ = c;
  ++queued_;
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

bool blocking_pool::start_thread(blocking_call* first) noexcept {
  try {
    std::thread([this, first] { thread_main(first); }).detach();
    return true;
  } catch (...) {
    return false;
  }
}

void blocking_pool::thread_main(blocking_call* first) noexcept {
  // Its own name, not the name of the worker that started it (profilers,
  // top -H and the trace tell the two apart).
  ::pthread_setname_np(::pthread_self(), "fjord-blocking");
  take_main_thread_placement();
  idle_slot self;
  std::unique_lock lock(mutex_, std::defer_lock);
  blocking_call* c = first;
  if (c == nullptr) {  // started for the queue (by set_limits, or submit behind queued calls)
    lock.lock();
    c = next_call(self, lock);
    lock.unlock();
  }
  while (c != nullptr) {
    run_job(c);
    lock.lock();
    c = next_call(self, lock);
    lock.unlock();
  }
}

blocking_call* blocking_pool::next_call(idle_slot& self,
                                        std::unique_lock<futex_mutex>& lock) noexcept {
  if (blocking_call* c = head_; c != nullptr) {
    head_ = static_cast<blocking_call*>(c->next().load(std::memory_order_relaxed));
    if (head_ == nullptr) {
      tail_ = nullptr;
    }
    --queued_;
    return c;
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
    if (blocking_call* c = self.handed.exchange(nullptr, std::memory_order_acquire)) {
      return c;  // submit unlisted us
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
    if (blocking_call* c = self.handed.exchange(nullptr, std::memory_order_acquire)) {
      lock.lock();  // the caller expects it held
      return c;
    }
    lock.lock();
  }
}

void blocking_pool::end_forked_child() noexcept {
  // The call forked and this is the child's one thread, with no caller to
  // return to: the pool was forgotten there (its lock may have been held by
  // a thread that is gone), and waking the coroutine would run the parent's
  // continuation in the child, or take a lock of its pool held by a thread
  // that is gone. The child ends as POSIX allows after a fork() of a
  // multi-threaded process, with async-signal-safe calls only: no atexit
  // handlers or static destructors, which would touch the state of threads
  // the child does not have.
  ::_exit(0);
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
  // (none are queued while a thread is idle). Each new thread starts at the
  // queue, so the calls keep their order.
  std::size_t start = std::min(queued_, max_threads_ > threads_ ? max_threads_ - threads_ : 0);
  threads_ += start;
  lock.unlock();
  for (; start != 0; --start) {
    if (start_thread(nullptr)) {
      continue;
    }
    // The system refused a thread: the calls stay queued for the threads
    // running, or fail if there are none (as in submit).
    lock.lock();
    threads_ -= start;
    blocking_call* stranded = threads_ == 0 ? take_queue() : nullptr;
    lock.unlock();
    fail_all(stranded);
    return;
  }
}

std::size_t blocking_pool::threads() const {
  std::lock_guard lock(mutex_);
  return threads_;
}

}  // namespace fjord::detail
