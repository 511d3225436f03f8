#include "fjord/detail/resume_chain.hpp"

#include <cstdint>
#include <new>

#include "fjord/detail/assert.hpp"
#include "fjord/detail/frame_allocator.hpp"

namespace fjord::detail {

namespace {

// The chain from first on, handed to home the way coroutines woken from
// outside go (when this thread cannot run it: no memory for the run, a full
// deque). The links are written: read them once, before the hand-over.
void hand_to_pool(pool_core& home, job* first) noexcept {
  job* last = first;
  std::uint64_t count = 1;
  for (job* j = first->next().load(std::memory_order_relaxed); j != nullptr;
       j = j->next().load(std::memory_order_relaxed)) {
    last = j;
    ++count;
  }
  home.resume_waiting_chain(first, last, count);
}

}  // namespace

void resume_chain::run(pool_core& home, worker& w, job* first) noexcept {
  void* memory = nullptr;
  try {
    memory = frame_allocator::allocate(sizeof(resume_chain));
  } catch (...) {
    hand_to_pool(home, first);
    return;
  }
  auto* const self = ::new (memory) resume_chain(home, first);
  if (!home.may_run_next_here(w)) {
    // The worker's loop has something to do first: the chain waits on the
    // deque like any job.
    if (w.deque.push(self)) {
      home.notify_local_push(w);
    } else {
      self->~resume_chain();
      frame_allocator::deallocate(self, sizeof(resume_chain));
      hand_to_pool(home, first);
    }
    return;
  }
  go_on(self, w, true);
}

void resume_chain::execute(job* j) noexcept {
  auto* self = static_cast<resume_chain*>(j);
  worker* const w = current_worker_of(self->home_);
  FJORD_ASSERT(w != nullptr, "resume_chain: run off its pool");
  go_on(self, *w, pool_core::runs_at_loop_level(*w, j));
}

void resume_chain::go_on(resume_chain* self, worker& w, bool at_loop_level) noexcept {
  pool_core& home = *self->home_;
  while (true) {
    job* const next = self->rest_;
    job* const rest = next->next().load(std::memory_order_relaxed);
    if (rest == nullptr) {
      self->~resume_chain();
      frame_allocator::deallocate(self, sizeof(resume_chain));
      home.run_here(w, next);
      return;
    }
    self->rest_ = rest;
    if (!w.deque.push(self)) [[unlikely]] {
      self->~resume_chain();
      frame_allocator::deallocate(self, sizeof(resume_chain));
      hand_to_pool(home, rest);
      home.run_here(w, next);
      return;
    }
    home.notify_local_push(w);
    home.run_here(w, next);  // from here on self may be stolen, run and gone
    // Inside a wait that helps (or a guest's call), one resumption a turn:
    // the wait looks at its latch before the next.
    if (!at_loop_level || !home.may_run_next_here(w)) {
      return;  // self (if still there) runs as a job, after what comes first
    }
    job* const top = w.deque.pop();
    if (top == nullptr) {
      return;  // taken: stolen, or popped and finished by what the coroutine ran
    }
    if (top->execute != &execute) {
      // Pushed by the coroutine just run: its turn comes first.
      const bool pushed = w.deque.push(top);  // the slot it was popped from is free
      FJORD_ASSERT(pushed, "resume_chain: a popped job did not go back");
      static_cast<void>(pushed);
      return;
    }
    self = static_cast<resume_chain*>(top);
  }
}

}  // namespace fjord::detail
