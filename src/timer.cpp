#include "fjord/timer.hpp"

#include <algorithm>
#include <cmath>

namespace fjord {

namespace detail {

namespace {

// after(): the entry owns the channel's other handle until it fires.
struct after_state : timer_service::entry {
  channel<timer_clock::time_point> ticks;

  static void fire(timer_service::entry& e) noexcept {
    auto* self = static_cast<after_state*>(&e);
    try {
      (void)self->ticks.try_send(timer_clock::now());  // capacity 1, never full
    } catch (...) {
      // No memory for the channel's buffer: the tick is lost, as the
      // timer thread has nobody to report to.
    }
    delete self;
  }
};

}  // namespace

channel<timer_clock::time_point> make_after_channel(timer_clock::time_point deadline) {
  if (deadline == timer_clock::time_point::max()) {
    // Too far to represent (a saturated duration): it never fires, so
    // nothing is armed (and nothing held for ever).
    return channel<timer_clock::time_point>(1);
  }
  auto state = std::make_unique<after_state>();
  state->ticks = channel<timer_clock::time_point>(1);
  state->deadline = deadline;
  state->on_fire = &after_state::fire;
  channel<timer_clock::time_point> result = state->ticks;
  timer_service::instance().arm(*state);  // not cancelable: always armed
  static_cast<void>(state.release());     // now the timer thread's
  return result;
}

// A ticker's state: shared by the ticker and, while it is armed or firing,
// by the timer thread (two references then). `guard` orders each delivery
// against stop(), so that no tick arrives once stop() has returned.
struct ticker_state : timer_service::entry {
  channel<timer_clock::time_point> ticks;
  timer_clock::duration period{};
  std::mutex guard;
  bool stopped = false;  // guarded
  std::atomic<int> references{2};

  void release() noexcept {
    // acq_rel: the other side's last uses happen before the delete.
    if (references.fetch_sub(1, std::memory_order_acq_rel) == 1) {
      delete this;
    }
  }

  static void fire(timer_service::entry& e) noexcept {
    auto* self = static_cast<ticker_state*>(&e);
    const timer_clock::time_point now = timer_clock::now();
    {
      std::lock_guard lock(self->guard);
      if (!self->stopped) {
        try {
          (void)self->ticks.try_send(now);  // full: the receiver misses this tick
        } catch (...) {
          // No memory for the buffer: this tick is missed too.
        }
      }
    }
    // The next tick on the period's grid, skipping the ones already missed.
    timer_clock::time_point next = self->deadline + self->period;
    if (next <= now) {
      next += ((now - next) / self->period + 1) * self->period;
    }
    bool rearmed = false;
    try {
      rearmed = timer_service::instance().rearm(*self, next);
    } catch (...) {
      // No memory for the timer heap: the ticker stops ticking.
    }
    if (!rearmed) {
      self->release();  // stop() came first (or the heap is out of memory)
    }
  }
};

}  // namespace detail

timer_clock::duration ticker::checked_period(double ns) {
  if (!(ns > 0)) {
    throw std::invalid_argument("fjord::ticker: period " + std::to_string(ns) +
                                " ns is not positive");
  }
  constexpr double cap_ns = 1e18;  // about 31.7 years
  const double clamped = std::ceil(std::min(ns, cap_ns));
  return std::chrono::duration_cast<timer_clock::duration>(
      std::chrono::duration<double, std::nano>(clamped));
}

ticker::ticker(checked_tag, timer_clock::duration period)
    : ticks_(1), state_(new detail::ticker_state) {
  state_->ticks = ticks_;
  state_->period = std::max(period, timer_clock::duration(1));
  state_->deadline = timer_clock::now() + state_->period;
  state_->on_fire = &detail::ticker_state::fire;
  try {
    detail::timer_service::instance().arm(*state_);
  } catch (...) {
    delete state_;
    throw;
  }
}

void ticker::stop() noexcept {
  if (state_ == nullptr) {
    return;
  }
  {
    std::lock_guard lock(state_->guard);
    state_->stopped = true;
  }
  // Armed: it will never fire, and the timer's reference is ours to drop.
  // Firing right now: its rearm() fails, and it drops its reference.
  if (detail::timer_service::instance().disarm(*state_)) {
    state_->release();
  }
  state_->release();
  state_ = nullptr;
  try {
    (void)ticks_.try_receive();  // a tick delivered before `stopped` was set
  } catch (...) {
    // Not reached: ticks_ is not null, and a receive allocates nothing.
  }
}

namespace detail {

void callback_timer_base::release() noexcept {
  if (references.fetch_sub(1, std::memory_order_acq_rel) == 1) {
    destroy();
  }
}

bool callback_timer_base::cancel() noexcept {
  if (!timer_service::instance().disarm(*this)) {
    return false;  // fired (or being fired): its reference is its own
  }
  release();  // the timer's reference: it will never fire
  return true;
}

}  // namespace detail

}  // namespace fjord
