#include "fjord/detail/select_case.hpp"

namespace fjord::detail {

bool select_begin(select_case* const* cases, int n, channel_base** locks, int* order,
                  channel_parker& parker, int* result) {
  for (int i = 0; i < n; ++i) {
    locks[i] = cases[i]->channel;
  }
  lock_channels(locks, static_cast<std::size_t>(n));
  // Poll in a random order, so that among cases ready together each is
  // taken equally often (Go's rule), and none starves the others.
  random_order(order, n);
  channel_waiter* to_wake = nullptr;
  int ready = -1;
  int fallback = -1;
  try {
    for (int k = 0; k < n && ready < 0; ++k) {
      select_case* c = cases[order[k]];
      if (c->is_default()) {
        fallback = order[k];
      } else if (c->try_complete(to_wake)) {
        ready = order[k];
      }
    }
  } catch (...) {
    // Only a send's buffer growth throws, before anything changed.
    unlock_channels(locks, static_cast<std::size_t>(n));
    throw;
  }
  if (ready < 0) {
    ready = fallback;
  }
  if (ready >= 0) {
    unlock_channels(locks, static_cast<std::size_t>(n));
    if (to_wake != nullptr) {
      to_wake->parker->wake();
    }
    *result = ready;
    return false;
  }
  // Nothing ready: wait on every case. The cases that are not on channels
  // first, since arming a timer can throw (bad_alloc); a stop callback that
  // claims the parker meanwhile only marks it, and nothing resumes us.
  try {
    for (int i = 0; i < n; ++i) {
      if (cases[i]->channel == nullptr) {
        cases[i]->arm(parker, i);
      }
    }
  } catch (...) {
    for (int i = 0; i < n; ++i) {
      if (cases[i]->channel == nullptr) {
        cases[i]->disarm();
      }
    }
    unlock_channels(locks, static_cast<std::size_t>(n));
    if (parker.selected() != channel_parker::unclaimed) {
      // A case armed before the failure already won (a timer that came due,
      // a stop request): its wake is on the way, and the frame must live
      // until it arrives. Wait for it as for any win; the case that could
      // not be armed simply takes no part.
      *result = -1;
      return true;
    }
    throw;
  }
  for (int i = 0; i < n; ++i) {
    if (cases[i]->channel != nullptr) {
      cases[i]->arm(parker, i);  // queues a waiter: cannot throw
    }
  }
  unlock_channels(locks, static_cast<std::size_t>(n));
  *result = -1;
  return true;
}

std::size_t select_end(select_case* const* cases, int n, channel_base** locks,
                       const channel_parker& parker, int result) {
  if (result < 0) {
    // The waiters that did not win may still be queued (a waker takes out
    // only the one it claims, or drops the ones it could not claim).
    // locks[] is still sorted from select_begin.
    lock_channels(locks, static_cast<std::size_t>(n));
    for (int i = 0; i < n; ++i) {
      cases[i]->disarm();
    }
    unlock_channels(locks, static_cast<std::size_t>(n));
    result = parker.selected();
  }
  cases[result]->finish();
  return static_cast<std::size_t>(result);
}

void timeout_case::arm(channel_parker& p, int index) {
  timer_service& service = timer_service::instance();  // may throw: nothing armed yet
  timer_.index = index;
  timer_.on_due = &due;
  timer_.on_fire = &fire;
  timer_.parker = &p;
  try {
    service.arm(timer_);
  } catch (...) {
    timer_.parker = nullptr;  // not armed: disarm() leaves the service alone
    throw;
  }
}

void timeout_case::disarm() noexcept {
  if (timer_.parker != nullptr) {
    timer_service::instance().disarm(timer_);
  }
}

bool timeout_case::due(timer_service::entry& e) noexcept {
  auto& t = static_cast<timer&>(e);
  return t.parker->claim(t.index);  // under the service's mutex: disarm() waits for it
}

void timeout_case::fire(timer_service::entry& e) noexcept {
  static_cast<timer&>(e).parker->wake();
}

}  // namespace fjord::detail
