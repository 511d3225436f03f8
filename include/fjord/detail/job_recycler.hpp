#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>

#include "fjord/detail/config.hpp"
#include "fjord/detail/job_heap.hpp"

namespace fjord::detail {

// Job blocks for threads that are not workers of the pool (foreign posts and
// task_group children). With plain malloc, such a block is allocated on one
// thread and freed on another, so the producer's tcache never refills and
// both sides take glibc's slow paths (callgrind: ~360 instructions a job).
// Here a worker that runs the job pushes its block on the pool's stack for
// that size class (a Treiber stack, Treiber 1986); a producer that runs dry
// takes the whole stack with one exchange into a thread-local cache, so pops
// never race and ABA cannot arise.
//
// The blocks themselves are plain operator new memory, so a thread's cache
// never needs the pool: it is freed when the thread exits or moves on to
// another pool's recycler. The pool frees what is left on its stacks when it
// is destroyed, after every job has run.
class job_recycler {
 public:
  job_recycler() noexcept;
  ~job_recycler();
  job_recycler(const job_recycler&) = delete;
  job_recycler& operator=(const job_recycler&) = delete;

  // Any thread. Falls back to job_heap::allocate(nullptr, ...) for large or
  // over-aligned requests.
  void* allocate(std::size_t size, std::size_t align);

  // Any thread (job_heap::deallocate calls it for recycled blocks).
  void give_back(void* header, std::size_t cls) noexcept;

 private:
  using block = job_heap::block;

  const std::uint64_t id_;  // distinguishes recyclers in the thread caches
  alignas(false_sharing_range) std::array<std::atomic<block*>, job_heap::class_count> returned_{};
};

}  // namespace fjord::detail
