#include "fjord/detail/resume_job.hpp"

namespace fjord::detail {

namespace {

struct trampoline {
  bool active = false;
  job* head = nullptr;
  job* tail = nullptr;
};
constinit thread_local trampoline pending;

}  // namespace

void resume_inline(resume_job& j) noexcept {
  trampoline& t = pending;
  if (t.active) {
    // Only this thread touches its trampoline: relaxed is enough.
    j.next().store(nullptr, std::memory_order_relaxed);
    if (t.tail == nullptr) {
      t.head = &j;
    } else {
      t.tail->next().store(&j, std::memory_order_relaxed);
    }
    t.tail = &j;
    return;
  }
  t.active = true;
  resume(j.handle);
  while (t.head != nullptr) {
    job* next = t.head;
    t.head = next->next().load(std::memory_order_relaxed);
    if (t.head == nullptr) {
      t.tail = nullptr;
    }
    run_job(next);
  }
  t.active = false;
}

bool waiting_coroutine::join(resume_batch& batch) noexcept {
  if (home == nullptr || current_worker_of(home) != nullptr) {
    return false;  // no pool, or ours: wake() puts it on our own deque
  }
  home->note_wake(this);
  batch.add(home, this);
  return true;
}

void waiting_coroutine::wake() noexcept {
  if (home != nullptr) {
    home->resume_waiting(this);
    return;
  }
  if (loop != nullptr) {
    loop->post(this);
    return;
  }
  pool_core* target = nullptr;
  if (const worker* w = current_worker; w != nullptr) {
    target = w->pool;
  } else {
    target = default_pool_core_if_open();
  }
  if (target != nullptr) {
    try {
      target->push_or_inject(this);
      return;
    } catch (...) {
      // The default pool began shutting down meanwhile: run it here.
    }
  }
  resume_inline(*this);
}

}  // namespace fjord::detail
