// The worker side of the scheduler: the main loop, taking injected work,
// stealing and helping. Sleeping and waking (the sleep protocol) are in
// sleep.cpp; docs/scheduler.md argues why no wake-up is lost.

#include <sched.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <utility>

#include "fjord/detail/assert.hpp"
#include "fjord/detail/blocking_section.hpp"
#include "fjord/detail/cycle_clock.hpp"
#include "fjord/detail/futex.hpp"
#include "fjord/detail/pool_core.hpp"
#include "fjord/detail/pool_core_cold.hpp"
#include "fjord/detail/reactor.hpp"
#include "fjord/detail/resume_job.hpp"
#include "fjord/detail/sync_wait_loop.hpp"

namespace fjord::detail {

namespace {

// Jobs taken from an injection queue at once; all but one go on the deque.
constexpr std::size_t injection_batch = 16;

// The victim a steal event names: the worker's number, or guest_victim for
// a caller that joined the pool (docs/tracing.md).
constexpr std::uint32_t guest_victim = 0xFFFF'FFFFu;
std::uint32_t trace_victim(const worker& v) noexcept {
  return v.guest ? guest_victim : v.index;
}

}  // namespace

job* pool_core::next_job(worker& w, const completion_latch* until, deadline_t deadline) noexcept {
  FJORD_ASSERT(&w == current_worker, "next_job: only a deque's owner may pop it");
  job* j = nullptr;
  // A guest takes no injected work (call_as_guest): its call must not
  // wait behind unrelated submissions.
  if (++w.ticks >= injection_check_interval) {
    w.ticks = 0;
    if (!w.guest) {
      poll_io_between_jobs();
      j = take_injected_fairly(w);
    }
  } else if (high_.queue.maybe_nonempty_hint() && !w.guest) [[unlikely]] {
    // High priority goes before the deque, at every other job boundary.
    j = take_one(high_);
  }
  if (j == nullptr && w.runnext.load(std::memory_order_relaxed) != nullptr) {
    // Acquire: a thief's CAS may race us; whoever wins owns the job.
    j = w.runnext.exchange(nullptr, std::memory_order_acquire);
  }
  if (j == nullptr) {
    j = w.deque.pop();
  }
  if (j == nullptr) {
    return search(w, until, deadline);
  }
  if (w.searching) {  // woken as a searcher, found work at home
    stop_searching(w);
  }
  return j;
}

void pool_core::worker_main(worker& w) noexcept {
  set_current_worker(&w);
  w.counters.started_ns.store(steady_ns(), std::memory_order_relaxed);
  trace_point(trace_kind::thread_start);
  while (true) {
    // A surplus thread retires here, between jobs (or runs its own jobs
    // first, falling through).
    if (surplus_.load(std::memory_order_relaxed) && !retire(w)) [[unlikely]] {
      break;
    }
    if (job* j = next_job(w, nullptr, deadline_t::max())) {
      // Relaxed is enough: a job posted after pause() returned was taken
      // with an acquire that makes the pause visible here.
      if (paused_.load(std::memory_order_relaxed) != 0) [[unlikely]] {
        hold_while_paused(w, j);
        continue;
      }
      w.loop_job = j;
      run(w, j);
    } else if (!sleep(w, nullptr, deadline_t::max())) {
      break;
    }
  }
  w.counters.ended_ns.store(steady_ns(), std::memory_order_relaxed);
  set_current_worker(nullptr);
}

void pool_core::run_timed(worker& w, job* j) noexcept {
  trace_point(trace_kind::job_begin, 0, trace_address(j));
  const std::uint64_t start = steady_ns();
  run_job(j);
  w.counters.record_job_duration(steady_ns() - start);
  trace_point(trace_kind::job_end, 0, trace_address(j));
}

bool pool_core::wait_until(completion_latch& latch, deadline_t deadline) noexcept {
  if (worker* w = current_worker_of(this)) {
    return help_until(*w, latch, deadline);
  }
  return wait_foreign(latch, deadline);
}

bool pool_core::help_until(worker& w, completion_latch& latch, deadline_t deadline) noexcept {
  if (latch.set_waiter(w.index + 1)) {
    latch.reset_waiter();
    return true;
  }
  // Helping runs other jobs on top of this one: past half of the stack,
  // block instead and let a spare help (docs/scheduler.md, "Blocking").
  if (!may_run_jobs_on_this_stack(w)) [[unlikely]] {
    return block_until(w, latch, deadline);
  }
  // Jobs run while helping belong to other computations: a coroutine of
  // theirs that parks must not count on a sync_wait running on this thread
  // (see run_unrelated_job).
  const sync_wait_loop::scope no_loop(nullptr);
  const bool timed = deadline != deadline_t::max();
  while (!latch.done()) {
    if (timed && std::chrono::steady_clock::now() >= deadline) {
      break;
    }
    if (job* j = next_job(w, &latch, deadline)) {
      run(w, j);
      continue;
    }
    if (latch.done()) {
      break;
    }
    if (w.guest) {
      // Not on the idle list (nobody wakes a guest for other work): it
      // parks until the latch's completer unparks it, as its waiter, and
      // gives its place to a worker meanwhile. Inside a blocking section
      // the place is given back already, until the section ends.
      w.counters.parks.bump();
      const bool holds_place = w.blocking_depth == 0;
      if (holds_place) {
        guest_gives_place();
      }
      park_until(w, latch, deadline);
      if (holds_place) {
        guest_takes_place();
      }
      continue;
    }
    // A worker with a job on its stack cannot see the pool end: the last
    // idle worker only ends it when every worker is idle in its main loop.
    static_cast<void>(sleep(w, &latch, deadline));
  }
  if (w.searching) {
    stop_searching(w);
  }
  // After a timeout the waiter stays registered: a later completion only
  // leaves a stale parker token, which every park loop tolerates.
  const bool done = latch.done();
  if (done) {
    latch.reset_waiter();
  }
  return done;
}

bool pool_core::block_until(worker& w, completion_latch& latch, deadline_t deadline) noexcept {
  // Registered as the latch's waiter already: count_down unparks us.
  begin_blocking(w);
  trace_point(trace_kind::park_begin, static_cast<std::uint32_t>(park_reason::blocked));
  park_until(w, latch, deadline);
  trace_point(trace_kind::park_end);
  end_blocking(w);
  const bool done = latch.done();
  if (done) {
    latch.reset_waiter();
  }
  return done;
}

void pool_core::park_until(worker& w, const completion_latch& latch, deadline_t deadline) noexcept {
  while (!latch.done()) {
    if (deadline == deadline_t::max()) {
      w.sleeper.park();
      continue;
    }
    const auto now = std::chrono::steady_clock::now();
    if (now >= deadline) {
      return;
    }
    w.sleeper.park_for(deadline - now);
  }
}

bool pool_core::wait_foreign(completion_latch& latch, deadline_t deadline) const noexcept {
  // Spin first, for up to the workers' spin budget: work that finishes
  // within it, such as a small tree entered again and again, then costs no
  // futex round trip, which is several times such a tree here. The spin
  // yields the CPU between bursts, so that when the workers need every CPU
  // it gives its own back (measured: with 2 workers on 2 CPUs, spinning
  // this way is still faster than sleeping at once, 21 against 28 us a tree).
  const auto spin_end = std::min(deadline, std::chrono::steady_clock::now() + spin_budget_);
  for (std::uint32_t burst = 0;; ++burst) {
    for (int i = 0; i < 32; ++i) {
      if (latch.done()) {
        return true;
      }
      cpu_relax();
    }
    if ((burst & 7) == 7) {
      if (std::chrono::steady_clock::now() >= spin_end) {
        break;
      }
      sched_yield();
    }
  }
  if (latch.set_waiter(completion_latch::foreign_waiter)) {
    latch.reset_waiter();
    return true;
  }
  // A worker of another pool gives its place to a spare meanwhile.
  const blocking_section blocking;
  while (!latch.done()) {
    const std::uint32_t count = latch.count();
    if (count == 0) {
      break;
    }
    if (deadline == deadline_t::max()) {
      futex_wait(latch.futex_address(), count);
      continue;
    }
    const auto now = std::chrono::steady_clock::now();
    if (now >= deadline) {
      return false;  // the waiter stays registered; a late wake is harmless
    }
    futex_wait_for(latch.futex_address(), count, deadline - now);
  }
  latch.reset_waiter();
  return true;
}

std::size_t pool_core::take_from_lanes(worker& w, job** batch) noexcept {
  const std::size_t count = lane_count_.load(std::memory_order_acquire);
  for (std::size_t k = 0; k < count; ++k) {
    const std::size_t i = (w.lane_cursor + k) % count;
    submission_lane* lane = lanes_[i].load(std::memory_order_acquire);
    if (!lane->head_published()) {
      continue;
    }
    // A shallow lane is split between the workers directly instead of
    // through steals, which take one job at a time.
    if (const std::size_t n = lane->take(batch, injection_batch, size_); n != 0) {
      w.lane_cursor = i + 1;  // the next lane goes first next time
      return n;
    }
  }
  return 0;
}

std::size_t pool_core::take_from_queue(shard& s, job** batch) noexcept {
  if (!s.queue.maybe_nonempty() || !s.queue.try_lock_consumer()) {
    return 0;
  }
  std::size_t n = 0;
  while (n < injection_batch) {
    job* j = s.queue.pop();
    if (j == nullptr) {
      break;
    }
    waiting_coroutine::prefetch_frame(j);
    batch[n++] = j;
  }
  s.queue.unlock_consumer();
  return n;
}

job* pool_core::take_one(shard& s) noexcept {
  if (!s.queue.maybe_nonempty() || !s.queue.try_lock_consumer()) {
    return nullptr;
  }
  job* j = s.queue.pop();
  s.queue.unlock_consumer();
  return j;
}

job* pool_core::take_injected_fairly(worker& w) noexcept {
  const std::uint32_t turn = ++w.fair_turns;
  if ((turn & 3) == 0) {
    if (job* j = take_one(low_)) {
      w.counters.injected_taken.bump();
      return j;
    }
  }
  // Jobs posted to this thread alone and normal injected work take turns
  // going first: the search takes the inbox first, so a thread whose inbox
  // never empties (a job that posts itself to its own thread again) still
  // takes injected work every other fair turn.
  const bool pinned_first = (turn & 1) != 0;
  if (pinned_first) {
    if (job* j = take_pinned(w)) {
      return j;
    }
  }
  job* batch[injection_batch];
  if (job* j = keep_batch(w, batch, take_normal(w, batch))) {
    return j;
  }
  return pinned_first ? nullptr : take_pinned(w);
}

std::size_t pool_core::take_normal(worker& w, job** batch) noexcept {
  // Lanes and linked queues take turns, so neither can starve the other
  // while producers keep it busy.
  w.lanes_first = !w.lanes_first;
  std::size_t n = w.lanes_first ? take_from_lanes(w, batch) : 0;
  for (std::size_t k = 0; n == 0 && k <= shard_mask_; ++k) {
    n = take_from_queue(*shards_[(w.index + k) & shard_mask_], batch);
  }
  if (n == 0 && !w.lanes_first) {
    n = take_from_lanes(w, batch);
  }
  return n;
}

job* pool_core::take_injected(worker& w) noexcept {
  if (w.guest) {
    return nullptr;  // see next_job()
  }
  if (job* j = take_pinned(w)) {
    return j;
  }
  if (job* j = take_one(high_)) {
    w.counters.injected_taken.bump();
    return j;
  }
  job* batch[injection_batch];
  if (job* j = keep_batch(w, batch, take_normal(w, batch))) {
    return j;
  }
  if (job* j = take_one(low_)) {
    w.counters.injected_taken.bump();
    return j;
  }
  return nullptr;
}

job* pool_core::keep_batch(worker& w, job** batch, std::size_t n) noexcept {
  if (n == 0) {
    return nullptr;
  }
  w.counters.injected_taken.add(n);
  // Oldest first: push the rest newest-first so pop() returns them in order.
  bool pushed = false;
  for (std::size_t i = n; i-- > 1;) {
    if (!w.deque.push(batch[i])) {
      // Deque full (deep recursion in progress): hand the rest back.
      batch[i]->next().store(nullptr, std::memory_order_relaxed);
      for (std::size_t k = i; k-- > 1;) {
        batch[k]->next().store(batch[k + 1], std::memory_order_relaxed);
      }
      shards_[w.index & shard_mask_]->queue.push_chain(batch[1], batch[i], i);
      break;
    }
    pushed = true;
  }
  if (pushed) {
    // Independent jobs, while we run batch[0] for as long as it takes:
    // shared at once rather than on request.
    w.deque.share_all();
    notify_local_push(w);
  }
  return batch[0];
}

job* pool_core::steal_round(worker& w) noexcept {
  const std::size_t n = thread_count();
  const std::size_t m = victim_count(n);
  // xorshift64: a random first victim spreads thieves over victims.
  std::uint64_t x = w.rng;
  x ^= x << 13;
  x ^= x >> 7;
  x ^= x << 17;
  w.rng = x;
  const std::size_t start = static_cast<std::size_t>(x % m);
  for (std::size_t k = 0; k < m; ++k) {
    worker* v = victim((start + k) % m, n);
    if (v == &w) {
      continue;
    }
    // Only the thieves' line of the victim's deque is read here: looking at
    // its bottom would pull the owner's line away at every round.
    job* j = nullptr;
    switch (v->deque.steal(j)) {
      case work_stealing_deque::steal_result::success:
        w.counters.steals.bump();
        trace_point(trace_kind::steal, trace_victim(*v), trace_address(j));
        return j;
      case work_stealing_deque::steal_result::lost_race:
        w.counters.failed_steals.bump();
        break;
      case work_stealing_deque::steal_result::empty:
        break;
    }
  }
  return nullptr;
}

job* pool_core::steal_from_stalled_owner(worker& w,
                                         std::chrono::steady_clock::time_point now) noexcept {
  const std::size_t n = thread_count();
  const std::size_t m = victim_count(n);
  // Watches name victims by position (victim()); the guest's position moves
  // when a thread is added, so a watch may then compare another deque's
  // bottom with the one it saw: at worst a needless registered steal from
  // an owner that was not stalled (safe, as every such steal is).
  const std::size_t v = w.stall_victim;
  // A watch set long ago (its searcher found work meanwhile) proves
  // nothing: an equal bottom now is a coincidence, not a stall.
  if (v < m && now - w.stall_since < 4 * stall_limit) {
    work_stealing_deque& victim = this->victim(v, n)->deque;
    const bool stalled =
        victim.maybe_nonempty() && !victim.maybe_shared() && victim.bottom_hint() == w.stall_bottom;
    if (stalled && now - w.stall_since < stall_limit) {
      return nullptr;  // still waiting for it to answer
    }
    w.stall_victim = ~std::size_t{0};
    if (stalled) {
      // Registered, with a heavy fence: every owner now either fences its
      // pops or has made its bottom store visible to us (docs/scheduler.md,
      // "Owner pop"). Deregistered at once, so that owners fence only for
      // the length of this steal.
      census_.add_thief();
      heavy_fence();
      job* j = nullptr;
      auto r = work_stealing_deque::steal_result::lost_race;
      for (int attempt = 0; attempt < 4 && r == work_stealing_deque::steal_result::lost_race;
           ++attempt) {
        r = victim.steal_private(j);
      }
      census_.remove_thief();
      if (r == work_stealing_deque::steal_result::success) {
        // Still watched, as stalled for stall_limit already: if its bottom
        // has not moved when we look next, we take the next job at once
        // instead of waiting stall_limit again for each of them.
        w.stall_victim = v;
        w.stall_since = now - stall_limit;
        w.counters.steals.bump();
        trace_point(trace_kind::steal, trace_victim(*this->victim(v, n)), trace_address(j));
        return j;
      }
      return nullptr;
    }
  }
  // Watch the first owner (after us) that holds private jobs and shares none.
  const std::size_t self = w.guest ? n : w.index;
  for (std::size_t k = 1; k < m; ++k) {
    const std::size_t u = (self + k) % m;
    const work_stealing_deque& victim = this->victim(u, n)->deque;
    if (victim.maybe_nonempty() && !victim.maybe_shared()) {
      w.stall_victim = u;
      w.stall_bottom = victim.bottom_hint();
      w.stall_since = now;
      break;
    }
  }
  return nullptr;
}

job* pool_core::steal_runnext(worker& w) noexcept {
  // The thief keeps the clock: it takes the job it watches once it has seen
  // it in the same slot for runnext_grace ticks, and otherwise starts
  // watching the first job it finds, looking from a victim that moves on
  // at every look, so that no slot is always the one looked at first.
  // Seeing the job later than it arrived only makes the thief wait longer.
  // A job that left and another at the same address since (a coroutine
  // that woke, ran and waits again) looks like one job and may be taken
  // early: only its locality is at stake, as for any stolen job.
  const std::size_t n = thread_count();
  const std::size_t m = victim_count(n);
  const std::uint64_t now = cycle_clock::now();
  // A watch lasts while the thief neither runs a job nor parks: after
  // either, the job it saw may have left and come back, so the watch starts
  // again rather than taking it at once. Not after a mere gap between
  // looks: in a large pool 8 search rounds may outlast the grace, and a
  // watch restarted at every look would never take the job.
  const std::uint64_t progress = w.counters.jobs_run.read() + w.counters.parks.read();
  if (std::exchange(w.runnext_watch_progress, progress) != progress) {
    w.runnext_watched = nullptr;
  }
  const std::uint32_t start = w.runnext_scan++;
  job* first_seen = nullptr;
  for (std::size_t k = 0; k < m; ++k) {
    worker& victim = *this->victim((start + k) % m, n);
    if (&victim == &w) {
      continue;
    }
    job* j = victim.runnext.load(std::memory_order_acquire);
    if (j == nullptr) {
      continue;
    }
    if (j != w.runnext_watched) {
      first_seen = first_seen != nullptr ? first_seen : j;
      continue;
    }
    // Signed: a clock read on another core may run a little behind.
    if (static_cast<std::int64_t>(now - w.runnext_watched_since) <
        static_cast<std::int64_t>(runnext_grace)) {
      return nullptr;  // still young: keep watching it
    }
    w.runnext_watched = nullptr;
    // One winner against the owner's exchange and other thieves; acquire:
    // the job's contents, written before the owner's release store.
    if (victim.runnext.compare_exchange_strong(j, nullptr, std::memory_order_acquire,
                                               std::memory_order_relaxed)) {
      w.counters.steals.bump();
      trace_point(trace_kind::steal, trace_victim(victim), trace_address(j));
      return j;
    }
    return nullptr;
  }
  // The watched job is in no slot any more (run, or taken): watch another.
  w.runnext_watched = first_seen;
  w.runnext_watched_since = now;
  return nullptr;
}

job* pool_core::search(worker& w, const completion_latch* until, deadline_t deadline) noexcept {
  w.standing_aside = false;  // set only by the search that sleep() follows
  if (job* j = take_injected(w)) {
    if (w.searching) {
      stop_searching(w);
    }
    return j;
  }
  become_searcher(w);
  const bool can_steal = victim_count(thread_count()) > 1;  // the guest counts
  const auto start = std::chrono::steady_clock::now();
  worker_counters::open(
      w.counters.searching_since,
      static_cast<std::uint64_t>(
          std::chrono::duration_cast<std::chrono::nanoseconds>(start.time_since_epoch()).count()));
  trace_point(trace_kind::search_begin);
  for (std::uint32_t round = 1;; ++round) {
    // While the guest fills the pool (every worker awake and the caller
    // working too), a searcher is one thread too many: it sleeps, leaving
    // the forks to the threads awake, instead of taking a CPU from them.
    // Injected work would have been taken above; a searcher that finds it
    // later goes on (take_injected is tried before every stand-aside).
    if ((round & 15) == 1 && !w.guest &&
        guest_crowds_pool(census_.load(std::memory_order_relaxed))) {
      if (job* j = take_injected(w)) {
        stop_searching(w);
        end_search(w);
        return j;
      }
      w.standing_aside = true;
      break;
    }
    job* j = nullptr;
    if (can_steal) {
      j = steal_round(w);
    }
    if (j == nullptr) {
      j = take_injected(w);
    }
    // Runnext slots every eighth round only: each look pulls the owner's
    // line, which it writes at every wake.
    if (j == nullptr && can_steal && (round & 7) == 0) {
      j = steal_runnext(w);
    }
    if (j != nullptr) {
      stop_searching(w);
      end_search(w);
      return j;
    }
    if (until != nullptr && until->done()) {
      break;
    }
    if ((round & 15) == 0) {
      const auto now = std::chrono::steady_clock::now();
      // Before the budget check: a searcher that spins briefly and looks
      // at the queues again (sleep() does not park while a deque holds
      // jobs) must still come to take a stalled owner's private jobs.
      if (can_steal) {
        if (job* stolen = steal_from_stalled_owner(w, now)) {
          stop_searching(w);
          end_search(w);
          return stolen;
        }
      }
      if (now - start >= spin_budget_ || now >= deadline) {
        break;
      }
      // A searching guest counts as a searcher, so submitters wake nobody,
      // but it takes no injected work: it wakes a sleeper for what it sees.
      if (w.guest && census_.load(std::memory_order_relaxed).sleepers() != 0 &&
          injected_work_visible()) {
        wake_one_sleeper();
      }
      // Ready fds are work too: while coroutines wait for them and nobody
      // polls, a searcher polls without waiting (Go's findRunnable does the
      // same before it steals), instead of spinning while their events
      // wait for a parked worker's wake-up.
      if (job* io = poll_io_while_searching(w)) {
        stop_searching(w);
        end_search(w);
        return io;
      }
      // Let a runnable thread have this CPU now and then (a caller waiting
      // for its result, on a machine with no core to spare), as rayon's
      // idle rounds do; with nothing else runnable this returns at once.
      sched_yield();
    }
    for (int i = 0; i < 4; ++i) {
      cpu_relax();
    }
  }
  stop_searching(w);
  end_search(w);
  return nullptr;
}

void pool_core::end_search(worker& w) noexcept {
  worker_counters::close(w.counters.searching_since, w.counters.searching_ns, steady_ns());
  trace_point(trace_kind::search_end);
}

void pool_core::poll_io_between_jobs() noexcept {
  reactor* r = reactor::existing();
  if (r != nullptr && r->has_waiters_relaxed() && r->try_become_poller()) {
    r->poll_now();
    dispatch_io(*r);
  }
}

job* pool_core::poll_io_while_searching(worker& w) noexcept {
  reactor* r = reactor::existing();
  if (w.guest || r == nullptr || !r->has_waiters_relaxed() || !r->try_become_poller()) {
    return nullptr;
  }
  r->poll_now();
  dispatch_io(*r);
  // The coroutines of this pool that it resumed are in our runnext slot
  // and deque (resume_waiting); the others went to their own pools.
  if (w.runnext.load(std::memory_order_relaxed) != nullptr) {
    // Acquire: a thief's CAS may race us; whoever wins owns the job.
    if (job* j = w.runnext.exchange(nullptr, std::memory_order_acquire)) {
      return j;
    }
  }
  return w.deque.pop();
}

void pool_core::dispatch_io(reactor& r) noexcept {
  r.dispatch_and_release();
  // Handing the role on: if coroutines still wait and nobody polls, a
  // parked worker takes over, ours or another pool's. seq_cst (the release
  // above, then these looks) against add_waiter(), which counts and then
  // looks at the poller.
  if (r.has_waiters() && !r.has_poller()) {
    wake_a_poller(this);
  }
}

}  // namespace fjord::detail
