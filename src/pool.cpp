// Construction, submission from outside, shutdown and statistics.

#include <pthread.h>

#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <string>

#include "fjord/detail/pool_core.hpp"
#include "fjord/pool.hpp"
#include "fjord/shutdown_error.hpp"

namespace fjord::detail {

namespace {

constexpr std::size_t max_workers = 4096;
constexpr std::size_t max_shards = 16;

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
    : spin_budget_(options.spin_budget), unhandled_handler_(options.unhandled_exception_handler) {
  validate(options);
  init_asymmetric_fences();
  const std::size_t n = options.workers.value_or(available_cpus());
  workers_.reserve(n);
  for (std::size_t i = 0; i < n; ++i) {
    workers_.push_back(std::make_unique<worker>(*this, static_cast<std::uint32_t>(i),
                                                options.deque_capacity, census_, thief_mask));
  }
  const std::size_t shards = next_power_of_two(std::min(n, max_shards));
  shards_ = std::make_unique<shard[]>(shards);
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
  // their push; later ones see stopping_ and throw.
  for (std::size_t i = 0; i <= shard_mask_; ++i) {
    while (shards_[i].submitters.load(std::memory_order_seq_cst) != 0) {
      std::this_thread::yield();
    }
  }
  // Parked workers re-check; the last one to go idle ends the pool.
  drained_.store(true, std::memory_order_seq_cst);
  wake_all();
  for (auto& t : threads_) {
    t.join();
  }
}

std::size_t pool_core::shard_for_this_thread() const noexcept {
  static std::atomic<std::size_t> next_thread{0};
  thread_local const std::size_t mine = next_thread.fetch_add(1, std::memory_order_relaxed);
  return mine & shard_mask_;
}

void pool_core::inject(job* first, job* last) {
  worker* w = current_worker;
  const bool own = (w != nullptr && w->pool == this);
  shard& s = shards_[own ? (w->index & shard_mask_) : shard_for_this_thread()];
  if (!own) {
    // seq_cst pairs with the destructor: either we see stopping_ or it sees us.
    s.submitters.fetch_add(1, std::memory_order_seq_cst);
    if (stopping_.load(std::memory_order_seq_cst)) {
      s.submitters.fetch_sub(1, std::memory_order_release);
      throw shutdown_error("fjord::pool: cannot submit work, the pool is shutting down");
    }
  }
  s.queue.push_chain(first, last);
  // seq_cst pairs with the searchers' and sleepers' seq_cst census updates
  // and queue loads: a Dekker in the single total order, free on x86.
  const std::uint64_t c = census_.load(std::memory_order_seq_cst);
  if ((c & searcher_mask) == 0 && (c >> 32) != 0) {
    wake_one_sleeper();
  }
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
