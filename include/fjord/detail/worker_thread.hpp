#pragma once

#include <pthread.h>

#include <cstddef>
#include <cstdint>

namespace fjord::detail {

// Worker threads: a stack of a chosen size with a guard region below it, and
// an overflow into that region reported as what it is. A SIGSEGV handler
// (installed once, on an alternate signal stack per worker) prints
// "fjord: stack overflow on worker thread <name> ..." and aborts when the
// faulting address lies in the guard region of the thread that faulted;
// any other fault goes to the handler that was there before (or the
// default action), unchanged. Under AddressSanitizer, which reports stack
// overflows itself, fjord installs nothing.

// The guard region's size: large enough that one big frame cannot jump it.
inline constexpr std::size_t stack_guard_size = std::size_t{64} << 10;

// Starts `entry(arg)` on a new thread with a stack of stack_size bytes.
// Returns 0 or the error pthread_create reported.
int start_worker_thread(pthread_t& thread, std::size_t stack_size, void (*entry)(void*),
                        void* arg) noexcept;

// Runs on the worker thread for as long as it lives: records the stack's
// bounds and sets up the alternate signal stack the overflow report runs on.
class worker_thread_scope {
 public:
  explicit worker_thread_scope(const char* name) noexcept;
  ~worker_thread_scope();
  worker_thread_scope(const worker_thread_scope&) = delete;
  worker_thread_scope& operator=(const worker_thread_scope&) = delete;

 private:
  void* alternate_stack_ = nullptr;
};

// While a caller runs a call on a pool's guest stack [low, high)
// (pool_core::call_as_guest): an overflow into the guard below low is
// reported as a worker's is, naming the stack `name`. The thread gets an
// alternate signal stack for the report the first time, unless it has one
// (kept until the thread exits).
class borrowed_stack_scope {
 public:
  borrowed_stack_scope(std::uintptr_t low, std::uintptr_t high, const char* name) noexcept;
  ~borrowed_stack_scope();
  borrowed_stack_scope(const borrowed_stack_scope&) = delete;
  borrowed_stack_scope& operator=(const borrowed_stack_scope&) = delete;

 private:
  std::uintptr_t saved_low_ = 0;
  std::uintptr_t saved_high_ = 0;
  char saved_name_[16] = {};
};

// Bytes of the calling worker thread's stack in use below its top, and its
// size; both 0 on a thread that is not a fjord worker.
std::size_t stack_in_use() noexcept;
std::size_t stack_size_of_this_thread() noexcept;
// The address of the top of the calling worker thread's stack (it grows
// down from there), or 0.
std::uintptr_t stack_top_of_this_thread() noexcept;

}  // namespace fjord::detail
