// Waiting for an fd: the waiter's side of docs/io.md, "Waiting for an fd".

#include "fjord/detail/fd_wait.hpp"

#include "fjord/detail/trace_point.hpp"

#include <poll.h>

#include <stdexcept>
#include <string>

#include "fjord/detail/fork_generation.hpp"

namespace fjord::detail {

namespace {

std::atomic<std::uintptr_t>& slot_of(io_registration& r, io_direction d) noexcept {
  return d == io_direction::read ? r.reader : r.writer;
}

int as_int(io_status s) noexcept {
  return static_cast<int>(s);
}

}  // namespace

fd_wait::fd_wait(io_registration* r, io_direction direction, io_deadline deadline,
                 std::optional<std::stop_token> token, bool check_now) noexcept
    : registration_(r),
      direction_(direction),
      check_now_(check_now),
      deadline_(deadline),
      token_(std::move(token)) {
  if (r != nullptr) {
    generation_ = r->generation.load(std::memory_order_relaxed);
    fd_ = r->fd;
  }
}

bool fd_wait::ends_before_waiting() noexcept {
  io_registration* r = registration_;
  if (r == nullptr || r->generation.load(std::memory_order_relaxed) != generation_ ||
      r->fork_generation != fork_generation()) {
    waiter_.outcome = as_int(io_status::closed);
    return true;
  }
  std::atomic<std::uintptr_t>& slot = slot_of(*r, direction_);
  std::uintptr_t seen = slot.load(std::memory_order_acquire);
  if (seen == io_registration::closed) {
    waiter_.outcome = as_int(io_status::closed);
    return true;
  }
  // Readiness an event left for us: consume it (acquire: after it, the
  // operation sees what the readiness announced).
  if (seen == io_registration::ready &&
      slot.compare_exchange_strong(seen, io_registration::empty, std::memory_order_acquire,
                                   std::memory_order_relaxed)) {
    waiter_.outcome = as_int(io_status::ready);
    return true;
  }
  if (check_now_) {
    pollfd p{};
    p.fd = r->fd;
    p.events = direction_ == io_direction::read ? POLLIN : POLLOUT;
    if (::poll(&p, 1, 0) > 0) {
      waiter_.outcome = as_int(io_status::ready);
      return true;
    }
  }
  return false;
}

bool fd_wait::await_ready() noexcept {
  return ends_before_waiting();
}

bool fd_wait::suspend(std::coroutine_handle<> h) {
  if (token_->stop_requested()) {
    waiter_.outcome = as_int(io_status::canceled);
    return false;
  }
  if (deadline_.at() <= io_deadline::clock::now()) {
    waiter_.outcome = as_int(io_status::timeout);
    return false;
  }
  reactor& rx = reactor::instance();
  std::atomic<std::uintptr_t>& slot = slot_of(*registration_, direction_);
  waiter_.slot = &slot;
  waiter_.waiter.begin_wait(h);
  rx.add_waiter(waiter_.waiter.home);
  // Publication. release: a completer that takes us sees our setup.
  std::uintptr_t old = io_registration::empty;
  while (!slot.compare_exchange_weak(old, waiter_.as_slot_value(), std::memory_order_acq_rel,
                                     std::memory_order_acquire)) {
    if (old == io_registration::empty) {
      continue;  // spurious failure
    }
    if (old == io_registration::ready) {
      if (slot.compare_exchange_strong(old, io_registration::empty, std::memory_order_acquire,
                                       std::memory_order_acquire)) {
        rx.drop_waiter();
        waiter_.waiter.undo_begin_wait();
        waiter_.outcome = as_int(io_status::ready);
        return false;
      }
      // Changed meanwhile (closed, or another waiter): look again from
      // empty, so the publication CAS cannot succeed against that value.
      old = io_registration::empty;
      continue;
    }
    rx.drop_waiter();
    waiter_.waiter.undo_begin_wait();
    if (old == io_registration::closed) {
      waiter_.outcome = as_int(io_status::closed);
      return false;
    }
    throw std::logic_error("fjord: two coroutines wait to " +
                           std::string(direction_ == io_direction::read ? "read" : "write") +
                           " fd " + std::to_string(registration_->fd) + " at once");
  }
  // Published: from here a completer may finish us, but our hold keeps it
  // from resuming us until we are done here.
  if (registration_->generation.load(std::memory_order_acquire) != generation_ &&
      rx.take(waiter_)) {
    // Closed and reused while we published: our slot is someone else's.
    waiter_.outcome = as_int(io_status::closed);
    waiter_.drop_hold();  // the completer's hold: ours is the last
  } else if (!deadline_.is_none()) {
    waiter_.deadline = deadline_.at();
    waiter_.on_due = &timer_due;
    waiter_.on_fire = &timer_fire;
    try {
      timed_ = timer_service::instance().arm(waiter_);
    } catch (...) {
      if (rx.take(waiter_)) {
        waiter_.waiter.undo_begin_wait();
        throw;  // out of memory for the timer heap: the co_await throws
      }
      // Completed meanwhile: the wait needs no timer any more.
    }
  }
  if (token_->stop_possible()) {
    // Runs at once if a stop was requested meanwhile.
    on_stop_.emplace(*token_, canceler{&waiter_});
  }
  // Before our hold goes: after it, the frame may be resumed elsewhere.
  trace_point(trace_kind::io_wait, static_cast<std::uint32_t>(fd_));
  if (waiter_.drop_hold()) {
    waiter_.waiter.undo_begin_wait();  // completed during the setup
    return false;
  }
  return true;
}

io_status fd_wait::await_resume() noexcept {
  on_stop_.reset();  // waits for a stop callback running on another thread
  if (timed_) {
    // Completed by an event or a stop: the timer must not fire into a
    // frame that is gone. Holding the timer's mutex, this also waits for
    // a timer_due() that is looking at our slot right now.
    timer_service::instance().disarm(waiter_);
  }
  // fd_, not the registration's: a close() may be rewriting that (and a
  // trace point's arguments are evaluated whether or not tracing runs).
  trace_point(trace_kind::io_ready, static_cast<std::uint32_t>(fd_), 0,
              static_cast<std::uint64_t>(waiter_.outcome));
  return static_cast<io_status>(waiter_.outcome);
}

void fd_wait::canceler::operator()() const noexcept {
  if (waiter->fork_generation != fork_generation()) {
    return;  // a stop requested in a fork() child: the wait is the parent's
  }
  // The reactor exists: the waiter was published in it.
  if (reactor::existing()->take(*waiter)) {
    waiter->finish(as_int(io_status::canceled));
  }
}

bool fd_wait::timer_due(timer_service::entry& e) noexcept {
  return reactor::existing()->take(static_cast<io_waiter&>(e));
}

void fd_wait::timer_fire(timer_service::entry& e) noexcept {
  static_cast<io_waiter&>(e).finish(as_int(io_status::timeout));
}

}  // namespace fjord::detail
