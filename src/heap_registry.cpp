#include "fjord/detail/heap_registry.hpp"

#include <pthread.h>

#include <mutex>
#include <new>

#include "fjord/detail/futex_mutex.hpp"
#include "fjord/detail/memory_heap.hpp"

namespace fjord::detail::heap_registry {

namespace {

// Constant-initialised and trivially destructible, so it outlives every
// static destructor and thread exit that may still free memory.
struct registry {
  futex_mutex lock;
  memory_heap* all = nullptr;        // every heap, newest first; heaps never die
  memory_heap* abandoned = nullptr;  // a stack through next_abandoned
  std::size_t count = 0;
};
constinit registry state;

// A fork while another thread holds the lock would leave it held forever
// in the child: take it across fork().
[[maybe_unused]] const int atfork_registered = pthread_atfork(
    [] { state.lock.lock(); }, [] { state.lock.unlock(); }, [] { state.lock.unlock(); });

void push_abandoned(memory_heap* h) noexcept {
  const std::lock_guard guard(state.lock);
  h->next_abandoned = state.abandoned;
  state.abandoned = h;
  // seq_cst: the store half of the Dekker pair with deallocate_remote (it
  // pushes onto notified_, then loads `abandoned`); the caller's next load
  // of notified_ is the other half.
  h->abandoned.store(true, std::memory_order_seq_cst);
}

// Takes h off the abandoned stack if it is still there.
bool take_back(memory_heap* h) noexcept {
  const std::lock_guard guard(state.lock);
  if (!h->abandoned.load(std::memory_order_relaxed)) {
    return false;  // adopted, or held by another reclaim that will look again
  }
  memory_heap** link = &state.abandoned;
  while (*link != h) {
    link = &(*link)->next_abandoned;
  }
  *link = h->next_abandoned;
  h->next_abandoned = nullptr;
  h->abandoned.store(false, std::memory_order_relaxed);
  return true;
}

// h is held by the caller: hand it back, and keep it while remote frees
// that saw it held have left spans for the holder.
void give_back(memory_heap* h) noexcept {
  for (;;) {
    push_abandoned(h);
    if (!h->has_notified() || !take_back(h)) {
      return;
    }
    h->collect_abandoned();
  }
}

}  // namespace

memory_heap* acquire() noexcept {
  memory_heap* h = nullptr;
  {
    const std::lock_guard guard(state.lock);
    h = state.abandoned;
    if (h != nullptr) {
      state.abandoned = h->next_abandoned;
      h->next_abandoned = nullptr;
      h->abandoned.store(false, std::memory_order_relaxed);
    }
  }
  if (h != nullptr) {
    // The lock ordered everything the heap's last holder did before this.
    h->on_adopt();
    return h;
  }
  h = new (std::nothrow) memory_heap();
  if (h == nullptr) {
    return nullptr;
  }
  const std::lock_guard guard(state.lock);
  h->next_heap = state.all;
  state.all = h;
  ++state.count;
  return h;
}

void abandon(memory_heap* h) noexcept {
  h->on_abandon();
  give_back(h);
}

void reclaim(memory_heap* h) noexcept {
  if (take_back(h)) {
    h->collect_abandoned();
    give_back(h);
  }
}

std::size_t bytes_in_use() noexcept {
  const std::lock_guard guard(state.lock);
  std::size_t total = 0;
  for (memory_heap* h = state.all; h != nullptr; h = h->next_heap) {
    total += h->bytes_in_use();
  }
  return total;
}

std::size_t heap_count() noexcept {
  const std::lock_guard guard(state.lock);
  return state.count;
}

}  // namespace fjord::detail::heap_registry
