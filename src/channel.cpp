#include <algorithm>
#include <cstdint>
#include <functional>

#include "fjord/detail/channel_waiter.hpp"
#include "fjord/detail/frame_allocator.hpp"
#include "fjord/detail/resume_chain.hpp"

namespace fjord::detail {

void lock_channels(channel_base** channels, std::size_t n) noexcept {
  // nullptr (a case on a null channel, which never becomes ready) sorts
  // first and is skipped.
  std::sort(channels, channels + n, std::less<>());
  channel_base* previous = nullptr;
  for (std::size_t i = 0; i < n; ++i) {
    if (channels[i] != previous) {
      channels[i]->lock();
      previous = channels[i];
    }
  }
}

void unlock_channels(channel_base** channels, std::size_t n) noexcept {
  channel_base* previous = nullptr;
  for (std::size_t i = 0; i < n; ++i) {
    if (channels[i] != previous) {
      channels[i]->unlock();
      previous = channels[i];
    }
  }
}

namespace {

// Claims up to closing_walk::chunk plain waits from w on into `woken`;
// returns the first not reached.
channel_waiter* claim_chunk(channel_waiter* w, wake_list& woken) noexcept {
  std::size_t selects = 0;
  w = channel_waiter_queue::claim_closed(
      w, closing_walk::chunk, [&woken](channel_waiter& claimed) { woken.add(&claimed); }, selects);
  FJORD_ASSERT(selects == 0, "closing_walk: a select's waiter in the walk");
  return w;
}

}  // namespace

void closing_walk::start(channel_waiter* first) noexcept {
  // Handed to the pool only where it surely gets to the walk soon: not from
  // one of its own threads (whose job may go on to wait for a waiter further
  // on, with the walk stuck behind it on its own deque), and not while it is
  // paused or shutting down.
  pool_core* const home = first->parker->home_pool();
  if (home != nullptr && current_worker_of(home) == nullptr && !home->is_paused() &&
      !home->is_shut_down()) {
    try {
      void* memory = frame_allocator::allocate(sizeof(closing_walk));
      (::new (memory) closing_walk(first, home))->hand_on();
      return;
    } catch (...) {
      // No memory for the walk: walk here.
    }
  }
  while (first != nullptr) {
    wake_list woken;
    first = claim_chunk(first, woken);
  }
}

void closing_walk::execute(job* j) noexcept {
  auto* self = static_cast<closing_walk*>(j);
  pool_core& home = *self->home_;
  // The chunk's coroutines of home are resumed right here (resume_chain),
  // unless a worker is idle (each is then woken into this worker's runnext
  // slot and deque like any other, where the idle ones share them one by
  // one), or the walk runs inside a wait that helps or in a guest's call
  // (which must not wait behind a whole chunk).
  worker* here = current_worker_of(&home);
  if (here != nullptr && (!pool_core::runs_at_loop_level(*here, j) || home.has_idle_worker())) {
    here = nullptr;
  }
  job_chain mine;
  {
    wake_list woken;  // declared first: wakes the others once the rest is handed on
    std::size_t selects = 0;
    channel_waiter* const rest = channel_waiter_queue::claim_closed(
        self->rest_, chunk,
        [&](channel_waiter& claimed) {
          job* const r = here != nullptr ? claimed.parker->take_resumption(home) : nullptr;
          if (r != nullptr) {
            mine.push_back(r);
          } else {
            woken.add(&claimed);
          }
        },
        selects);
    FJORD_ASSERT(selects == 0, "closing_walk: a select's waiter in the walk");
    if (rest == nullptr) {
      self->~closing_walk();
      frame_allocator::deallocate(self, sizeof(closing_walk));
    } else {
      self->rest_ = rest;
      self->hand_on();  // self may be gone from here on
    }
  }
  if (mine.first != nullptr) {
    resume_chain::run(home, *here, mine.first);
  }
}

// Onto this worker's deque when on a worker of home (shared with idle
// workers, see notify_local_push), else onto home's injection queue, as a
// coroutine woken from outside goes. Either way it is work home can see,
// which keeps home from ending until the walk has run.
void closing_walk::hand_on() noexcept {
  // Once pushed, the walk may be taken, finished and freed at once.
  pool_core* const home = home_;
  if (worker* w = current_worker_of(home); w != nullptr && w->deque.push(this)) {
    home->notify_local_push(*w);
    return;
  }
  home->resume_waiting_chain(this, this, 1);
}

namespace {

// xorshift64* (Vigna 2016): fairness needs uniformity, not secrecy.
std::uint64_t next_random() noexcept {
  constinit thread_local std::uint64_t state = 0;
  if (state == 0) {
    state = reinterpret_cast<std::uintptr_t>(&state) * 0x9E3779B97F4A7C15ULL | 1;
  }
  state ^= state >> 12;
  state ^= state << 25;
  state ^= state >> 27;
  return state * 0x2545F4914F6CDD1DULL;
}

}  // namespace

void random_order(int* order, int n) noexcept {
  // Fisher-Yates; the bias of the multiply-shift reduction is below 2^-32
  // for the handful of cases a select has.
  for (int i = 0; i < n; ++i) {
    order[i] = i;
  }
  for (int i = n - 1; i > 0; --i) {
    const auto j =
        static_cast<int>(((next_random() >> 32) * static_cast<std::uint64_t>(i + 1)) >> 32);
    std::swap(order[i], order[j]);
  }
}

}  // namespace fjord::detail
