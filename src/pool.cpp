// Construction, submission from outside, shutdown and statistics.

#include <pthread.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <new>
#include <stdexcept>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

#include "fjord/detail/blocking_section.hpp"
#include "fjord/detail/fork_generation.hpp"
#include "fjord/detail/futex.hpp"
#include "fjord/detail/memory_heap.hpp"
#include "fjord/detail/per_thread.hpp"
#include "fjord/detail/pool_core.hpp"
#include "fjord/detail/pool_core_cold.hpp"
#include "fjord/detail/worker_placement.hpp"
#include "fjord/detail/worker_thread.hpp"
#include "fjord/pool.hpp"
#include "fjord/shutdown_error.hpp"

namespace fjord::detail {

namespace {

constexpr std::size_t max_workers = 4096;
// Workers and spares both count in the census.
static_assert(2 * max_workers <= census::max_threads);
constexpr std::size_t max_shards = 16;

std::atomic<std::uint64_t> next_pool_id{1};

std::size_t next_power_of_two(std::size_t n) {
  std::size_t p = 1;
  while (p < n) {
    p <<= 1;
  }
  return p;
}

constexpr std::size_t min_stack_size = std::size_t{64} << 10;
constexpr std::size_t max_stack_size = std::size_t{1} << 30;
constexpr std::chrono::microseconds max_spin_budget = std::chrono::seconds(1);

void check_count(const char* field, std::size_t n) {
  if (n == 0 || n > max_workers) {
    throw std::invalid_argument(std::string("fjord::pool_options::") + field + " must be in [1, " +
                                std::to_string(max_workers) + "], got " + std::to_string(n));
  }
}

constexpr std::chrono::milliseconds max_scaling_time = std::chrono::hours(24);

// Checks every field; returns the worker counts.
pool_core::worker_counts validated_worker_counts(const pool_options& o) {
  if (o.workers) {
    check_count("workers", *o.workers);
  }
  if (o.min_workers) {
    check_count("min_workers", *o.min_workers);
  }
  if (o.max_workers) {
    check_count("max_workers", *o.max_workers);
  }
  if (o.min_workers && o.max_workers && *o.min_workers > *o.max_workers) {
    throw std::invalid_argument("fjord::pool_options::min_workers (" +
                                std::to_string(*o.min_workers) + ") must not exceed max_workers (" +
                                std::to_string(*o.max_workers) + ")");
  }
  if (o.idle_timeout < std::chrono::milliseconds(1) || o.idle_timeout > max_scaling_time) {
    throw std::invalid_argument("fjord::pool_options::idle_timeout must be in [1ms, 24h], got " +
                                std::to_string(o.idle_timeout.count()) + "ms");
  }
  if (o.replace_blocked_after.count() != 0 &&
      (o.replace_blocked_after < std::chrono::microseconds(100) ||
       o.replace_blocked_after > max_scaling_time)) {
    throw std::invalid_argument(
        "fjord::pool_options::replace_blocked_after must be 0 (off) or in [100us, 24h], got " +
        std::to_string(o.replace_blocked_after.count()) + "us");
  }
  if (o.spin_budget.count() < 0 || o.spin_budget > max_spin_budget) {
    throw std::invalid_argument(
        "fjord::pool_options::spin_budget must be in [0us, 1000000us], got " +
        std::to_string(o.spin_budget.count()) + "us");
  }
  if (o.deque_capacity < 64 || (o.deque_capacity & (o.deque_capacity - 1)) != 0 ||
      o.deque_capacity > (std::size_t{1} << 30)) {
    throw std::invalid_argument(
        "fjord::pool_options::deque_capacity must be a power of two in [64, 2^30], got " +
        std::to_string(o.deque_capacity));
  }
  if (o.stack_size < min_stack_size || o.stack_size > max_stack_size) {
    throw std::invalid_argument(
        "fjord::pool_options::stack_size must be in [65536, 2^30] bytes, got " +
        std::to_string(o.stack_size));
  }
  if (o.max_spare_threads > max_workers) {
    throw std::invalid_argument("fjord::pool_options::max_spare_threads must be at most " +
                                std::to_string(max_workers) + ", got " +
                                std::to_string(o.max_spare_threads));
  }
  if (o.cpus) {
    validate_cpus(*o.cpus);
  } else if (o.pin_each_worker) {
    throw std::invalid_argument(
        "fjord::pool_options::pin_each_worker needs pool_options::cpus to say which CPUs");
  }
  pool_core::worker_counts c;
  c.follow_cpus = !o.workers && !o.min_workers && !o.max_workers && !o.cpus;
  c.start = o.workers.value_or(std::clamp(o.cpus ? o.cpus->size() : available_cpus(),
                                          o.min_workers.value_or(1),
                                          o.max_workers.value_or(max_workers)));
  c.min = o.min_workers.value_or(c.start);
  c.max = o.max_workers.value_or(c.start);
  if (c.start < c.min || c.start > c.max) {
    throw std::invalid_argument("fjord::pool_options::workers (" + std::to_string(c.start) +
                                ") must lie in [min_workers, max_workers] = [" +
                                std::to_string(c.min) + ", " + std::to_string(c.max) + "]");
  }
  return c;
}

}  // namespace

pool_core::pool_core(const pool_options& options)
    : pool_core(options, validated_worker_counts(options)) {}

pool_core::pool_core(const pool_options& options, const worker_counts& counts)
    : size_(counts.start),
      max_threads_(counts.max + options.max_spare_threads),
      placement_workers_(counts.max),
      stack_size_(options.stack_size),
      deque_capacity_(options.deque_capacity),
      name_(options.name),
      workers_(max_threads_ + 1, nullptr),  // the last for the guest
      spin_budget_(options.spin_budget),
      id_(next_pool_id.fetch_add(1, std::memory_order_relaxed)),
      fork_generation_(fork_generation()),
      cold_(new cold_state(options, counts)) {
  try {
    start();
  } catch (...) {
    // Threads that did start are joined first (idempotent).
    shut_down();
    delete cold_;
    throw;
  }
}

void pool_core::start() {
  init_asymmetric_fences();
  forget_lanes_in_fork_children();
  const std::size_t start_count = size();
  const std::size_t shards = next_power_of_two(std::min(placement_workers_, max_shards));
  cold_->worker_storage.resize(max_threads_);
  if (cold_->callers_join) {
    cold_->guest = std::make_unique<worker>(*this, static_cast<std::uint32_t>(max_threads_),
                                            deque_capacity_, census_);
    cold_->guest->guest = true;
    guest_ = workers_[max_threads_] = cold_->guest.get();
    const std::string guest_name = name_ + "-guest";
    guest_name.copy(cold_->guest_stack_name, sizeof(cold_->guest_stack_name) - 1);
  }
  cold_->shard_storage.reserve(shards);
  shards_.reserve(shards);
  for (std::size_t i = 0; i < shards; ++i) {
    shards_.push_back(cold_->shard_storage.emplace_back(std::make_unique<shard>()).get());
  }
  shard_mask_ = shards - 1;
  // Reserved up front: the noexcept paths that push on them never allocate.
  cold_->idle.reserve(max_threads_);
  cold_->retired.reserve(max_threads_);
  cold_->threads.reserve(max_threads_);
  {
    std::lock_guard lock(cold_->idle_mutex);
    cold_->reserved = start_count;
    cold_->running = start_count;
  }
  for (std::size_t i = 0; i < start_count; ++i) {
    if (const int rc = start_thread(/*as_searcher=*/false); rc != 0) {
      {
        std::lock_guard lock(cold_->idle_mutex);
        cold_->reserved = cold_->running = i;
      }
      shut_down();
      throw std::system_error(rc, std::generic_category(),
                              "fjord::pool: could not start worker thread " + std::to_string(i));
    }
  }
  join_live_pools();
  bool watch = false;
  {
    std::lock_guard lock(cold_->idle_mutex);
    watch = monitor_interval_locked().count() != 0;
  }
  if (watch) {
    start_monitor();
  }
}

namespace {

// The pools of this process that are not shutting down, for a poller
// handing its role on (docs/io.md, "Who polls"). Leaked: pools end during
// static destruction too. In a fork() child the parent's pools have no
// threads, so the list starts over empty.
struct live_pool_list {
  std::mutex mutex;
  std::vector<pool_core*> pools;  // guarded
};

live_pool_list* live_pools_in_this_process = nullptr;

void forget_live_pools_in_child() noexcept {
  if (live_pools_in_this_process != nullptr) {
    ::new (static_cast<void*>(live_pools_in_this_process)) live_pool_list;  // the old one leaks
  }
}

live_pool_list& live_pools() {
  static live_pool_list* const list = [] {
    live_pools_in_this_process = new live_pool_list;  // NOLINT: leaked on purpose
    on_fork_child(&forget_live_pools_in_child);
    return live_pools_in_this_process;
  }();
  return *list;
}

}  // namespace

void pool_core::join_live_pools() {
  live_pool_list& l = live_pools();
  const std::lock_guard lock(l.mutex);
  l.pools.push_back(this);
}

void pool_core::leave_live_pools() noexcept {
  live_pool_list& l = live_pools();
  const std::lock_guard lock(l.mutex);
  std::erase(l.pools, this);
}

void pool_core::wake_a_poller(pool_core* first) noexcept {
  if (first != nullptr && first->notify_io_waiter()) {
    return;
  }
  // Its workers are all awake (busy ones poll between jobs), or it has
  // none: a parked worker of any other pool polls as well. Under the list's
  // mutex, so no pool we look at can end meanwhile.
  live_pool_list& l = live_pools();
  const std::lock_guard lock(l.mutex);
  for (pool_core* p : l.pools) {
    if (p != first && p->notify_io_waiter()) {
      return;
    }
  }
}

pool_core::~pool_core() {
  // fjord::pool frees a core only after shut_down() returned true.
  shut_down();
  delete cold_;
}

int pool_core::start_thread(bool as_searcher) noexcept {
  std::lock_guard lock(cold_->threads_mutex);
  const std::size_t index = thread_count_.load(std::memory_order_relaxed);
  worker* w = workers_[index];
  if (w == nullptr) {
    try {
      cold_->worker_storage[index] = std::make_unique<worker>(
          *this, static_cast<std::uint32_t>(index), deque_capacity_, census_);
    } catch (...) {
      return ENOMEM;
    }
    w = workers_[index] = cold_->worker_storage[index].get();
  }
  // A stand-in is counted as a searcher by whoever started it; pthread_create
  // publishes this to the new thread.
  w->searching = as_searcher;
  // Counted before its thread exists. Counted after, a starter that lost
  // the CPU between the two left the new thread unable to steal (a
  // stand-in's work often sits on the deque of the worker it stands in
  // for) and asleep through a wake_all() that read the count in between:
  // the pool's end, a drain, a resize. A reader that counts a slot whose
  // start then fails finds an empty deque or leaves a stale token; pinning
  // waits for the thread itself (inject_to_thread()). Release: a thief that
  // sees the count sees the worker (its deque). seq_cst: against
  // wake_all()'s load; if that load misses this store, its cause (stored
  // before it) is visible to the new thread, which looks after its start.
  thread_count_.store(index + 1, std::memory_order_seq_cst);
  pthread_t thread{};
  const int rc = start_worker_thread(thread, stack_size_, &thread_main, w);
  if (rc != 0) {
    thread_count_.store(index, std::memory_order_release);
    return rc;  // the slot stays made, for the next attempt
  }
  w->has_thread.store(true, std::memory_order_relaxed);
  cold_->threads.push_back(thread);
  return 0;
}

void pool_core::thread_main(void* w) noexcept {
  auto& self = *static_cast<worker*>(w);
  pool_core& pool = *self.pool;
  std::string name;
  try {
    name = pool.name_ + "-" + std::to_string(self.index);
    name.resize(std::min<std::size_t>(name.size(), 15));  // Linux keeps 15 bytes
  } catch (...) {
    name = "fjord";
  }
  pthread_setname_np(pthread_self(), name.c_str());
  const worker_thread_scope stack(name.c_str());
  if (const std::uintptr_t top = stack_top_of_this_thread(); top > pool.stack_size_ / 2) {
    self.stack_half = top - pool.stack_size_ / 2;
  }
  if (!pool.cold_->cpus.empty()) {
    // Checked against the process's mask when the pool was made; a mask
    // narrowed since then leaves the thread where the system allows it.
    static_cast<void>(place_this_thread(pool.cold_->cpus, pool.cold_->pin_each_worker, self.index,
                                        pool.placement_workers_));
  }
  // A stand-in starts counted as a searcher: not during a hook, which may
  // take long (pushers would wake nobody meanwhile).
  if (self.searching) {
    pool.stop_searching(self);
  }
  // The start hook runs as one of the pool's threads (wait_idle() from it
  // is refused, close() only refuses new work, a post goes to its own
  // deque). The stop hook runs once the pool has ended, as a thread of no
  // pool: a post from it throws shutdown_error (nobody would run it).
  self.tid.store(static_cast<int>(::gettid()), std::memory_order_relaxed);
  self.has_thread.store(true, std::memory_order_relaxed);  // its start hook may pin jobs to it
  set_current_worker(&self);
  pool.run_thread_hook(/*start=*/true, self.index);
  // Apart from the set-up above: the hot loop stays small enough to inline
  // next_job() into it.
  pool.worker_main(self);
  pool.run_thread_hook(/*start=*/false, self.index);
}

void pool_core::publish_thread_counts_locked() noexcept {
  surplus_.store(cold_->running > size(), std::memory_order_relaxed);
  // Every reserved thread runs, is retired, or is blocked.
  const std::size_t not_blocked = cold_->running + cold_->retired.size();
  blocked_workers_.store(
      static_cast<std::uint32_t>(cold_->reserved > not_blocked ? cold_->reserved - not_blocked : 0),
      std::memory_order_relaxed);
}

void pool_core::run_thread_hook(bool start, std::size_t index) noexcept {
  const std::function<void(std::size_t)>& hook =
      start ? cold_->on_thread_start : cold_->on_thread_stop;
  if (!hook) {
    return;
  }
  try {
    hook(index);
  } catch (...) {
    report_unhandled(std::current_exception());
  }
}

bool pool_core::shut_down(bool abandon_waiting) noexcept {
  if (current_worker_of(this) != nullptr) {
    // A job called std::exit (or destroyed its own pool): refuse new work
    // from outside, and leave the threads to the end of the process.
    stopping_.store(true, std::memory_order_seq_cst);
    return false;
  }
  if (fork_generation_ != fork_generation()) {
    // The child of a fork(): our threads do not exist here, and a lock may
    // be held by one of them. Refuse work, leave the rest alone.
    stopping_.store(true, std::memory_order_seq_cst);
    return false;
  }
  // No longer one to hand the poller role to: its workers end.
  leave_live_pools();
  // A worker of another pool destroying this one hands its place to a
  // spare while it waits: our jobs may need its pool.
  const blocking_section blocking;
  std::lock_guard once(cold_->shut_down_mutex);
  if (cold_->joined) {
    return true;
  }
  stopping_.store(true, std::memory_order_seq_cst);
  // Submitters that passed their stopping_ check before we set it finish
  // their push; later ones see stopping_ and throw. For lanes the heavy
  // fence pairs with the light fence in begin_lane_submission: a lane
  // owner either sees stopping_ or is seen busy here (and its lane, since
  // lane_count_ was stored before busy_).
  heavy_fence();
  for (std::size_t i = 0; i < lane_count_.load(std::memory_order_acquire); ++i) {
    const submission_lane* lane = lanes_[i].load(std::memory_order_acquire);
    while (lane->busy()) {
      std::this_thread::yield();
    }
  }
  const auto wait_for_submitters = [](const shard& s) {
    while (s.submitters.load(std::memory_order_seq_cst) != 0) {
      std::this_thread::yield();
    }
  };
  wait_for_submitters(high_);
  wait_for_submitters(low_);
  for (const auto& s : shards_) {
    wait_for_submitters(*s);
  }
  while (pinned_submitters_.load(std::memory_order_seq_cst) != 0) {
    std::this_thread::yield();
  }
  // A paused pool could never drain (nor could a guest that waits for
  // queued work: it takes none, so a paused worker must run it).
  resume();
  // A caller that joined before it could see stopping_ finishes its call
  // (its leftovers reach the queues before it leaves); later ones see
  // stopping_ and hand their calls over, which throws. The wait may last a
  // whole call: it sleeps, in naps short enough to need no wake-up.
  for (std::uint32_t s = 0; (s = guest_state_.load(std::memory_order_seq_cst)) != guest_free;) {
    futex_wait_for(&guest_state_, s, std::chrono::milliseconds(1));
  }
  if (abandon_waiting) {
    abandon_waiting_.store(true, std::memory_order_relaxed);  // published by drained_
  }
  // Parked workers re-check; the last one to go idle ends the pool.
  drained_.store(true, std::memory_order_seq_cst);
  wake_all();
  // Spares may still be started until the pool ends, which joining the
  // first thread waits for; so read the list afresh after each join.
  for (std::size_t i = 0;; ++i) {
    pthread_t t{};
    {
      std::lock_guard lock(cold_->threads_mutex);
      if (i >= cold_->threads.size()) {
        break;
      }
      t = cold_->threads[i];
    }
    pthread_join(t, nullptr);
  }
  // The monitor watched to the end: a drain may need a stand-in for a
  // worker blocked without saying so, or growth. Every thread has ended.
  stop_monitor();
  // A waker that handed us a coroutine may still be in resume_waiting().
  while (wakers_.load(std::memory_order_acquire) != 0) {
    std::this_thread::yield();
  }
  // Every job has run: the rings can go, even where a thread still holds
  // its lane.
  // (Under the mutex: a submission refused at shutdown may still have made
  // a lane.)
  {
    std::lock_guard lock(cold_->lanes_mutex);
    for (const auto& lane : cold_->lane_owners) {
      lane->free_rings();
    }
  }
  cold_->joined = true;
  print_stats_if_asked();
  return true;
}

void pool_core::print_stats_if_asked() const noexcept {
  // Read once: getenv is not safe against a concurrent setenv.
  static const bool asked = [] {
    const char* v = std::getenv("FJORD_STATS");  // NOLINT(concurrency-mt-unsafe)
    return v != nullptr && std::strcmp(v, "1") == 0;
  }();
  if (!asked) {
    return;
  }
  try {
    std::fprintf(stderr, "%s\n", summary_line(stats(), name_).c_str());
  } catch (...) {
    std::fputs("fjord: FJORD_STATS: out of memory for the summary\n", stderr);
  }
}

bool pool_core::leave_running_locked() noexcept {
  --cold_->running;
  // Lazy compensation: the missing thread counts as a sleeper in the
  // census (a phantom), so a push that finds no real sleeper to wake
  // activates a stand-in for it (wake_one_sleeper()). Only as many
  // phantoms as stand-ins could be had: a phantom that can never be
  // activated would make every push take the idle mutex.
  bool phantom = false;
  if (cold_->running < size() && cold_->deficit < stand_ins_locked() &&
      !exit_.load(std::memory_order_relaxed)) {
    ++cold_->deficit;
    census_.add_sleeper();
    phantom = true;
  }
  publish_thread_counts_locked();
  return phantom;
}

std::size_t pool_core::stand_ins_locked() const noexcept {
  return cold_->retired.size() + (max_threads_ - cold_->reserved);
}

void pool_core::drop_unanswerable_phantoms_locked() noexcept {
  while (cold_->deficit > stand_ins_locked()) {
    --cold_->deficit;
    census_.remove_sleeper();
  }
}

std::size_t pool_core::phantom_sleepers() const {
  std::lock_guard lock(cold_->idle_mutex);
  return cold_->deficit;
}

std::size_t pool_core::stand_ins() const {
  std::lock_guard lock(cold_->idle_mutex);
  return stand_ins_locked();
}

std::vector<std::size_t> pool_core::retired_thread_indices() const {
  std::lock_guard lock(cold_->idle_mutex);
  std::vector<std::size_t> out;
  for (const worker* w : cold_->retired) {
    out.push_back(w->index);
  }
  return out;
}

void pool_core::rejoin_running_locked(worker& w) noexcept {
  ++cold_->running;
  if (cold_->deficit > 0 && cold_->running + cold_->deficit > size()) {
    // One phantom not needed any more: the running set and the phantoms
    // hold more than size() places now. Not otherwise: every phantom then
    // still stands for a worker that is blocked (one that came back without
    // a phantom of its own must not take another's).
    --cold_->deficit;
    census_.remove_sleeper();
  }
  if (cold_->running > size()) {
    // The thread coming back should be the one to retire, at the end of its
    // job: its stand-in holds a CPU, while it has just woken, often queued
    // behind a busy one (Go's M returning from a syscall finds its P taken
    // and parks the same way). Another thread retiring instead would leave
    // its CPU idle until the kernel rebalances. Only a preference, for
    // retire_preference: should its job go on longer, anyone retires.
    w.preferred_to_retire = true;  // w is the calling thread
    retire_preferred_until_.store(steady_ns() + retire_preference_ns, std::memory_order_relaxed);
  }
  publish_thread_counts_locked();
}

void pool_core::begin_blocking(worker& w) noexcept {
  // Its private jobs go to the thieves now: it will not pop them soon.
  w.deque.share_all();
  if (w.blocking_depth++ != 0) {
    return;
  }
  // A guest is in no running set: it has nothing to hand to a stand-in,
  // only its place among the pool's threads.
  if (w.guest) {
    guest_gives_place();
    return;
  }
  bool phantom = false;
  {
    std::lock_guard lock(cold_->idle_mutex);
    if (w.presumed_blocked.load(std::memory_order_relaxed)) {
      // The monitor already gave our place away: it stays given.
      w.presumed_blocked.store(false, std::memory_order_relaxed);
    } else {
      // Counted blocked now, which a guest in place heeds
      // (guest_crowds_pool), with a phantom for a stand-in or without.
      phantom = leave_running_locked();
    }
    w.blocked = true;
  }
  if (!phantom) {
    // What we leave on our deque may have woken nobody, if the guest in
    // place and we seemed to fill the pool (guest_fills_last_place): a
    // sleeper for it. Our own pushes need no fence to be seen here, and the
    // sleeper woken sees our count through the idle mutex.
    if (any_work_visible()) {
      wake_one_sleeper();
    }
    return;
  }
  // As a sleeper registers: either a pusher sees the phantom (and wakes),
  // or this sees its job (docs/scheduler.md, "Push and sleep"). That covers
  // what w leaves on its own deque too. The thread woken gets our CPU,
  // which we are about to leave idle.
  heavy_fence();
  if (any_work_visible()) {
    wake_one_sleeper(/*lend_this_cpu=*/true);
  }
}

void pool_core::end_blocking(worker& w) noexcept {
  if (--w.blocking_depth != 0) {
    return;
  }
  if (w.guest) {
    guest_takes_place();
    return;
  }
  std::lock_guard lock(cold_->idle_mutex);
  w.blocked = false;
  rejoin_running_locked(w);
}

void pool_core::end_presumed_block(worker& w) noexcept {
  std::lock_guard lock(cold_->idle_mutex);
  clear_presumed_block_locked(w);
}

bool pool_core::add_running_thread_locked(worker*& woken, bool& start) noexcept {
  if (!cold_->retired.empty()) {
    woken = cold_->retired.back();
    cold_->retired.pop_back();
    woken->retired = false;
    woken->woken_as_searcher = true;
  } else if (cold_->reserved < max_threads_) {
    ++cold_->reserved;
    start = true;
  } else {
    return false;
  }
  ++cold_->running;
  publish_thread_counts_locked();
  return true;
}

bool pool_core::activate_stand_in_locked(worker*& woken, bool& start) noexcept {
  // Phantoms never outnumber stand-ins, so a thread is always to be had.
  if (cold_->deficit == 0 || exit_.load(std::memory_order_relaxed) ||
      !add_running_thread_locked(woken, start)) {
    return false;
  }
  --cold_->deficit;
  // One RMW: the phantom sleeper becomes a searcher, as a woken sleeper does.
  census_.sleeper_to_searcher();
  return true;
}

void pool_core::start_stand_in() noexcept {
  start_added_thread(/*grown=*/false);
}

void pool_core::start_added_thread(bool grown) noexcept {
  if (start_thread(/*as_searcher=*/true) == 0) {
    return;
  }
  // The system refused a thread: a blocked worker blocks uncompensated, a
  // pool that was growing stays smaller.
  bool ended = false;
  census_count old(0);
  worker* woken = nullptr;
  {
    std::lock_guard lock(cold_->idle_mutex);
    --cold_->reserved;
    --cold_->running;
    if (grown) {
      shrink_after_refusal_locked(1);
    }
    publish_thread_counts_locked();
    old = census_.remove_searcher();
    // A thread that retired while this one was pending takes its place: the
    // blocked worker it stood in for came back, found the running set full
    // (this thread counted in it) and retired, and without it nobody would
    // run the pool's work.
    if (cold_->running < size() && !cold_->retired.empty() &&
        !exit_.load(std::memory_order_relaxed)) {
      bool start = false;  // stays false: a retired thread is there
      add_running_thread_locked(woken, start);
      census_.add_searcher();
    }
    // Every other thread may have gone idle while this one was pending.
    if (idle_waiters_.load(std::memory_order_relaxed) != 0) {
      announce_if_quiescent_locked();
    }
    ended = woken == nullptr && try_end_locked();
  }
  if (woken != nullptr) {
    woken->sleeper.unpark();  // it searches, and hands the baton on as it stops
    return;
  }
  if (ended) {
    wake_all();
    return;
  }
  // It counted as a searcher from the moment it was reserved, so pushers
  // meanwhile woke nobody: leave the search as stop_searching() does, handing
  // the baton to a sleeper if work waits (a sleeper that is a phantom gets
  // another stand-in, a phantom used up per refusal).
  if (old.searchers() == 1 && old.sleepers() != 0 && any_work_visible()) {
    wake_one_sleeper();
  }
}

void pool_core::add_workers(std::size_t n) noexcept {
  for (; n > 0; --n) {
    worker* woken = nullptr;
    bool start = false;
    {
      std::lock_guard lock(cold_->idle_mutex);
      if (exit_.load(std::memory_order_relaxed) || !add_running_thread_locked(woken, start)) {
        // Every slot is taken (by spares standing in for blocked workers).
        shrink_after_refusal_locked(n);
        return;
      }
      // It looks for work at once, as a woken sleeper does.
      census_.add_searcher();
      // The thread may be one a phantom counted on.
      drop_unanswerable_phantoms_locked();
    }
    if (woken != nullptr) {
      woken->sleeper.unpark();
    } else {
      start_added_thread(/*grown=*/true);
    }
  }
}

void pool_core::clear_presumed_block_locked(worker& w) noexcept {
  if (w.presumed_blocked.load(std::memory_order_relaxed)) {
    w.presumed_blocked.store(false, std::memory_order_relaxed);
    rejoin_running_locked(w);
  }
}

bool pool_core::retire(worker& w) noexcept {
  if (w.deque.maybe_nonempty() || w.runnext.load(std::memory_order_relaxed) != nullptr ||
      w.inbox.maybe_nonempty()) {
    return true;  // its own jobs first
  }
  if (!w.preferred_to_retire &&
      steady_ns() < retire_preferred_until_.load(std::memory_order_relaxed)) {
    return true;  // a thread back from blocking goes first (see rejoin_running_locked)
  }
  w.preferred_to_retire = false;
  if (w.searching) {
    stop_searching(w);  // a retired thread must not count as a searcher
  }
  bool ended = false;
  {
    std::lock_guard lock(cold_->idle_mutex);
    clear_presumed_block_locked(w);
    if (cold_->running <= size()) {
      return true;
    }
    leave_for_retired_list_locked(w);
    ended = try_end_locked();
  }
  if (ended) {
    wake_all();
  }
  return park_retired(w);
}

void pool_core::leave_for_retired_list_locked(worker& w) noexcept {
  --cold_->running;
  w.retired = true;
  cold_->retired.push_back(&w);
  publish_thread_counts_locked();
  // One thread fewer awake: a wait_idle() caller may be waiting for it.
  if (idle_waiters_.load(std::memory_order_relaxed) != 0) {
    announce_if_quiescent_locked();
  }
}

bool pool_core::park_retired(worker& w) noexcept {
  // A retired thread may stay parked until the pool ends: its heap's cached
  // segments go back to the OS now (docs/allocator.md).
  release_cached_memory_of_this_thread();
  // Retired time counts as parked (pool_stats.hpp).
  worker_counters::open(w.counters.parked_since, steady_ns());
  trace_point(trace_kind::park_begin, static_cast<std::uint32_t>(park_reason::idle));
  bool active = false;
  bool lent = false;
  while (true) {
    {
      std::lock_guard lock(cold_->idle_mutex);
      if (exit_.load(std::memory_order_relaxed)) {
        break;
      }
      if (!w.retired) {
        // Activated (for a blocked worker, or to grow): counted as a
        // searcher already.
        w.searching = std::exchange(w.woken_as_searcher, false);
        lent = std::exchange(w.lent_cpu, false);
        active = true;
        break;
      }
      if (w.inbox.maybe_nonempty()) {
        // A job posted to this thread alone (its poster unparked us after
        // the push): back to run it, not as a searcher.
        rejoin_for_pinned_work_locked(w);
        active = true;
        break;
      }
    }
    w.sleeper.park();
  }
  trace_point(trace_kind::park_end);
  worker_counters::close(w.counters.parked_since, w.counters.parked_ns, steady_ns());
  return_lent_cpu(w, lent);
  return active;
}

std::int64_t pool_core::waiting_count() const noexcept {
  // Every worker counted has its slot made (acquire: pairs with
  // start_thread's release). The sum is exact when every worker is idle:
  // each took the idle mutex after its last count, and so did the reader.
  std::uint64_t sum =
      static_cast<std::uint64_t>(waiting_elsewhere_.load(std::memory_order_seq_cst));
  const std::size_t n = thread_count_.load(std::memory_order_acquire);
  for (std::size_t i = 0; i < n; ++i) {
    sum += workers_[i]->waiting.read();
  }
  if (guest_ != nullptr) {
    sum += guest_->waiting.read();
  }
  return static_cast<std::int64_t>(sum);
}

bool pool_core::try_end_locked() noexcept {
  if (exit_.load(std::memory_order_relaxed)) {
    return false;  // somebody ended it already
  }
  // Every thread idle in its main loop or retired (a blocked worker has a
  // job on its stack, a thread being started is neither), no coroutine
  // waiting here, nothing queued: nothing can create work any more. The
  // waiting count is read before the queues: a resumption is queued before its count
  // drops (docs/scheduler.md, "Shutdown").
  if (!drained_.load(std::memory_order_seq_cst) ||
      cold_->idle_main_loop + cold_->retired.size() != cold_->reserved ||
      (waiting_count() != 0 && !abandon_waiting_.load(std::memory_order_relaxed)) ||
      any_work_visible() || any_pinned_work()) {
    return false;
  }
  exit_.store(true, std::memory_order_release);
  // An ended pool is idle: wait_idle() callers go (also when the end
  // abandoned waiting coroutines, which quiescence would wait for).
  if (idle_waiters_.load(std::memory_order_relaxed) != 0) {
    idle_epoch_.fetch_add(1, std::memory_order_release);
    futex_wake_all(&idle_epoch_);
  }
  return true;
}

std::size_t pool_core::shard_for_this_thread() const noexcept {
  static std::atomic<std::size_t> next_thread{0};
  thread_local const std::size_t mine = next_thread.fetch_add(1, std::memory_order_relaxed);
  return mine & shard_mask_;
}

void pool_core::throw_shutdown() {
  throw shutdown_error("fjord::pool: cannot submit work, the pool is shutting down");
}

void pool_core::throw_forked() {
  throw std::logic_error(
      "fjord::pool: this pool was made before fork() and has no threads in the child process; "
      "make a new pool in the child (fjord::default_pool() is made anew there)");
}

void pool_core::resume_waiting_chain(job* first, job* last, std::uint64_t count) noexcept {
  // Also during shutdown (no stopping_ check): the pool cannot end before
  // these jobs ran, since the waiting count holds them until then. But it
  // can end right after, while we are still in notify_injected(): so
  // wakers_ counts us, and shut_down() waits for it to drop after joining
  // the threads (the increment happens before the push, hence before the
  // end). Our last touch is the decrement. One wake-up check is enough for
  // a chain: a worker that takes a batch from the queue puts the rest on
  // its deque, and that push wakes the next (unless a caller in place and
  // the threads awake fill the pool: then it is a push like a fork's).
  wakers_.fetch_add(1, std::memory_order_relaxed);
  const worker* w = current_worker_of(this);
  shard& s = *shards_[w != nullptr ? (w->index & shard_mask_) : shard_for_this_thread()];
  s.queue.push_chain(first, last, count);
  notify_injected();
  wakers_.fetch_sub(1, std::memory_order_release);
}

void pool_core::resume_waiting(job* j) noexcept {
  worker* w = current_worker_of(this);
  note_wake(j);
  if (w != nullptr) {
    // Into the runnext slot; the coroutine it held (if any) goes to the
    // deque, shared with thieves if any worker is idle (notify_local_push,
    // then work_stealing_deque::offer), else on request. Thieves time how
    // long a job sits there themselves (steal_runnext).
    // Only this worker fills its slot (thieves only empty it), so a slot
    // seen empty stays empty until we fill it: a release store publishes j
    // without a read-modify-write. A full slot needs the exchange, which
    // races with thieves taking the job it holds.
    job* previous = w->runnext.load(std::memory_order_relaxed);
    if (previous == nullptr) {
      w->runnext.store(j, std::memory_order_release);
    } else {
      previous = w->runnext.exchange(j, std::memory_order_acq_rel);
    }
    if (previous == nullptr) {
      notify_local_push(*w);  // a sleeper may have to take it, should we run long
      return;
    }
    j = previous;
    if (w->deque.push(j)) {
      notify_local_push(*w);
      return;
    }
  }
  resume_waiting_chain(j, j, 1);  // from outside (or a full deque)
}

namespace {

// The lanes this thread owns, by pool id; a few pools at a time.
struct lane_cache {
  struct entry {
    std::uint64_t pool_id = 0;
    std::shared_ptr<submission_lane> lane;  // null: the pool had none to spare
  };
  std::array<entry, 4> entries;
  std::size_t next_victim = 0;

  lane_cache() = default;
  lane_cache(const lane_cache&) = delete;
  lane_cache& operator=(const lane_cache&) = delete;
  ~lane_cache() {
    for (auto& e : entries) {
      if (e.lane) {
        e.lane->disown();
      }
    }
  }
};

// Gone at thread exit: a late submission from another thread_local's
// destructor then takes the linked queue.
using lanes_of_this_thread = per_thread<lane_cache>;

}  // namespace

void pool_core::forget_lanes_in_fork_children() noexcept {
  static std::once_flag once;
  std::call_once(once, [] {
    // The thread that forked is the child's only thread: its lanes lead
    // into pools with no threads, so its submissions must take the slow
    // path, which refuses them.
    on_fork_child([] {
      if (lane_cache* cache = lanes_of_this_thread::get()) {
        for (auto& e : cache->entries) {
          e = lane_cache::entry{};
        }
      }
    });
  });
}

submission_lane* pool_core::lane_for_this_thread() {
  lane_cache* const cached = lanes_of_this_thread::get();
  if (cached == nullptr) {
    return nullptr;
  }
  lane_cache& cache = *cached;
  for (const auto& e : cache.entries) {
    if (e.pool_id == id_) {
      return e.lane.get();
    }
  }
  if (fork_generation_ != fork_generation()) {
    return nullptr;  // inject_to_shard() reports a pool lost to fork()
  }
  std::shared_ptr<submission_lane> lane;
  try {
    std::lock_guard lock(cold_->lanes_mutex);
    for (const auto& l : cold_->lane_owners) {
      if (l->try_adopt()) {
        lane = l;
        break;
      }
    }
    if (!lane && cold_->lane_owners.size() < max_lanes) {
      lane = std::make_shared<submission_lane>();
      cold_->lane_owners.push_back(lane);
      // Consumers that read the count see the lane (release); seq_cst puts
      // the new count in the handshakes any_work_visible() takes part in.
      lanes_[cold_->lane_owners.size() - 1].store(lane.get(), std::memory_order_release);
      lane_count_.store(cold_->lane_owners.size(), std::memory_order_seq_cst);
    }
  } catch (const std::bad_alloc&) {
    return nullptr;  // the linked queue still works
  }
  auto& victim = cache.entries[cache.next_victim++ % cache.entries.size()];
  if (victim.lane) {
    victim.lane->disown();
  }
  victim.pool_id = id_;
  victim.lane = lane;
  return lane.get();
}

void pool_core::inject(job* first, job* last, std::uint64_t count) {
  const bool own = current_worker_of(this) != nullptr;
  // One job from outside: by pointer through the thread's lane.
  if (!own && first == last && inject_through_lane([first](lane_ring::slot* slot) {
        lane_ring::store_pointer(slot, first);
        return lane_ring::run_pointer_fn();
      })) {
    return;
  }
  inject_to_shard(first, last, count);
}

void throw_bad_priority(priority p) {
  throw std::invalid_argument("fjord: priority " + std::to_string(static_cast<int>(p)) +
                              " is none of high (0), normal (1) and low (2)");
}

void pool_core::inject_at_level(priority p, job* first, job* last, std::uint64_t count) {
  push_to_shard(p == priority::high ? high_ : low_, first, last, count);
}

void pool_core::inject_to_shard(job* first, job* last, std::uint64_t count) {
  const worker* w = current_worker_of(this);
  const bool own = (w != nullptr);
  push_to_shard(*shards_[own ? (w->index & shard_mask_) : shard_for_this_thread()], first, last,
                count);
}

void pool_core::push_to_shard(shard& s, job* first, job* last, std::uint64_t count) {
  const bool own = current_worker_of(this) != nullptr;
  if (!own) {
    if (fork_generation_ != fork_generation()) [[unlikely]] {
      throw_forked();
    }
    // seq_cst pairs with the destructor: either we see stopping_ or it sees us.
    s.submitters.fetch_add(1, std::memory_order_seq_cst);
    if (stopping_.load(std::memory_order_seq_cst)) {
      s.submitters.fetch_sub(1, std::memory_order_release);
      throw_shutdown();
    }
  }
  trace_point(trace_kind::inject, 0, trace_address(first), id_);
  s.queue.push_chain(first, last, count);
  notify_injected();
  if (!own) {
    s.submitters.fetch_sub(1, std::memory_order_release);
  }
}

void pool_core::report_unhandled(const std::exception_ptr& e) noexcept {
  if (cold_->unhandled_handler) {
    try {
      cold_->unhandled_handler(e);
      return;
    } catch (...) {
      std::fputs("fjord: the unhandled-exception handler threw\n", stderr);
      std::terminate();
    }
  }
  try {
    std::rethrow_exception(e);
  } catch (const std::exception& ex) {
    std::fprintf(stderr, "fjord: a posted job or spawned task threw: %s\n", ex.what());
  } catch (...) {
    std::fputs("fjord: a posted job or spawned task threw a non-std exception\n", stderr);
  }
  std::terminate();
}

std::size_t pool_core::started_thread_count() const noexcept {
  const std::size_t n = thread_count();
  return n != 0 && !workers_[n - 1]->has_thread.load(std::memory_order_relaxed) ? n - 1 : n;
}

pool_stats pool_core::stats() const {
  pool_stats s;
  const std::size_t n = started_thread_count();
  s.workers.reserve(n);
  for (std::size_t i = 0; i < n; ++i) {
    s.workers.push_back(workers_[i]->counters.snapshot());
    s.workers.back().queue_depth = workers_[i]->deque.size_hint() + workers_[i]->inbox.depth();
  }
  if (guest_ != nullptr) {
    s.callers = guest_->counters.snapshot();
    s.callers.busy = {};  // no thread of its own: no life to account
  }
  s.suppressed_exceptions = suppressed_.load(std::memory_order_relaxed);
  if (fork_generation_ == fork_generation()) {  // a fork child may not take the lock
    std::lock_guard lock(cold_->idle_mutex);
    s.running_threads = cold_->running;
    s.retired_threads = cold_->retired.size();
  }
  s.injection_depth = high_.queue.depth() + low_.queue.depth();
  for (const auto& sh : shards_) {
    s.injection_depth += sh->queue.depth();
  }
  const std::size_t lanes = lane_count_.load(std::memory_order_acquire);
  for (std::size_t i = 0; i < lanes; ++i) {
    if (const submission_lane* lane = lanes_[i].load(std::memory_order_acquire)) {
      s.injection_depth += lane->backlog();
    }
  }
  return s;
}

std::int64_t pool_core::live_heap_blocks() const noexcept {
  std::int64_t live = 0;
  const std::size_t n = thread_count();
  for (std::size_t i = 0; i < n; ++i) {
    live += workers_[i]->heap.live_blocks();
  }
  if (guest_ != nullptr) {
    live += guest_->heap.live_blocks();
  }
  return live;
}

}  // namespace fjord::detail
