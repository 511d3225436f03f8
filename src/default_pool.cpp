// fjord::default_pool(): made on first use, sized from the environment,
// drained at exit, made anew in the child of a fork().

#include <cerrno>
#include <cstdlib>
#include <mutex>
#include <new>
#include <stdexcept>
#include <string>

#include "fjord/detail/fork_generation.hpp"
#include "fjord/pool.hpp"

namespace fjord {

namespace {

// Never destroyed: code that runs during static destruction (a destructor
// that joins, sleeps or posts) still finds an object, shut down by then
// (join runs inline, post throws shutdown_error).
std::atomic<pool*> instance{nullptr};
// Constant-initialised (usable from any static initialiser); made anew in
// the child of a fork(), where a thread that no longer exists may hold it.
constinit std::mutex creation_mutex;
bool exit_hook_registered = false;  // guarded by creation_mutex

pool_options options_from_environment() {
  pool_options o;
  // NOLINTNEXTLINE(concurrency-mt-unsafe): read under creation_mutex, once per creation
  const char* env = std::getenv("FJORD_WORKERS");
  if (env == nullptr) {
    return o;
  }
  const std::string text(env);
  std::size_t value = 0;
  bool valid = !text.empty() && text.size() <= 4;
  for (const char c : text) {
    valid = valid && c >= '0' && c <= '9';
    value = value * 10 + static_cast<std::size_t>(c - '0');
  }
  if (!valid || value < 1 || value > 4096) {
    throw std::invalid_argument(
        "fjord: the environment variable FJORD_WORKERS must be a whole number of worker threads "
        "in [1, 4096], got \"" +
        text + "\"");
  }
  o.workers = value;
  return o;
}

// Runs at exit where the destructor of a function-local static would: every
// job posted to the default pool runs first. Coroutines still waiting on it
// (a long sleep, a latch nobody counts down) are abandoned, as threads still
// running at exit are: waiting for them could keep the process from ending.
void shut_down_at_exit() {
  if (pool* p = instance.load(std::memory_order_acquire)) {
    detail::pool_access::core(*p).shut_down(/*abandon_waiting=*/true);
  }
}

void forget_in_child() {
  // The parent's pool has no threads here; it is leaked, not destroyed.
  instance.store(nullptr, std::memory_order_relaxed);
  ::new (static_cast<void*>(&creation_mutex)) std::mutex;
}

}  // namespace

pool& default_pool() {
  if (pool* p = instance.load(std::memory_order_acquire)) [[likely]] {
    return *p;
  }
  std::lock_guard lock(creation_mutex);
  if (pool* p = instance.load(std::memory_order_relaxed)) {
    return *p;
  }
  auto* p = new pool(options_from_environment());
  instance.store(p, std::memory_order_release);
  if (!exit_hook_registered) {
    exit_hook_registered = true;
    std::atexit(&shut_down_at_exit);
    detail::on_fork_child(&forget_in_child);
  }
  return *p;
}

namespace detail {

pool_core& default_pool_core() {
  return pool_access::core(default_pool());
}

pool_core& core_of(pool& p) noexcept {
  return pool_access::core(p);
}

pool_core* default_pool_core_if_open() noexcept {
  try {
    pool_core& core = pool_access::core(default_pool());
    return core.is_shut_down() ? nullptr : &core;
  } catch (...) {
    return nullptr;
  }
}

}  // namespace detail

}  // namespace fjord
