// The sleep protocol: how an idle worker searches, registers to steal, goes
// to sleep, and is woken, so that no job is ever left with every worker
// asleep. It is argued step by step in docs/scheduler.md ("Push and sleep",
// "Owner pop", "Leaving the search", "Blocking"); this file and the census
// (detail/census.hpp) are its whole implementation, except the pushers'
// halves, which are inline on the submission paths in detail/pool_core.hpp
// (notify_local_push, notify_injected, end_lane_submission,
// notify_io_waiter).
//
// A worker is in one of three states, counted in the census:
//   working    -> searching   become_searcher(): its deque and the injection
//                             queues are empty; pushers now wake nobody.
//   (A searcher steals shared jobs without registering; it registers as a
//   thief, with a heavy fence, only for one steal of a stalled owner's
//   private jobs: worker.cpp, steal_from_stalled_owner.)
//   searching  -> working     stop_searching(): found work; the last
//                             searcher to leave looks once more for work a
//                             pusher left it, and passes the baton.
//   searching  -> sleeping    sleep(): registered as a sleeper with a heavy
//                             fence, then one last look, then park.
//   sleeping   -> searching   wake_one_sleeper(): one census update moves
//                             the sleeper, so nobody sees it in neither.
// A blocked worker's place is a phantom sleeper (pool.cpp, begin_blocking):
// waking it starts or unparks a stand-in thread.

#include <algorithm>
#include <chrono>
#include <mutex>
#include <utility>

#include "fjord/detail/memory_heap.hpp"
#include "fjord/detail/pool_core.hpp"
#include "fjord/detail/pool_core_cold.hpp"
#include "fjord/detail/reactor.hpp"

namespace fjord::detail {

void pool_core::offer_pushed_work(worker& w, census_count c) noexcept {
  if (guest_fills_last_place(c)) [[unlikely]] {
    // The sleepers stay asleep for forks: only searchers could take a
    // share, and sharing when nobody can take it costs every later pop a
    // CAS (a guest alone with a sleeping worker forked 1.5x slower).
    if (c.searchers() != 0) {
      w.deque.offer(c.searchers());
    }
    return;
  }
  w.deque.offer(c.searchers() + c.sleepers());
  if (c.should_wake()) {
    wake_one_sleeper();
  }
}

void pool_core::guest_gives_place() noexcept {
  // seq_cst store, then load: against a worker standing aside (sleep()).
  guest_in_place_.store(false, std::memory_order_seq_cst);
  // Forks that left a sleeper asleep while we held the place may wait on
  // deques now: a thread to take them. No heavy fence against a pusher (it
  // would cost about 2 us a park): a fork pushed as we store may see the
  // flag still set while we miss the job, and then waits for its owner to
  // pop it or to push again (that push sees the flag cleared). A blocking
  // owner hands its jobs on itself (begin_blocking).
  const census_count c = census_.load(std::memory_order_seq_cst);
  if (c.searchers() == 0 && c.sleepers() != 0 && any_work_visible()) {
    wake_one_sleeper();
  }
}

void pool_core::become_searcher(worker& w) noexcept {
  if (!w.searching) {
    census_.add_searcher();
    w.searching = true;
  }
}

void pool_core::stop_searching(worker& w) noexcept {
  const census_count old = census_.remove_searcher();
  w.searching = false;
  // The last searcher leaving while others sleep: a pusher that saw it
  // searching woke nobody, so it looks for work such a pusher left and hands
  // the baton on if it sees any (Go's rule). Exact for injected work: the
  // pusher's seq_cst tail exchange and census load against our seq_cst
  // decrement and tail loads (docs/scheduler.md, "Leaving the search"). A
  // job pushed on a deque may be missed for a moment; its owner pops it.
  // Forked work alone does not pass it on while the guest fills the last
  // place (guest_fills_last_place): it stays with the threads awake.
  if (old.searchers() == 1 && old.sleepers() != 0 &&
      (guest_fills_last_place(old) ? injected_work_visible() : any_work_visible())) {
    wake_one_sleeper();
  }
}

bool pool_core::any_work_visible() const noexcept {
  if (injected_work_visible()) {
    return true;
  }
  const std::size_t n = thread_count();
  const std::size_t m = victim_count(n);
  for (std::size_t i = 0; i < m; ++i) {
    // A runnext job counts: its owner may be running long, and it must not
    // wait for it with every other worker asleep. seq_cst: part of the same
    // handshake as the deques (resume_waiting's store or exchange, then its
    // fence).
    const worker& w = *victim(i, n);
    if (w.deque.maybe_nonempty() || w.runnext.load(std::memory_order_seq_cst) != nullptr) {
      return true;
    }
  }
  return false;
}

bool pool_core::injected_work_visible() const noexcept {
  if (high_.queue.maybe_nonempty() || low_.queue.maybe_nonempty()) {
    return true;
  }
  for (const auto& s : shards_) {
    if (s->queue.maybe_nonempty()) {
      return true;
    }
  }
  // seq_cst: a lane made just now is part of the same Dekker handshakes.
  const std::size_t lanes = lane_count_.load(std::memory_order_seq_cst);
  for (std::size_t i = 0; i < lanes; ++i) {
    if (lanes_[i].load(std::memory_order_acquire)->maybe_nonempty()) {
      return true;
    }
  }
  return false;
}

bool pool_core::sleep(worker& w, const completion_latch* until, deadline_t deadline) noexcept {
  // A worker beyond min_workers idle in its main loop leaves the pool after
  // idle_timeout (docs/scheduler.md, "Scaling").
  bool may_retire = false;
  bool aside = std::exchange(w.standing_aside, false);
  {
    std::lock_guard lock(cold_->idle_mutex);
    clear_presumed_block_locked(w);
    may_retire = until == nullptr && size() > cold_->min_workers.load(std::memory_order_relaxed);
    w.idle_position = cold_->idle.size();
    cold_->idle.push_back(&w);
    w.idle_in_main_loop = (until == nullptr);
    if (w.idle_in_main_loop) {
      ++cold_->idle_main_loop;
    }
    census_.add_sleeper();
    // A worker standing aside for the guest (search()) does not stay up for
    // forked work: that is for the guest and the threads awake, and its
    // owner pops it; the wake-ups it forgoes are the ones
    // guest_fills_last_place() stops pushers from making. One worker only:
    // the census's sleepers change under this mutex, so of searchers that
    // all saw none asleep, the first to get here is the only sleeper and
    // stands aside, the others sleep as usual (their last look below finds
    // the forks, and they go back to them). seq_cst, after our census entry:
    // against guest_gives_place(), which stores the flag and then reads the
    // census, so either we see the place given back, or it sees us asleep
    // and wakes us for work waiting.
    // While a worker is blocked none stands aside (the count changes under
    // this mutex).
    aside = aside && census_.load(std::memory_order_seq_cst).sleepers() == 1 &&
            blocked_workers_.load(std::memory_order_relaxed) == 0 &&
            guest_in_place_.load(std::memory_order_seq_cst);
  }
  // Pairs with the light fence of every pusher: either its job is visible to
  // the check below, or our census entry is visible to its wake-up check.
  heavy_fence();
  bool ready = exit_.load(std::memory_order_acquire) ||
               (aside ? injected_work_visible() : any_work_visible()) || w.inbox.maybe_nonempty() ||
               (until != nullptr && until->done());
  // Relaxed: wait_idle() registers under cold_->idle_mutex, which we took to go
  // idle, so either we see its count or it sees us idle.
  if (!ready && until == nullptr && idle_waiters_.load(std::memory_order_relaxed) != 0) {
    std::lock_guard lock(cold_->idle_mutex);
    announce_if_quiescent_locked();
  }
  if (!ready && until == nullptr && drained_.load(std::memory_order_seq_cst)) {
    bool ended_pool = false;
    {
      std::lock_guard lock(cold_->idle_mutex);
      ended_pool = try_end_locked();
    }
    if (ended_pool) {
      wake_all();
      ready = true;
    }
  }
  reactor* poller = nullptr;
  bool timed_out = false;
  if (!ready) {
    // Blocks of this thread's scalable heap freed by other threads come back
    // here at the latest, so a worker that goes idle after a burst does not
    // keep its memory mapped; idle for want of work, it also gives back its
    // cached empty segments, but not in a join wait, after which its job
    // goes on allocating (docs/allocator.md). A load or two when there is
    // nothing to do.
    if (until == nullptr) {
      release_cached_memory_of_this_thread();
    } else {
      take_back_remote_frees_of_this_thread();
    }
    w.counters.parks.bump();
    worker_counters::open(w.counters.parked_since, steady_ns());
    // While a coroutine waits for an fd, one parked worker waits in the
    // reactor instead (docs/io.md, "Who polls"). seq_cst: after our census
    // entry, against add_waiter()'s increment and look at the census.
    reactor* r = reactor::existing();
    if (r != nullptr && r->has_waiters() && r->try_become_poller()) {
      poller = r;
      trace_point(trace_kind::park_begin, static_cast<std::uint32_t>(park_reason::polling));
      const auto timeout = deadline == deadline_t::max()
                               ? std::chrono::nanoseconds(-1)
                               : std::max(std::chrono::nanoseconds::zero(),
                                          std::chrono::duration_cast<std::chrono::nanoseconds>(
                                              deadline - std::chrono::steady_clock::now()));
      w.sleeper.park_polling([r, timeout] { r->wait(timeout); });
    } else {
      trace_point(trace_kind::park_begin, static_cast<std::uint32_t>(park_reason::idle));
      if (may_retire) {
        const auto since = std::chrono::steady_clock::now();
        w.sleeper.park_for(cold_->idle_timeout);
        timed_out = std::chrono::steady_clock::now() - since >= cold_->idle_timeout;
      } else if (deadline == deadline_t::max()) {
        w.sleeper.park();
      } else {
        w.sleeper.park_for(deadline - std::chrono::steady_clock::now());
      }
    }
    trace_point(trace_kind::park_end);
    worker_counters::close(w.counters.parked_since, w.counters.parked_ns, steady_ns());
    w.counters.wakeups.bump();
  }
  bool as_searcher = false;
  bool leaving = false;
  bool lent = false;
  {
    std::lock_guard lock(cold_->idle_mutex);
    if (w.idle_position != ~std::size_t{0}) {
      worker* last = cold_->idle.back();
      cold_->idle[w.idle_position] = last;
      last->idle_position = w.idle_position;
      cold_->idle.pop_back();
      w.idle_position = ~std::size_t{0};
      if (w.idle_in_main_loop) {
        --cold_->idle_main_loop;
      }
      census_.remove_sleeper(std::memory_order_relaxed);
      leaving = timed_out;
    }
    as_searcher = std::exchange(w.woken_as_searcher, false);
    lent = std::exchange(w.lent_cpu, false);
    if (!leaving) {
      wake_monitor_locked();  // a worker is up: the pool may need watching
    }
  }
  return_lent_cpu(w, lent);
  if (leaving && leave_after_idle_timeout(w)) {
    return park_retired(w);
  }
  if (as_searcher) {
    w.searching = true;  // the waker counted us as a searcher already
  }
  if (poller != nullptr) {
    // Awake and out of the census's sleepers: the coroutines resumed go on
    // our deque. As a searcher first, so that those pushes wake nobody: we
    // run the first ourselves, and when we stop searching the baton rule
    // (stop_searching) wakes a sleeper only if more work is visible. Waking
    // one for each dispatch put a futex wake before the resumed coroutine
    // (Go's findRunnable likewise runs the first goroutine a poll returns
    // and starts other Ps only for the rest).
    become_searcher(w);
    dispatch_io(*poller);
  }
  if (exit_.load(std::memory_order_acquire)) {
    if (w.searching) {
      stop_searching(w);
    }
    return false;
  }
  return true;
}

void pool_core::lend_cpu_locked(worker& target) noexcept {
  const int tid = target.tid.load(std::memory_order_relaxed);
  const int cpu = sched_getcpu();
  // Its CPUs as they are now (a start hook, a job or taskset may have set
  // them), to be restored when it wakes.
  if (tid == 0 || cpu < 0 || cpu >= CPU_SETSIZE ||
      sched_getaffinity(tid, sizeof(target.home_cpus), &target.home_cpus) != 0 ||
      !CPU_ISSET(cpu, &target.home_cpus)) {
    return;
  }
  cpu_set_t here;
  CPU_ZERO(&here);
  CPU_SET(cpu, &here);
  if (sched_setaffinity(tid, sizeof(here), &here) == 0) {
    target.lent_cpu = true;
  }
}

void pool_core::return_lent_cpu(worker& w, bool lent) noexcept {
  if (lent) {
    static_cast<void>(sched_setaffinity(0, sizeof(w.home_cpus), &w.home_cpus));
  }
}

void pool_core::wake_one_sleeper(bool lend_this_cpu) noexcept {
  worker* target = nullptr;
  bool start = false;
  {
    std::lock_guard lock(cold_->idle_mutex);
    if (cold_->idle.empty()) {
      // No real sleeper: the sleeper the census shows may be a blocked
      // worker's phantom, for which a stand-in is activated now.
      if (!activate_stand_in_locked(target, start)) {
        return;
      }
    } else {
      // Prefer a worker idle in its main loop: a worker parked in a join or
      // group wait may return to its own job instead of searching.
      std::size_t pick = cold_->idle.size() - 1;
      for (std::size_t i = cold_->idle.size(); i-- > 0;) {
        if (cold_->idle[i]->idle_in_main_loop) {
          pick = i;
          break;
        }
      }
      target = cold_->idle[pick];
      cold_->idle[pick] = cold_->idle.back();
      cold_->idle[pick]->idle_position = pick;
      cold_->idle.pop_back();
      target->idle_position = ~std::size_t{0};
      if (target->idle_in_main_loop) {
        --cold_->idle_main_loop;
      }
      target->woken_as_searcher = true;
      // One RMW: one more searcher, one fewer sleeper (mod 2^64 arithmetic).
      census_.sleeper_to_searcher();
    }
    if (lend_this_cpu && target != nullptr) {
      // Under the mutex: the woken thread reads lent_cpu under it too.
      lend_cpu_locked(*target);
    }
  }
  if (target != nullptr) {
    target->sleeper.unpark();
  } else if (start) {
    start_stand_in();
  }
}

void pool_core::wake_all() noexcept {
  // seq_cst: against start_thread()'s store of the count (see there).
  const std::size_t n = thread_count_.load(std::memory_order_seq_cst);
  for (std::size_t i = 0; i < n; ++i) {
    workers_[i]->sleeper.unpark();
  }
}

}  // namespace fjord::detail
