// Construction, submission from outside, shutdown and statistics.

#include <pthread.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <new>
#include <stdexcept>
#include <string>

#include "fjord/detail/pool_core.hpp"
#include "fjord/pool.hpp"
#include "fjord/shutdown_error.hpp"

namespace fjord::detail {

namespace {

constexpr std::size_t max_workers = 4096;
constexpr std::size_t max_shards = 16;

std::atomic<std::uint64_t> next_pool_id{1};

std::size_t next_power_of_two(std::size_t n) {
  std::size_t p = 1;
  while (p < n) {
    p <<= 1;
  }
  return p;
}

void validate(const pool_options& o) {
  if (o.workers && (*o.workers == 0 || *o.workers > max_workers)) {
    throw std::invalid_argument("fjord::pool_options::workers must be in [1, " +
                                std::to_string(max_workers) + "], got " +
                                std::to_string(*o.workers));
  }
  if (o.spin_budget.count() < 0) {
    throw std::invalid_argument("fjord::pool_options::spin_budget must not be negative, got " +
                                std::to_string(o.spin_budget.count()) + "us");
  }
  if (o.deque_capacity < 64 || (o.deque_capacity & (o.deque_capacity - 1)) != 0 ||
      o.deque_capacity > (std::size_t{1} << 30)) {
    throw std::invalid_argument(
        "fjord::pool_options::deque_capacity must be a power of two in [64, 2^30], got " +
        std::to_string(o.deque_capacity));
  }
}

void name_thread(std::thread& t, const std::string& base, std::size_t index) {
  std::string name = base + "-" + std::to_string(index);
  if (name.size() > 15) {
    name.resize(15);
  }
  pthread_setname_np(t.native_handle(), name.c_str());
}

}  // namespace

pool_core::pool_core(const pool_options& options)
    : spin_budget_(options.spin_budget),
      unhandled_handler_(options.unhandled_exception_handler),
      id_(next_pool_id.fetch_add(1, std::memory_order_relaxed)) {
  validate(options);
  init_asymmetric_fences();
  const std::size_t n = options.workers.value_or(available_cpus());
  workers_.reserve(n);
  for (std::size_t i = 0; i < n; ++i) {
    workers_.push_back(std::make_unique<worker>(*this, static_cast<std::uint32_t>(i),
                                                options.deque_capacity, census_, thief_mask));
  }
  const std::size_t shards = next_power_of_two(std::min(n, max_shards));
  shards_.reserve(shards);
  for (std::size_t i = 0; i < shards; ++i) {
    shards_.push_back(std::make_unique<shard>());
  }
  shard_mask_ = shards - 1;
  idle_.reserve(n);
  threads_.reserve(n);
  try {
    for (std::size_t i = 0; i < n; ++i) {
      threads_.emplace_back([this, i] { worker_main(*workers_[i]); });
      name_thread(threads_.back(), options.name, i);
    }
  } catch (...) {
    stopping_.store(true);
    exit_.store(true);
    wake_all();
    for (auto& t : threads_) {
      t.join();
    }
    throw;
  }
}

pool_core::~pool_core() {
  if (worker* w = current_worker; w != nullptr && w->pool == this) {
    std::fputs("fjord: a pool cannot be destroyed by one of its own workers\n", stderr);
    std::terminate();
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
  for (const auto& s : shards_) {
    while (s->submitters.load(std::memory_order_seq_cst) != 0) {
      std::this_thread::yield();
    }
  }
  // Parked workers re-check; the last one to go idle ends the pool.
  drained_.store(true, std::memory_order_seq_cst);
  wake_all();
  for (auto& t : threads_) {
    t.join();
  }
  // Every job has run: the rings can go, even where a thread still holds
  // its lane.
  // (Under the mutex: a submission refused at shutdown may still have made
  // a lane.)
  std::lock_guard lock(lanes_mutex_);
  for (const auto& lane : lane_owners_) {
    lane->free_rings();
  }
}

std::size_t pool_core::shard_for_this_thread() const noexcept {
  static std::atomic<std::size_t> next_thread{0};
  thread_local const std::size_t mine = next_thread.fetch_add(1, std::memory_order_relaxed);
  return mine & shard_mask_;
}

void pool_core::throw_shutdown() {
  throw shutdown_error("fjord::pool: cannot submit work, the pool is shutting down");
}

namespace {

// Trivially destructible, so still readable after `lane_cache` below was
// destroyed at thread exit (a late submission from another thread_local's
// destructor then takes the linked queue).
thread_local bool lane_cache_gone = false;

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
    lane_cache_gone = true;
  }
};

thread_local lane_cache lanes_of_this_thread;

}  // namespace

submission_lane* pool_core::lane_for_this_thread() {
  if (lane_cache_gone) {
    return nullptr;
  }
  lane_cache& cache = lanes_of_this_thread;
  for (const auto& e : cache.entries) {
    if (e.pool_id == id_) {
      return e.lane.get();
    }
  }
  std::shared_ptr<submission_lane> lane;
  try {
    std::lock_guard lock(lanes_mutex_);
    for (const auto& l : lane_owners_) {
      if (l->try_adopt()) {
        lane = l;
        break;
      }
    }
    if (!lane && lane_owners_.size() < max_lanes) {
      lane = std::make_shared<submission_lane>();
      lane_owners_.push_back(lane);
      // Consumers that read the count see the lane (release); seq_cst puts
      // the new count in the handshakes any_work_visible() takes part in.
      lanes_[lane_owners_.size() - 1].store(lane.get(), std::memory_order_release);
      lane_count_.store(lane_owners_.size(), std::memory_order_seq_cst);
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

void pool_core::inject(job* first, job* last) {
  worker* w = current_worker;
  const bool own = (w != nullptr && w->pool == this);
  // One job from outside: by pointer through the thread's lane.
  if (!own && first == last && submit_through_lane([first](injection_ring::slot* slot) {
        injection_ring::store_pointer(slot, first);
        return injection_ring::run_pointer_fn();
      })) {
    return;
  }
  push_to_queue(first, last);
}

void pool_core::push_to_queue(job* first, job* last) {
  worker* w = current_worker;
  const bool own = (w != nullptr && w->pool == this);
  shard& s = *shards_[own ? (w->index & shard_mask_) : shard_for_this_thread()];
  if (!own) {
    // seq_cst pairs with the destructor: either we see stopping_ or it sees us.
    s.submitters.fetch_add(1, std::memory_order_seq_cst);
    if (stopping_.load(std::memory_order_seq_cst)) {
      s.submitters.fetch_sub(1, std::memory_order_release);
      throw_shutdown();
    }
  }
  s.queue.push_chain(first, last);
  notify_injected();
  if (!own) {
    s.submitters.fetch_sub(1, std::memory_order_release);
  }
}

void pool_core::report_unhandled(const std::exception_ptr& e) noexcept {
  if (unhandled_handler_) {
    try {
      unhandled_handler_(e);
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

pool_stats pool_core::stats() const {
  pool_stats s;
  s.workers.reserve(workers_.size());
  for (const auto& w : workers_) {
    s.workers.push_back(w->counters.snapshot());
  }
  s.suppressed_exceptions = suppressed_.load(std::memory_order_relaxed);
  return s;
}

std::int64_t pool_core::live_heap_blocks() const noexcept {
  std::int64_t live = 0;
  for (const auto& w : workers_) {
    live += w->heap.live_blocks();
  }
  return live;
}

job_heap* current_job_heap() noexcept {
  worker* w = current_worker;
  return w != nullptr ? &w->heap : nullptr;
}

}  // namespace fjord::detail

namespace fjord {

pool& default_pool() {
  static pool instance([] {
    pool_options o;
    // NOLINTNEXTLINE(concurrency-mt-unsafe): read once, when the pool is first used
    if (const char* env = std::getenv("FJORD_WORKERS"); env != nullptr) {
      char* end = nullptr;
      const unsigned long n = std::strtoul(env, &end, 10);
      if (end != env && *end == '\0' && n > 0) {
        o.workers = n;
      }
    }
    return o;
  }());
  return instance;
}

}  // namespace fjord
