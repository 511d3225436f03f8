// Counting fork()s, so objects that own threads know when theirs are gone.

#include "fjord/detail/fork_generation.hpp"

#include <pthread.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <mutex>

#include "fjord/detail/worker.hpp"

namespace fjord::detail {

constinit std::atomic<unsigned> forks_so_far{0};

namespace {

// A few fixed slots: handlers are registered by fjord's own singletons.
constexpr std::size_t max_handlers = 8;
std::array<std::atomic<void (*)()>, max_handlers> handlers{};
std::atomic<std::size_t> handler_count{0};

void in_child() noexcept {
  forks_so_far.fetch_add(1, std::memory_order_relaxed);
  set_current_worker(nullptr);  // fork() from a job: this thread's pool is gone
  const std::size_t n = std::min(handler_count.load(std::memory_order_acquire), max_handlers);
  for (std::size_t i = 0; i < n; ++i) {
    if (auto* fn = handlers[i].load(std::memory_order_acquire)) {
      fn();
    }
  }
}

void register_once() noexcept {
  static std::once_flag once;
  std::call_once(once, [] { pthread_atfork(nullptr, nullptr, &in_child); });
}

}  // namespace

void on_fork_child(void (*fn)()) noexcept {
  register_once();
  // A slot being filled while another thread forks is skipped (null).
  const std::size_t i = handler_count.fetch_add(1, std::memory_order_acq_rel);
  if (i < max_handlers) {
    handlers[i].store(fn, std::memory_order_release);
  }
}

}  // namespace fjord::detail
