// The epoll set and its slots. The protocol (who completes a waiter, and why
// no readiness is lost) is argued in docs/io.md.

#include "fjord/detail/reactor.hpp"

#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <new>
#include <string>
#include <system_error>

#include "fjord/detail/fork_generation.hpp"
#include "fjord/detail/io_waiter.hpp"
#include "fjord/detail/pool_core.hpp"
#include "fjord/detail/worker.hpp"
#include "fjord/io_status.hpp"

namespace fjord::detail {

namespace {

std::atomic<reactor*> the_reactor{nullptr};
// Constant-initialised; made anew in the child of a fork().
constinit std::mutex creation_mutex;
bool fork_handler_registered = false;  // guarded by creation_mutex

// The eventfd's epoll data: no registration has this index.
constexpr std::uint64_t interrupt_data = ~std::uint64_t{0};

std::uint64_t data_of(const io_registration& r) noexcept {
  return (std::uint64_t{r.generation.load(std::memory_order_relaxed)} << 32) | r.index;
}

[[noreturn]] void throw_errno(int error, const std::string& what) {
  throw std::system_error(error, std::generic_category(), what);
}

}  // namespace

void reactor::forget_in_child() noexcept {
  // The child shares the parent's epoll set (an open file description),
  // so it must not use it: the next wait makes a new one. The old one is
  // leaked, with its registrations, as the timer service is.
  the_reactor.store(nullptr, std::memory_order_relaxed);
  ::new (static_cast<void*>(&creation_mutex)) std::mutex;
}

reactor& reactor::instance() {
  if (reactor* r = the_reactor.load(std::memory_order_acquire)) [[likely]] {
    return *r;
  }
  std::lock_guard lock(creation_mutex);
  if (reactor* r = the_reactor.load(std::memory_order_relaxed)) {
    return *r;
  }
  if (!fork_handler_registered) {
    on_fork_child(&forget_in_child);
    fork_handler_registered = true;
  }
  // Never destroyed: coroutines may wait for fds during static destruction.
  auto* r = new reactor();
  the_reactor.store(r, std::memory_order_release);
  return *r;
}

reactor* reactor::existing() noexcept {
  return the_reactor.load(std::memory_order_acquire);
}

reactor::reactor() : chunks_(new std::atomic<io_registration*>[max_chunks]) {
  for (std::size_t i = 0; i < max_chunks; ++i) {
    chunks_[i].store(nullptr, std::memory_order_relaxed);
  }
  epoll_fd_ = ::epoll_create1(EPOLL_CLOEXEC);
  if (epoll_fd_ < 0) {
    const int failure = errno;  // read before the message's string is made
    throw_errno(failure, "fjord: epoll_create1 failed");
  }
  event_fd_ = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (event_fd_ < 0) {
    const int error = errno;
    ::close(epoll_fd_);
    throw_errno(error, "fjord: eventfd failed");
  }
  epoll_event ev{};
  ev.events = EPOLLIN | EPOLLET;
  ev.data.u64 = interrupt_data;
  if (::epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, event_fd_, &ev) != 0) {
    const int error = errno;
    ::close(event_fd_);
    ::close(epoll_fd_);
    throw_errno(error, "fjord: epoll cannot watch its eventfd");
  }
}

io_registration& reactor::add(int fd) {
  if (fd < 0) {
    throw std::system_error(EBADF, std::generic_category(),
                            "fjord: cannot register fd " + std::to_string(fd));
  }
  io_registration* r = nullptr;
  {
    std::lock_guard lock(mutex_);
    if (free_ != nullptr) {
      r = free_;
      free_ = r->next_free;
    } else {
      if (made_ == chunk_size * max_chunks) {
        throw std::system_error(EMFILE, std::generic_category(),
                                "fjord: the reactor holds its maximum of registrations");
      }
      const std::size_t chunk = made_ / chunk_size;
      io_registration* block = chunks_[chunk].load(std::memory_order_relaxed);
      if (block == nullptr) {
        block = new io_registration[chunk_size];
        for (std::size_t i = 0; i < chunk_size; ++i) {
          block[i].index = static_cast<std::uint32_t>(chunk * chunk_size + i);
        }
        // Release: a poller that finds the chunk sees its indices.
        chunks_[chunk].store(block, std::memory_order_release);
      }
      r = &block[made_ % chunk_size];
      ++made_;
    }
    ++in_use_;
  }
  r->fd = fd;
  r->fork_generation = fork_generation();
  r->reader.store(io_registration::empty, std::memory_order_relaxed);
  r->writer.store(io_registration::empty, std::memory_order_relaxed);
  r->read_ended.store(false, std::memory_order_relaxed);
  epoll_event ev{};
  // EPOLLPRI: a TCP read stops short at urgent data (tcp_stream's short
  // read hint must know).
  ev.events = EPOLLIN | EPOLLPRI | EPOLLOUT | EPOLLRDHUP | EPOLLET;
  ev.data.u64 = data_of(*r);
  // epoll_ctl is a full barrier in the kernel: the slot resets above are
  // visible to a poller that receives this registration's first event.
  if (::epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, fd, &ev) != 0) {
    const int error = errno;
    r->generation.fetch_add(1, std::memory_order_relaxed);
    std::lock_guard lock(mutex_);
    r->next_free = free_;
    free_ = r;
    --in_use_;
    throw_errno(error, "fjord: epoll cannot watch fd " + std::to_string(fd));
  }
  return *r;
}

void reactor::remove(io_registration& r) noexcept {
  // Fails harmlessly when the fd was closed already (closing removes it).
  ::epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, r.fd, nullptr);
  close_slot(r.reader);
  close_slot(r.writer);
  // A later event for the old generation is dropped; one already being
  // dispatched may still set a reused slot ready, which only costs its new
  // waiter a retry (every wait is followed by a retry of the operation).
  r.generation.fetch_add(1, std::memory_order_relaxed);
  r.fd = -1;
  std::lock_guard lock(mutex_);
  r.next_free = free_;
  free_ = &r;
  --in_use_;
}

void reactor::release(io_registration& r) noexcept {
  if (r.fork_generation != fork_generation()) {
    return;  // the parent's: removing it would remove it from the parent's set
  }
  existing()->remove(r);
}

void reactor::end_waits(io_registration& r) noexcept {
  if (r.fork_generation != fork_generation()) {
    return;  // the parent's (see release)
  }
  reactor* self = existing();
  self->close_slot(r.reader);
  self->close_slot(r.writer);
}

void reactor::close_slot(std::atomic<std::uintptr_t>& slot) noexcept {
  // acq_rel: acquire pairs with the waiter's publication (its setup is
  // visible before we complete it).
  const std::uintptr_t old = slot.exchange(io_registration::closed, std::memory_order_acq_rel);
  if (old > io_registration::closed) {
    drop_waiter();
    io_waiter::from_slot_value(old)->finish(static_cast<int>(io_status::closed));
  }
}

bool reactor::take(io_waiter& w) noexcept {
  std::uintptr_t expected = w.as_slot_value();
  if (w.slot->compare_exchange_strong(expected, io_registration::empty, std::memory_order_acq_rel,
                                      std::memory_order_relaxed)) {
    drop_waiter();
    return true;
  }
  return false;
}

void reactor::add_waiter(pool_core* home) noexcept {
  // seq_cst, then a seq_cst look at the poller: against a poller that
  // gives up its role (seq_cst store, then a look at the waiters), one of
  // us sees the other (docs/io.md, "Who polls").
  if (waiters_.fetch_add(1, std::memory_order_seq_cst) != 0 ||
      poller_.load(std::memory_order_seq_cst)) {
    return;
  }
  // A coroutine under sync_wait has no pool: its thread polls when it
  // sleeps (sync_wait_loop), and the default pool's workers meanwhile.
  pool_core::wake_a_poller(home != nullptr ? home : default_pool_core_if_open());
}

bool reactor::signal(std::atomic<std::uintptr_t>& slot) noexcept {
  std::uintptr_t old = slot.load(std::memory_order_acquire);
  while (true) {
    if (old == io_registration::closed) {
      return false;
    }
    if (old == io_registration::ready) {
      // Still a release write: a waiter that consumes this readiness sees
      // the sticky bits set for this event, though an earlier one left it.
      if (slot.compare_exchange_weak(old, io_registration::ready, std::memory_order_release,
                                     std::memory_order_acquire)) {
        return false;
      }
      continue;
    }
    const std::uintptr_t next = io_registration::ready;
    if (old == io_registration::empty) {
      // Release: the waiter that consumes the readiness sees what led to it
      // (the kernel's own ordering covers the fd's data).
      if (slot.compare_exchange_weak(old, next, std::memory_order_release,
                                     std::memory_order_acquire)) {
        return false;
      }
      continue;
    }
    // A waiter: the readiness goes to it (the slot is left empty), and we
    // complete it.
    if (slot.compare_exchange_weak(old, io_registration::empty, std::memory_order_acq_rel,
                                   std::memory_order_acquire)) {
      drop_waiter();
      io_waiter::from_slot_value(old)->finish(static_cast<int>(io_status::ready));
      return true;
    }
  }
}

io_registration* reactor::at(std::uint64_t data) const noexcept {
  const auto index = static_cast<std::uint32_t>(data);
  io_registration* block = chunks_[index / chunk_size].load(std::memory_order_acquire);
  if (block == nullptr) {
    return nullptr;
  }
  io_registration* r = &block[index % chunk_size];
  if (r->generation.load(std::memory_order_relaxed) != static_cast<std::uint32_t>(data >> 32)) {
    return nullptr;  // closed since the event was queued
  }
  return r;
}

void reactor::wait(std::chrono::nanoseconds timeout) noexcept {
  epoll_event raw[event_capacity];
  int n = 0;
  if (timeout < std::chrono::nanoseconds::zero()) {
    n = ::epoll_wait(epoll_fd_, raw, event_capacity, -1);
  } else {
    // Rounded up to whole milliseconds (epoll_wait's unit): a deadline is
    // never returned from early, at worst a millisecond late.
    const auto ms = std::chrono::ceil<std::chrono::milliseconds>(timeout).count();
    n = ::epoll_wait(epoll_fd_, raw, event_capacity, ms > INT_MAX ? INT_MAX : static_cast<int>(ms));
  }
  event_count_ = 0;
  for (int i = 0; i < n; ++i) {
    events_[event_count_++] = event{raw[i].events, raw[i].data.u64};
  }
}

void reactor::interrupt() noexcept {
  const std::uint64_t one = 1;
  // EAGAIN (the counter is full) still leaves an unread edge: fine.
  [[maybe_unused]] const ssize_t written = ::write(event_fd_, &one, sizeof one);
}

std::size_t reactor::dispatch_and_release() noexcept {
  std::size_t woken = 0;
  // Last event first: a worker runs the coroutines it resumes newest first
  // (its runnext slot, then its deque's bottom), so this runs them in the
  // order their fds became ready, as Go's and tokio's FIFO run queues do.
  // First to last, the fd ready first waited for all the others: echo's
  // p99 was 1.2x tokio's.
  for (std::size_t i = event_count_; i-- != 0;) {
    const event& e = events_[i];
    if (e.data == interrupt_data) {
      std::uint64_t count = 0;
      [[maybe_unused]] const ssize_t got = ::read(event_fd_, &count, sizeof count);
      continue;
    }
    io_registration* r = at(e.data);
    if (r == nullptr) {
      continue;
    }
    // Not EPOLLHUP alone: a socket registered before its connect() reports
    // it at once, and every end of a stream's reading (FIN, reset, a local
    // shutdown) carries EPOLLRDHUP with it, so it would only turn the
    // short-read hint off for good on every stream fjord connects.
    if ((e.events & (EPOLLPRI | EPOLLRDHUP | EPOLLERR)) != 0) {
      r->read_ended.store(true, std::memory_order_relaxed);
    }
    if ((e.events & (EPOLLIN | EPOLLPRI | EPOLLRDHUP | EPOLLHUP | EPOLLERR)) != 0 &&
        signal(r->reader)) {
      ++woken;
    }
    if ((e.events & (EPOLLOUT | EPOLLHUP | EPOLLERR)) != 0 && signal(r->writer)) {
      ++woken;
    }
  }
  event_count_ = 0;
  poller_.store(false, std::memory_order_seq_cst);
  return woken;
}

std::size_t reactor::registrations() const {
  std::lock_guard lock(mutex_);
  return in_use_;
}

void interrupt_reactor() noexcept {
  if (reactor* r = reactor::existing()) {
    r->interrupt();
  }
}

}  // namespace fjord::detail
