#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "fjord/detail/chrono.hpp"
#include "fjord/detail/config.hpp"

namespace fjord::detail {

struct io_waiter;
class pool_core;

// One registered file descriptor: its two directions, each a slot that is
// empty, holds readiness no waiter has consumed yet, holds the waiter
// waiting on it, or says the registration was closed. The slot is the only
// way to the waiter from the reactor's side, so whoever takes the waiter
// out of it (a readiness event, the waiter's timer, its stop callback,
// close()) is the one that completes it (docs/io.md, "Waiting for an fd").
// Registrations are never freed while the process lives (they are reused,
// with a new generation), so a late event for a closed one only touches a
// slot, never freed memory.
struct io_registration {
  static constexpr std::uintptr_t empty = 0;
  static constexpr std::uintptr_t ready = 1;
  static constexpr std::uintptr_t closed = 2;

  std::atomic<std::uintptr_t> reader{empty};
  std::atomic<std::uintptr_t> writer{empty};
  // Sticky: an event said the peer ended the stream, hung up, failed, or
  // sent urgent data: a short read then no longer means an empty queue.
  // Set before the event's signal, whose release covers it (docs/io.md,
  // "Short reads"). A stale true (a late event of a reused registration)
  // only turns that hint off.
  std::atomic<bool> read_ended{false};
  int fd = -1;
  std::uint32_t index = 0;
  // Bumped when the registration is released: an event carrying an older
  // generation is for an fd closed since, and is dropped.
  std::atomic<std::uint32_t> generation{0};
  unsigned fork_generation = 0;
  io_registration* next_free = nullptr;  // guarded by the reactor's mutex
};

// The process's epoll set (docs/io.md). It has no thread of its own: a
// worker of any pool that would park, while some coroutine waits for an fd,
// parks in poll() instead (one worker at a time, the poller), and busy
// workers poll without waiting between jobs. A worker parked in poll() is
// woken like any parked worker (parker::unpark writes the reactor's
// eventfd). Made on first use; in the child of a fork() a new one is made.
class reactor {
 public:
  // The reactor, made if need be. Throws std::system_error when the epoll
  // set or its eventfd cannot be made.
  static reactor& instance();
  // The reactor if one exists in this process (since the last fork()).
  static reactor* existing() noexcept;

  reactor(const reactor&) = delete;
  reactor& operator=(const reactor&) = delete;

  // Adds fd to the epoll set, edge-triggered for both directions. Throws
  // std::system_error naming the fd when epoll refuses it.
  io_registration& add(int fd);
  // Takes fd out of the epoll set, completes its waiters with `closed`,
  // and releases the registration for reuse. Does not close the fd.
  void remove(io_registration& r) noexcept;
  // remove() on the reactor r belongs to; in the child of a fork() (where r
  // is the parent's, sharing its epoll set) r is only forgotten.
  static void release(io_registration& r) noexcept;
  // Completes r's waiters with `closed` and keeps its slots closed (later
  // waits end at once) until release(): for a socket closing while
  // operations still use its fd.
  static void end_waits(io_registration& r) noexcept;

  // Takes w out of its slot, for its timer or stop callback: true if w was
  // still there (the caller then completes it), false if something else
  // took it first.
  bool take(io_waiter& w) noexcept;

  // Before a waiter is published in a slot / after it was taken out of one
  // (or its publication failed). While any is published, idle workers poll
  // instead of parking on their futex, and busy ones poll between jobs; the
  // first one wakes a parked worker of `home` (or of the default pool) to
  // poll if nobody does.
  void add_waiter(pool_core* home) noexcept;
  void drop_waiter() noexcept { waiters_.fetch_sub(1, std::memory_order_seq_cst); }
  bool has_waiters() const noexcept { return waiters_.load(std::memory_order_seq_cst) != 0; }
  bool has_waiters_relaxed() const noexcept {
    return waiters_.load(std::memory_order_relaxed) != 0;
  }

  // The poller role: one thread at a time waits in epoll and owns the event
  // buffer until release_poller().
  bool try_become_poller() noexcept {
    return !poller_.load(std::memory_order_relaxed) &&
           !poller_.exchange(true, std::memory_order_seq_cst);
  }
  // Dispatches the events the last wait() or poll_now() collected (their
  // coroutines go where waiting_coroutine::wake sends them: on the calling
  // worker's deque when they are of its pool), then gives the role up.
  // Returns how many coroutines it woke.
  std::size_t dispatch_and_release() noexcept;
  bool has_poller() const noexcept { return poller_.load(std::memory_order_seq_cst); }

  // The poller only: waits in epoll until an event, interrupt(), or the
  // timeout (negative: none); the events are kept for dispatch_and_release.
  void wait(std::chrono::nanoseconds timeout) noexcept;
  void poll_now() noexcept { wait(std::chrono::nanoseconds::zero()); }
  // Makes the current or next wait() return (parker::unpark of a polling
  // worker). Any thread.
  void interrupt() noexcept;

  // Registrations in use (for tests).
  std::size_t registrations() const;

 private:
  reactor();
  ~reactor() = default;
  static void forget_in_child() noexcept;
  io_registration* at(std::uint64_t data) const noexcept;
  // An event for this slot: hands readiness to its waiter or keeps it.
  bool signal(std::atomic<std::uintptr_t>& slot) noexcept;
  void close_slot(std::atomic<std::uintptr_t>& slot) noexcept;

  static constexpr std::size_t chunk_size = 256;
  static constexpr std::size_t max_chunks = 16384;  // 4M registrations
  static constexpr std::size_t event_capacity = 256;

  int epoll_fd_ = -1;
  int event_fd_ = -1;
  alignas(false_sharing_range) std::atomic<bool> poller_{false};
  alignas(false_sharing_range) std::atomic<std::int64_t> waiters_{0};
  // Registrations in chunks that never move: an event finds its
  // registration without a lock.
  std::unique_ptr<std::atomic<io_registration*>[]> chunks_;
  mutable std::mutex mutex_;
  io_registration* free_ = nullptr;  // guarded
  std::size_t made_ = 0;             // guarded
  std::size_t in_use_ = 0;           // guarded
  // The poller's: filled by wait(), emptied by dispatch_and_release().
  struct event {
    std::uint32_t events;
    std::uint64_t data;
  };
  std::array<event, event_capacity> events_{};
  std::size_t event_count_ = 0;
};

// A parked worker's parker calls this to wake a worker waiting in the
// reactor (parker.hpp cannot include this header).
void interrupt_reactor() noexcept;

}  // namespace fjord::detail
