#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <string>
#include <vector>

#include "fjord/detail/asymmetric_fence.hpp"
#include "fjord/detail/census.hpp"
#include "fjord/detail/chrono.hpp"
#include "fjord/detail/completion_latch.hpp"
#include "fjord/detail/config.hpp"
#include "fjord/detail/fork_generation.hpp"
#include "fjord/detail/injection_queue.hpp"
#include "fjord/detail/job.hpp"
#include "fjord/detail/job_heap.hpp"
#include "fjord/detail/job_recycler.hpp"
#include "fjord/detail/submission_lane.hpp"
#include "fjord/detail/trace_point.hpp"
#include "fjord/detail/worker.hpp"
#include "fjord/pool_stats.hpp"
#include "fjord/priority.hpp"

namespace fjord {
struct pool_options;
}  // namespace fjord

namespace fjord::detail {

class reactor;

// The scheduler behind fjord::pool. The protocols (deque, census, sleep and
// wake-up, shutdown) are argued in docs/scheduler.md.
//
// Vocabulary, here and in the docs: a job is *pushed* on the calling
// worker's own deque, or *injected* from any thread through the injection
// path (the thread's submission lane and its lane_ring, else a shard's
// linked queue); push_or_inject() pushes when it can. A worker *parks*
// (its thread blocks on its parker); a coroutine *waits* (it is suspended
// and holds no thread) and is resumed as a job.
class pool_core {
 public:
  explicit pool_core(const pool_options& options);
  // The worker counts options ask for (checked in pool.cpp).
  struct worker_counts {
    std::size_t start = 0, min = 0, max = 0;
    bool follow_cpus = false;  // nothing was said: track available_cpus()
  };
  pool_core(const pool_options& options, const worker_counts& counts);
  // Runs every job already submitted, then joins the workers.
  ~pool_core();
  pool_core(const pool_core&) = delete;
  pool_core& operator=(const pool_core&) = delete;

  // The number of workers the pool keeps running now: pool_options::workers
  // at the start, then within [min_workers(), max_workers()] as the pool
  // scales (docs/scheduler.md, "Scaling").
  std::size_t size() const noexcept { return size_.load(std::memory_order_relaxed); }
  std::size_t min_workers() const noexcept;
  std::size_t max_workers() const noexcept;
  // New bounds (pool::resize); the size moves into them at once. Throws
  // std::invalid_argument for bounds the pool cannot have.
  void resize(std::size_t min, std::size_t max);
  // Slots counted so far: size() plus the spares that stood in for blocked
  // workers (retired spares are kept for reuse), and the one whose thread
  // is being started, counted first (start_thread()). Scans of the workers
  // (steals, wake-ups, the end rule) use this.
  std::size_t thread_count() const noexcept {
    return thread_count_.load(std::memory_order_acquire);
  }
  // Threads started so far: thread_count() less a slot whose start is under
  // way (only the last can be, starts being serialised), so it never
  // shrinks, and every index below it has a thread.
  std::size_t started_thread_count() const noexcept;
  // Unique among the pools of this process (never reused).
  std::uint64_t id() const noexcept { return id_; }
  const std::string& name() const noexcept { return name_; }

  // After worker w pushed onto its own deque: if any worker searches or
  // sleeps, share a job with them (work_stealing_deque::offer), and wake a
  // sleeper if nobody is searching. No fence: a sleeper registers with a
  // heavy fence (docs/scheduler.md, "Push and sleep"). A missed wake-up here
  // can only delay parallelism, never progress: the pusher pops its own job.
  FJORD_ALWAYS_INLINE void notify_local_push(worker& w) noexcept {
    light_fence();
    const census_count c = census_.load(std::memory_order_relaxed);
    // Inline, the case where only a sleeper the guest keeps asleep is idle:
    // a guest forking alone beside it then pays no call per fork.
    if (c.anyone_idle() &&
        !(c.one_sleeper_alone() && guest_in_place_.load(std::memory_order_relaxed) &&
          blocked_workers_.load(std::memory_order_relaxed) == 0)) [[unlikely]] {
      offer_pushed_work(w, c);
    }
  }
  void offer_pushed_work(worker& w, census_count c) noexcept;
  // While the guest holds a place, the pool's size() places are its threads:
  // forked work wakes a sleeper only if another would still sleep (the
  // threads awake, size() less the sleepers, plus the guest, stay within
  // size()), and a searcher stands aside (sleeps) when none sleeps.
  // Neither holds while a worker is blocked (blocked_workers_): what it
  // left on its deque has no owner to pop it.
  bool guest_fills_last_place(census_count c) const noexcept {
    return guest_in_place_.load(std::memory_order_relaxed) &&
           c.sleepers() + blocked_workers_.load(std::memory_order_relaxed) < 2;
  }
  bool guest_crowds_pool(census_count c) const noexcept {
    return guest_in_place_.load(std::memory_order_relaxed) && c.sleepers() == 0 &&
           blocked_workers_.load(std::memory_order_relaxed) == 0;
  }
  // The guest gives its place back (a park or a blocking section) or takes
  // it again; giving it back wakes a sleeper for work left waiting.
  void guest_gives_place() noexcept;
  void guest_takes_place() noexcept { guest_in_place_.store(true, std::memory_order_relaxed); }

  // Puts a job where it runs soonest: the calling worker's own deque (no
  // fence), else the injection path. Throws like inject().
  void push_or_inject(job* j) { push_or_inject(current_worker_of(this), j); }
  // The same for a caller that looked up w = current_worker_of(this) already.
  void push_or_inject(worker* w, job* j) {
    if (w != nullptr && w->deque.push(j)) {
      trace_point(trace_kind::fork, 0, trace_address(j));
      notify_local_push(*w);
      return;
    }
    inject(j, j, 1);
  }

  // At priority p: normal is push_or_inject(j); high and low go to that level's
  // queue, from any thread (docs/scheduler.md, "Priorities").
  void push_or_inject(job* j, priority p) { push_or_inject(current_worker_of(this), j, p); }
  void push_or_inject(worker* w, job* j, priority p) {
    if (p == priority::normal) {
      push_or_inject(w, j);
    } else {
      inject_at_level(p, j, j, 1);
    }
  }
  // Any thread: the chain first..last on level p's queue (not normal).
  // Throws like inject().
  void inject_at_level(priority p, job* first, job* last, std::uint64_t count);

  // Any thread: j runs on the pool's thread number `index` and on no other
  // (pool::post_to; docs/scheduler.md, "Pinned jobs"). Throws
  // std::out_of_range naming an index with no thread, and like inject()
  // once the pool is being destroyed; j is then not enqueued.
  void inject_to_thread(std::size_t index, job* j);

  // Any thread. Enqueues the chain first..last (linked through job::next),
  // `count` jobs, on the injection path.
  // Throws fjord::shutdown_error once the pool is being destroyed, unless the
  // caller is one of this pool's workers (a draining job may still fork).
  void inject(job* first, job* last, std::uint64_t count);
  // The same, always through the linked queue.
  void inject_to_shard(job* first, job* last, std::uint64_t count);

  // Hands back a coroutine that suspended to wait while running on this pool (a timer
  // or an async primitive woke it), from any thread, also while the pool is
  // being destroyed: it is work in progress, not new work, and the pool
  // cannot end before it runs (see note_waiting()).
  void resume_waiting(job* j) noexcept;
  // resume_waiting()'s path from outside, for the chain first..last (linked
  // through job::next, each already traced with note_wake()): one push onto
  // the injection queue and one wake-up check.
  void resume_waiting_chain(job* first, job* last, std::uint64_t count) noexcept;
  // Records the wake-up of the coroutine whose resumption j is.
  void note_wake(const job* j) const noexcept {
    trace_point(trace_kind::coroutine_wake, 0, trace_address(j), id_);
  }

  // A coroutine starts waiting while running on our worker w / runs again on
  // one. A pool does not end while any coroutine waits on it, so a
  // timer or a primitive never wakes a coroutine into a pool that is gone.
  // Each worker counts in its own counter (a plain load and store, no
  // read-modify-write: a channel operation or a sleep pays nothing for a
  // shared line); the count is their sum, which may be negative per worker
  // (a coroutine that waited here and ran again there). Relaxed: both
  // happen on a worker of ours in the middle of a job, before that worker
  // can go idle (which takes the idle mutex, where the end of the pool is
  // decided by waiting_count() with every worker idle).
  static void note_waiting(worker& w) noexcept { w.waiting.add(1); }
  void note_resumed() noexcept {
    if (worker* w = current_worker_of(this)) [[likely]] {
      w->waiting.add(~std::uint64_t{0});  // minus one, modulo 2^64
    } else {
      // Not on one of our threads (no such path today; kept safe).
      waiting_elsewhere_.fetch_sub(1, std::memory_order_relaxed);
    }
  }

  // A thread that is not one of our workers: its own lane into this pool,
  // made or adopted on first use, or nullptr when the pool has max_lanes
  // lanes in use by other threads (the caller then uses inject()).
  submission_lane* lane_for_this_thread();

  // A thread that is not one of our workers: builds one job in a slot of
  // its own lane (build(slot) returns the job's execute function) and
  // publishes it. false when the thread has no lane, or its lane is full or
  // busy with an outer submission of ours: use inject_to_shard(). Throws
  // fjord::shutdown_error once the pool is being destroyed, and whatever
  // build throws (the slot is then published empty).
  template <class Build>
  bool inject_through_lane(Build&& build) {
    submission_lane* lane = lane_for_this_thread();
    if (lane == nullptr) {
      return false;
    }
    lane_ring::slot* s = begin_lane_submission(*lane);
    if (s == nullptr) {
      return false;
    }
    job::execute_fn fn = lane_ring::run_nothing_fn();
    trace_point(trace_kind::inject, 0, trace_address(s), id_);
    try {
      fn = std::forward<Build>(build)(s);
    } catch (...) {
      lane->publish(s, fn);
      end_lane_submission(*lane);
      throw;
    }
    lane->publish(s, fn);
    end_lane_submission(*lane);
    return true;
  }

  [[noreturn]] static void throw_shutdown();
  [[noreturn]] static void throw_forked();

  // Refuses new work from outside, runs every job already submitted and
  // every coroutine waiting here, then joins the threads. Idempotent. From
  // one of the pool's own threads (std::exit called in a job) it cannot wait
  // for itself: it only refuses new work and returns false; the threads are
  // then left to the end of the process and the core must not be freed.
  // With abandon_waiting (the default pool at exit), coroutines still
  // waiting here are not waited for: like threads still running at exit,
  // they are left behind (the core is never freed then, so a late wake-up
  // only queues a job nobody runs).
  bool shut_down(bool abandon_waiting = false) noexcept;
  bool is_shut_down() const noexcept { return stopping_.load(std::memory_order_acquire); }

  // Blocks until the pool is quiescent: every thread idle in its main loop,
  // nothing queued, no coroutine waiting here (pool::wait_idle). Throws
  // std::logic_error on one of this pool's own threads, which would wait
  // for itself. Protocol: docs/scheduler.md, "Waiting for idle".
  void wait_idle();

  // Workers start no job once they see the pause (docs/scheduler.md,
  // "Pause"); resume() lets them go on. Any thread; idempotent.
  void pause() noexcept {
    paused_.store(1, std::memory_order_seq_cst);
    // Against shut_down(), which stores stopping_ and then resumes: either
    // it sees our pause or we see it stopping (seq_cst both sides), so a
    // pool being drained never stays paused.
    if (stopping_.load(std::memory_order_seq_cst)) {
      resume();
    }
  }
  void resume() noexcept;
  bool is_paused() const noexcept { return paused_.load(std::memory_order_relaxed) != 0; }

  // Whether a worker searches or sleeps right now: a hint (relaxed, and it
  // may change at once).
  bool has_idle_worker() const noexcept {
    return census_.load(std::memory_order_relaxed).anyone_idle();
  }
  // A busy worker looks at the injection queues once every this many jobs,
  // so an endless supply of its own jobs cannot starve submitted work.
  static constexpr std::uint32_t injection_check_interval = 61;
  // Inside job j on our worker w: whether the main loop runs j, rather than
  // a wait that helps inside another job (help_until, a group's or a join's
  // wait, which look at their latch between two jobs) or a guest's call.
  // Asked once, first thing, by the jobs that care: the answer is consumed.
  static bool runs_at_loop_level(worker& w, const job* j) noexcept {
    const bool at_loop_level = w.loop_job == j;
    w.loop_job = nullptr;
    return at_loop_level;
  }
  // Inside a job on our worker w, before w runs a job it has just taken
  // without going back to its loop (resume_chain): false when the loop has
  // something to do first, at this job boundary: its turn to look at
  // injected work, high-priority work, its runnext slot, a pause, a
  // retirement. True counts the job for the injection turn.
  bool may_run_next_here(worker& w) noexcept {
    if (w.ticks + 1 >= injection_check_interval || high_.queue.maybe_nonempty_hint() ||
        w.runnext.load(std::memory_order_relaxed) != nullptr ||
        paused_.load(std::memory_order_relaxed) != 0 || surplus_.load(std::memory_order_relaxed)) {
      return false;
    }
    ++w.ticks;
    return true;
  }
  // Runs j on w, one of our workers, inside a job w is running, as w's loop
  // runs a job it took: counted, traced, and taking w's place back if the
  // monitor presumed it blocked meanwhile.
  void run_here(worker& w, job* j) noexcept { run(w, j); }

  // A coroutine began waiting for an fd while no thread polls the reactor:
  // wake a parked worker (it polls instead of parking again). Also when one
  // searches: a searcher that finds work wakes nobody unless more work is
  // visible, and a waiting fd is not (docs/io.md, "Who polls").
  // Returns whether the pool had a sleeper to wake.
  bool notify_io_waiter() noexcept {
    if (census_.load(std::memory_order_seq_cst).sleepers() != 0) {
      wake_one_sleeper();
      return true;
    }
    return false;
  }
  // Coroutines wait for fds and nobody polls: wakes a parked worker of
  // `first` (may be null), else of any other live pool of the process.
  static void wake_a_poller(pool_core* first) noexcept;

 private:
  // After work was pushed on the linked queue: wake a sleeper if there is
  // one and nobody is searching. seq_cst: the producer's half of the Dekker
  // handshake with sleepers and leaving searchers, whose census updates are
  // seq_cst RMWs followed by seq_cst loads of the queues (docs/scheduler.md,
  // "Leaving the search").
  void notify_injected() noexcept {
    if (census_.load(std::memory_order_seq_cst).should_wake()) [[unlikely]] {
      wake_one_sleeper();
    }
  }

  // inject_through_lane's two halves. begin: a slot of the lane, or nullptr
  // when the lane is full or already busy; end: after the publication.
  lane_ring::slot* begin_lane_submission(submission_lane& lane) {
    if (lane.submitting()) [[unlikely]] {
      // Submitting from inside a submission (a callable's constructor posts):
      // the outer one holds the lane's next slot, so take the linked queue.
      return nullptr;
    }
    lane.begin();
    // Pairs with the destructor's heavy fence: either we see stopping_, or
    // it sees the lane busy and waits for our publication.
    light_fence();
    if (stopping_.load(std::memory_order_relaxed)) [[unlikely]] {
      lane.end();
      throw_shutdown();
    }
    lane_ring::slot* s = lane.next_free_slot();
    if (s == nullptr) [[unlikely]] {
      lane.end();
    }
    return s;
  }
  void end_lane_submission(submission_lane& lane) noexcept {
    // Against sleepers the light fence is enough: a worker going to sleep
    // registers with a heavy fence (docs/scheduler.md, "Push and sleep").
    // Against a searcher it is not: a searcher that leaves as the last one
    // looks for work with no heavy fence. So when we would rely on a
    // searcher (one searches, one sleeps), a full fence and a second look
    // make that exact ("Leaving the search"). Everything happens while the
    // lane is still busy: the destructor may free the pool once it is not.
    light_fence();
    census_count c = census_.load(std::memory_order_relaxed);
    if (c.sleepers() != 0) [[unlikely]] {
      if (c.searchers() != 0) {
        full_fence();
        c = census_.load(std::memory_order_relaxed);
      }
      if (c.should_wake()) {
        wake_one_sleeper();
      }
    }
    lane.end();
  }

 public:
  using deadline_t = std::chrono::steady_clock::time_point;

  // A thread that is no pool's worker runs fn(arg) as this pool's guest
  // (pool_options::callers_join; docs/scheduler.md, "Callers that join"):
  // on the pool's guest stack, as a worker that takes no injected work,
  // until fn returns. false, with fn not run, when the caller may not: the
  // option is off, another caller is the guest, the caller is a worker, or
  // the pool is paused, closing or from before a fork().
  bool call_as_guest(void (*fn)(void*) noexcept, void* arg) noexcept;

  // Waits for latch from any thread, at most until deadline; true when the
  // latch is done. One of our workers helps (runs this pool's jobs
  // meanwhile) while less than half of its stack is in use, and beyond that
  // blocks with compensation. Any other thread blocks; a worker of another
  // pool does so with compensation in its own pool (begin_blocking()).
  bool wait_until(completion_latch& latch, deadline_t deadline = deadline_t::max()) noexcept;
  void wait(completion_latch& latch) noexcept { static_cast<void>(wait_until(latch)); }

  // Whether worker w, the caller, may run more jobs on top of its stack
  // (less than half of it in use); past that it blocks instead of helping.
  // A compare with an address set when its thread started: this runs at
  // every task_group wait.
  static bool may_run_jobs_on_this_stack(const worker& w) noexcept {
    return reinterpret_cast<std::uintptr_t>(__builtin_frame_address(0)) >= w.stack_half;
  }

  // Our worker w waits for latch (fork-join: a join whose second half was
  // stolen, a group, a future of this pool), helping as wait_until says.
  bool help_until(worker& w, completion_latch& latch,
                  deadline_t deadline = deadline_t::max()) noexcept;

  // Signals one completion to latch's waiter, whoever it is. latch may be
  // destroyed by its waiter as soon as this starts to return.
  void count_down(completion_latch& latch) noexcept {
    const void* address = latch.futex_address();
    wake_latch_waiter(address, latch.count_down());
  }

  // Wakes the waiter a completion_latch operation returned (no_waiter:
  // nobody); address is the latch's futex_address(), taken before the
  // operation.
  void wake_latch_waiter(const void* address, std::uint32_t waiter) noexcept {
    if (waiter == completion_latch::foreign_waiter) {
      completion_latch::wake_foreign(address);
    } else if (waiter != completion_latch::no_waiter) {
      workers_[waiter - 1]->sleeper.unpark();
    }
  }

  // Compensation (docs/scheduler.md, "Blocking"). Our worker w is about to
  // block on something other than its own pool's work: it gives up its
  // place, counted as a phantom sleeper, and as soon as there is work a
  // spare thread (a retired one, or a new one up to
  // pool_options::max_spare_threads) takes it, so the pool keeps size()
  // threads running. end_blocking() takes the place back (dropping an
  // unused phantom); a surplus thread retires at its next job boundary.
  // Nests (only the outermost pair counts).
  void begin_blocking(worker& w) noexcept;
  void end_blocking(worker& w) noexcept;

  void report_unhandled(const std::exception_ptr& e) noexcept;
  void count_suppressed() noexcept { suppressed_.fetch_add(1, std::memory_order_relaxed); }

  pool_stats stats() const;

  // Memory for a job that runs on this pool and frees itself when done: the
  // calling worker's heap, or the pool's recycler for any other thread.
  void* allocate_job(std::size_t size, std::size_t align) {
    return allocate_job(current_worker_of(this), size, align);
  }
  // The same for a caller that looked up w = current_worker_of(this) already.
  void* allocate_job(worker* w, std::size_t size, std::size_t align) {
    if (w != nullptr) {
      return job_heap::allocate(&w->heap, size, align);
    }
    return recycler_.allocate(size, align);
  }

  std::int64_t live_heap_blocks() const noexcept;

  // For tests: phantom sleepers in the census now, and the stand-ins that
  // could be had for them (retired threads and threads not yet made); the
  // first never exceeds the second. And which threads are retired.
  std::size_t phantom_sleepers() const;
  std::size_t stand_ins() const;
  std::vector<std::size_t> retired_thread_indices() const;

  // Workers registered as thieves right now (for tests: none once the pool
  // is idle, since a worker registers only for one stalled-owner steal).
  std::uint32_t registered_thieves() const noexcept {
    return census_.load(std::memory_order_relaxed).thieves();
  }

  // Coroutines waiting on this pool right now (for tests: exact once the
  // pool is quiet, a snapshot of separate counters otherwise).
  std::int64_t waiting_coroutines() const noexcept { return waiting_count(); }

  // Submission lanes made so far (for tests: lanes of finished threads are
  // reused, so this stays at the peak number of threads submitting at once).
  std::size_t lane_count() const noexcept { return lane_count_.load(std::memory_order_acquire); }

  // The public object owning this core: set by fjord::pool, cleared when
  // the pool object goes while the core is left running (destroyed from one
  // of its own threads), so current_pool() never returns a dead object.
  std::atomic<void*> public_pool{nullptr};

 private:
  // Foreign work that no lane takes (chains from post_bulk, threads without
  // a lane, full lanes) enters through a linked queue.
  struct alignas(false_sharing_range) shard {
    injection_queue queue;
    alignas(false_sharing_range) std::atomic<std::uint32_t> submitters{0};
  };

  // inject_to_shard / inject_at_level: the chain on s, with the shutdown
  // handshake for callers from outside.
  void push_to_shard(shard& s, job* first, job* last, std::uint64_t count);
  // The constructor's body: the shards, then size() threads.
  void start();
  static void thread_main(void* w) noexcept;
  void run_thread_hook(bool start, std::size_t index) noexcept;
  static void forget_lanes_in_fork_children() noexcept;
  void worker_main(worker& w) noexcept;
  // Makes the next worker (index thread_count()) and starts its thread;
  // 0, or the error that refused it (the slot is kept for a later try).
  // as_searcher: the census counts it as a searcher already.
  int start_thread(bool as_searcher) noexcept;
  // Under the idle mutex: turns one phantom sleeper (a blocked worker's
  // missing thread) into a stand-in, a retired thread to unpark (woken) or
  // a new one to start (start); false if there is no phantom.
  bool activate_stand_in_locked(worker*& woken, bool& start) noexcept;
  void start_stand_in() noexcept;
  // A surplus thread with an empty deque leaves the running set until a
  // blocked worker needs a stand-in (returns at once otherwise); false when
  // the pool has ended meanwhile.
  bool retire(worker& w) noexcept;
  // Under the idle mutex, after the running set, the retired list or the
  // threads reserved changed: publishes the surplus flag and the count of
  // blocked workers.
  void publish_thread_counts_locked() noexcept;
  // Under the idle mutex: threads a phantom sleeper could still be answered
  // with (retired, or not yet made).
  std::size_t stand_ins_locked() const noexcept;
  // Under the idle mutex, after a stand-in was taken for something else (a
  // retired thread rejoining for pinned work, growth): phantoms never
  // outnumber the stand-ins that could be had, or every push would take the
  // idle mutex to activate one that cannot be.
  void drop_unanswerable_phantoms_locked() noexcept;
  // Under the idle mutex: w leaves the running set for a blocking section
  // (or the monitor presumes it blocked); true when a phantom sleeper now
  // stands for it (the caller then fences and looks for work, as
  // begin_blocking says). rejoin_running_locked() is the way back.
  bool leave_running_locked() noexcept;
  void rejoin_running_locked(worker& w) noexcept;
  FJORD_COLD void end_presumed_block(worker& w) noexcept;
  void clear_presumed_block_locked(worker& w) noexcept;
  // Under the idle mutex: one more thread in the running set, a retired one
  // (woken) or a new one to start (start), counted as a searcher; false
  // when every slot is taken.
  bool add_running_thread_locked(worker*& woken, bool& start) noexcept;
  // After add_running_thread_locked() said start: starts it, or undoes the
  // count (also the size when `grown`) if the system refuses a thread.
  void start_added_thread(bool grown) noexcept;
  // After size_ was raised by n: n more threads join the running set (a
  // slot the system refuses lowers size_ again).
  void add_workers(std::size_t n) noexcept;
  // Under the idle mutex: n places size_ promised could not be had; size_
  // drops by n, never below min_workers (nor 1).
  void shrink_after_refusal_locked(std::size_t n) noexcept;
  // sleep()'s way out after idle_timeout with nothing to do (w is out of
  // the idle list and the census already): w leaves the running set when
  // the pool is above min_workers and no work is visible; true when it did.
  bool leave_after_idle_timeout(worker& w) noexcept;
  // Under the idle mutex: w (awake, its deque empty) leaves the running set
  // for the retired list.
  void leave_for_retired_list_locked(worker& w) noexcept;
  // A retired thread waits here to be activated; false when the pool ended.
  bool park_retired(worker& w) noexcept;
  // The scaling monitor's thread and one look at the pool (pool_scaling.cpp).
  void start_monitor();
  void stop_monitor() noexcept;
  void monitor_main() noexcept;
  void monitor_tick() noexcept;
  // Under the idle mutex: how often the monitor looks (0: nothing to watch).
  std::chrono::nanoseconds monitor_interval_locked() const noexcept;
  // The monitor's looks: workers inside one job for replace_blocked_after
  // using under half a CPU while work waits lose their place to a stand-in;
  // work that waits twice in a row with nobody free adds a worker.
  void replace_blocked_workers(std::chrono::steady_clock::time_point now, bool work_waits) noexcept;
  void grow_if_starved() noexcept;
  // New bounds; the size moves into them (resize(), or the monitor following
  // available_cpus(): from_monitor applies only while the pool follows).
  void set_bounds(std::size_t min, std::size_t max, bool follow_cpus, bool from_monitor) noexcept;
  // Under the idle mutex: the monitor waits for a worker to wake.
  void wake_monitor_locked() noexcept;
  // Under the idle mutex, once the destructor began: true (and exit_ set) when
  // nothing can create work any more.
  bool try_end_locked() noexcept;
  // Under the idle mutex: every thread idle in its main loop or retired (a
  // blocked or paused worker has a job in hand, a thread being started is
  // neither), no coroutine waiting here, nothing queued.
  bool quiescent_locked() const noexcept;
  // Under the idle mutex, from a thread that just went idle: tells wait_idle()
  // callers when the pool became quiescent.
  void announce_if_quiescent_locked() noexcept;
  // Our worker took j while the pool is paused: puts it back and waits for
  // resume() (or the destructor).
  void hold_while_paused(worker& w, job* j) noexcept;
  // A blocked worker waiting for one of its own latches.
  bool block_until(worker& w, completion_latch& latch, deadline_t deadline) noexcept;
  // Any thread but our workers: spins for up to the spin budget (yielding
  // now and then), then sleeps on the latch's futex.
  bool wait_foreign(completion_latch& latch, deadline_t deadline) const noexcept;
  void run(worker& w, job* j) noexcept {
    if (w.counters.jobs_run.bump_and_read() % job_duration_sample_interval == 0) [[unlikely]] {
      run_timed(w, j);
    } else {
      trace_point(trace_kind::job_begin, 0, trace_address(j));
      run_job(j);
      // j may be gone: only its address is recorded.
      trace_point(trace_kind::job_end, 0, trace_address(j));
    }
    // The monitor took w for blocked inside that job and gave its place to
    // a stand-in: take it back (docs/scheduler.md, "Scaling").
    if (w.presumed_blocked.load(std::memory_order_relaxed)) [[unlikely]] {
      end_presumed_block(w);
    }
  }
  // FJORD_STATS=1: the summary line on stderr once the pool has ended.
  void print_stats_if_asked() const noexcept;
  // run() for the jobs whose duration is sampled (pool_stats.hpp).
  FJORD_NOINLINE void run_timed(worker& w, job* j) noexcept;
  // The next job for w: its own deque (and, now and then, the injection
  // queues first), else a search; nullptr when the search gave up.
  job* next_job(worker& w, const completion_latch* until, deadline_t deadline) noexcept;
  job* take_injected(worker& w) noexcept;
  // Normal-priority work from the lanes and shards into batch; the count.
  std::size_t take_normal(worker& w, job** batch) noexcept;
  // At a job boundary every injection_check_interval jobs: low (every
  // fourth time), then normal; nullptr sends the caller to its deque, so
  // neither injected normal work nor the deque starves under a flood of
  // high-priority work.
  job* take_injected_fairly(worker& w) noexcept;
  // One job from s: high and low jobs are never parked on a deque, where
  // they would lose their level.
  static job* take_one(shard& s) noexcept;
  // The batch taken from an injection path: batch[0] to run, the rest
  // pushed on w's deque oldest first.
  job* keep_batch(worker& w, job** batch, std::size_t n) noexcept;
  std::size_t take_from_lanes(worker& w, job** batch) noexcept;
  static std::size_t take_from_queue(shard& s, job** batch) noexcept;
  // One steal attempt on each other worker's shared jobs (no fence, no
  // registration), asking owners with nothing shared to share.
  job* steal_round(worker& w) noexcept;
  // After an owner has kept private jobs, sharing none and neither pushing
  // nor popping, for stall_limit: registers as a thief (a heavy fence),
  // takes its oldest private job, deregisters (docs/scheduler.md, "Stalled
  // owners").
  job* steal_from_stalled_owner(worker& w, std::chrono::steady_clock::time_point now) noexcept;
  static constexpr std::chrono::microseconds stall_limit{10};
  job* search(worker& w, const completion_latch* until, deadline_t deadline) noexcept;
  void become_searcher(worker& w) noexcept;
  void stop_searching(worker& w) noexcept;
  // search()'s way out: the searching time and trace event.
  static void end_search(worker& w) noexcept;
  // A coroutine that has sat in another worker's runnext slot for at least
  // runnext_grace ticks (its owner is running something long), or nullptr.
  job* steal_runnext(worker& w) noexcept;
  // About 4-8 us at 2-4 GHz (Go's thieves wait 3 us before taking runnext).
  static constexpr std::uint64_t runnext_grace = 16384;
  bool any_work_visible() const noexcept;
  // Its first half: work on the injection path (lanes, shards, priorities).
  bool injected_work_visible() const noexcept;
  // A job waits in some thread's inbox (pinned jobs are not in
  // any_work_visible(): a worker that cannot take them must not stay awake
  // for them, but the pool is neither idle nor done while one waits).
  bool any_pinned_work() const noexcept;
  // The next job posted to w alone, or nullptr (w's own thread only).
  static job* take_pinned(worker& w) noexcept;
  // Under the idle mutex: a retired w with jobs in its inbox rejoins the
  // running set to run them (the surplus then retires again).
  void rejoin_for_pinned_work_locked(worker& w) noexcept;
  // Parks w until woken (or deadline); returns false when the pool has ended.
  bool sleep(worker& w, const completion_latch* until, deadline_t deadline) noexcept;
  // lend_this_cpu: the caller is about to block (begin_blocking); the woken
  // thread is pinned to the caller's CPU until it runs, so that it takes
  // that CPU instead of queueing behind a busy one while this one idles
  // (docs/scheduler.md, "Blocking").
  FJORD_COLD void wake_one_sleeper(bool lend_this_cpu = false) noexcept;
  // Under the idle mutex: pins target to the calling thread's CPU (if its
  // home CPUs allow) and marks it to restore them when it wakes.
  static void lend_cpu_locked(worker& target) noexcept;
  // After a park: w restores its home CPUs if a blocker lent it its own.
  static void return_lent_cpu(worker& w, bool lent) noexcept;
  // The process's list of pools wake_a_poller() looks through.
  void join_live_pools();
  void leave_live_pools() noexcept;
  // A busy worker's look at the reactor between jobs (no wait), when
  // coroutines wait for fds and nobody polls.
  void poll_io_between_jobs() noexcept;
  // A searcher's look at the reactor: polls without waiting when coroutines
  // wait for fds and nobody polls; returns a job of ours it resumed.
  job* poll_io_while_searching(worker& w) noexcept;
  // After this thread polled: resumes the coroutines whose fds are ready
  // and hands the poller role on (docs/io.md, "Who polls").
  void dispatch_io(reactor& r) noexcept;
  void wake_all() noexcept;
  std::size_t shard_for_this_thread() const noexcept;
  // call_as_guest()'s way out: what the call left on the guest's deque goes
  // to the injection queue, then the place is free again.
  void leave_guest(worker& g) noexcept;
  // Parks w, registered as latch's waiter, until the latch is done or the
  // deadline passed (a blocked worker's wait, and a guest's sleep).
  static void park_until(worker& w, const completion_latch& latch, deadline_t deadline) noexcept;
  // The deques thieves look at: the threads', then the guest's (when the
  // pool has one). i < victim_count(n), n = thread_count().
  std::size_t victim_count(std::size_t n) const noexcept { return n + (guest_ != nullptr ? 1 : 0); }
  worker* victim(std::size_t i, std::size_t n) const noexcept {
    return i < n ? workers_[i] : guest_;
  }

  alignas(false_sharing_range) census census_;
  alignas(false_sharing_range) std::atomic<bool> stopping_{false};
  // Set by the destructor once no foreign submitter can still be inside
  // inject(); only then may idle workers decide that the pool has drained.
  std::atomic<bool> drained_{false};
  std::atomic<bool> exit_{false};
  std::atomic<std::uint64_t> suppressed_{0};
  // Coroutines waiting on this pool (timers, async primitives): the sum of
  // the workers' counts and this one (see note_waiting()).
  std::int64_t waiting_count() const noexcept;
  std::atomic<std::int64_t> waiting_elsewhere_{0};
  // Threads inside resume_waiting() from outside (see there).
  std::atomic<std::uint32_t> wakers_{0};
  std::atomic<bool> abandon_waiting_{false};  // see shut_down()
  // Threads from outside inside inject_to_thread() (the shards' submitter
  // count, for the inboxes: see shut_down()).
  std::atomic<std::uint32_t> pinned_submitters_{0};
  // More threads run than size(): one retires at its next job boundary.
  alignas(false_sharing_range) std::atomic<bool> surplus_{false};
  // 1 while paused; the futex paused workers sleep on. On surplus_'s line:
  // the main loop reads both between jobs.
  std::atomic<std::uint32_t> paused_{0};
  // Until then (steady_ns), surplus goes to a thread back from blocking
  // (worker::preferred_to_retire) rather than to others. Read only once
  // surplus_ is seen set.
  std::atomic<std::uint64_t> retire_preferred_until_{0};
  static constexpr std::uint64_t retire_preference_ns = 3'000'000;  // about a time slice
  // Bumped (and futex-woken) when a thread going idle finds the pool
  // quiescent while wait_idle() callers wait; they sleep on it.
  alignas(false_sharing_range) std::atomic<std::uint32_t> idle_epoch_{0};
  // wait_idle() callers; written under the idle mutex, read without it by
  // threads going idle (docs/scheduler.md, "Waiting for idle").
  std::atomic<std::uint32_t> idle_waiters_{0};

  // Workers to keep running (pool_options::workers, then as scaling or
  // resize() sets it). Written under the idle mutex, read anywhere.
  std::atomic<std::size_t> size_;
  const std::size_t max_threads_;        // max_workers at the start + max_spare_threads
  const std::size_t placement_workers_;  // threads below this index are workers for pin_each_worker
  const std::size_t stack_size_;
  const std::size_t deque_capacity_;
  const std::string name_;
  // Slots for max_threads_ workers; the first thread_count_ are made. A slot
  // never changes once made, so thieves index it without a lock.
  // (Owned by cold_: this header does without <memory>, which brings
  // <ostream> with it.)
  std::vector<worker*> workers_;
  std::atomic<std::size_t> thread_count_{0};
  // The guest's slot (workers_[max_threads_], so that a latch names it as
  // it names a worker), or nullptr when callers may not join.
  worker* guest_ = nullptr;
  // The guest's slot: guest_free, guest_busy (a caller holds it) or
  // guest_leaving (its last touches of the pool, after which it stores
  // guest_free). seq_cst: against shut_down() and wait_idle(), which store
  // and then look at it. shut_down() waits for guest_free, so nothing a
  // leaving guest touches is freed under it; wait_idle() counts only busy.
  static constexpr std::uint32_t guest_free = 0, guest_busy = 1, guest_leaving = 2;
  alignas(false_sharing_range) std::atomic<std::uint32_t> guest_state_{guest_free};
  // Whether the guest holds one of the pool's size() places: from entry
  // until it leaves, except while it parks or blocks (docs/scheduler.md,
  // "The caller takes a worker's place"). Only the guest writes it. Mostly
  // relaxed: it steers wake-ups of forked work, and a stale value costs a
  // wake-up too many or one too few, never progress: a job on a deque is
  // popped by its owner unless the owner blocks, and a blocking owner hands
  // its jobs on (begin_blocking). seq_cst only where a worker stands aside
  // against the guest giving its place back (sleep(), guest_gives_place()).
  std::atomic<bool> guest_in_place_{false};
  // Workers out of the running set but not retired: blocked, or presumed
  // blocked by the monitor (threads reserved, less running, less retired).
  // Their deques have no owner to pop them, so while one is blocked the
  // guest never counts as filling the pool, whether a stand-in took the
  // place, none could be had, the system refused one, or a resize moved
  // the size under it. Written under the idle mutex
  // (publish_thread_counts_locked), read relaxed beside guest_in_place_,
  // with the same cost of a stale value.
  std::atomic<std::uint32_t> blocked_workers_{0};
  job_recycler recycler_;       // destroyed after the workers' threads are joined
  std::vector<shard*> shards_;  // owned by cold_
  // Queues of the high and low priority levels (normal work takes the lanes
  // and shards).
  shard high_;
  shard low_;

  std::size_t shard_mask_ = 0;
  std::chrono::nanoseconds spin_budget_;

  // Lanes of foreign threads. The array only grows while the pool lives; a
  // lane whose thread left is adopted by the next thread that needs one.
  static constexpr std::size_t max_lanes = 64;
  const std::uint64_t id_;  // never reused: names this pool in thread caches
  // The fork() generation the threads were made in (fork_generation.hpp).
  const unsigned fork_generation_;
  std::array<std::atomic<submission_lane*>, max_lanes> lanes_{};
  std::atomic<std::size_t> lane_count_{0};

  // The cold part (detail/pool_core_cold.hpp): the options only starting a
  // thread or reporting an error reads, and the state behind the idle, thread
  // and lane mutexes. Kept out of this header, which every join and group
  // includes: its std::function, std::mutex and <thread> members made
  // <fjord/join.hpp> compile twice as slowly (#11).
  // Owned: freed by the destructor (or the constructor when it throws).
  struct cold_state;
  cold_state* const cold_;
};

// fjord::default_pool()'s core, made if need be; nullptr when it cannot be
// made (a bad FJORD_WORKERS) or is shut down (static destruction).
pool_core* default_pool_core_if_open() noexcept;

}  // namespace fjord::detail
