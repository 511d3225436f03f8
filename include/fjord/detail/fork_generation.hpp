#pragma once

#include <atomic>

namespace fjord::detail {

// fork() copies only the thread that calls it: in the child, every pool's
// workers and the timer thread are gone. Each object that owns threads
// remembers the generation it was made in; the child of a fork() runs in a
// later one.
extern std::atomic<unsigned> forks_so_far;
inline unsigned fork_generation() noexcept {
  return forks_so_far.load(std::memory_order_relaxed);
}

// Registers fn to run in the child after every later fork(), once the
// generation moved on (and the forking thread's worker was forgotten). The
// first call registers fjord's pthread_atfork handler; every object that
// owns threads calls this (or is made by something that did) before its
// threads exist.
void on_fork_child(void (*fn)()) noexcept;

}  // namespace fjord::detail
