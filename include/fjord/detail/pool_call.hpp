#pragma once

#include <exception>
#include <type_traits>

#include "fjord/detail/completion_latch.hpp"
#include "fjord/detail/job.hpp"
#include "fjord/detail/pool_core.hpp"
#include "fjord/detail/result_slot.hpp"

namespace fjord {
class pool;
}  // namespace fjord

namespace fjord::detail {

// The way into a pool from any thread, without <fjord/pool.hpp> (whose
// submit() needs <future>): what join and invoke use to enter a pool.

// p's scheduler (pool_access::core, out of line).
pool_core& core_of(pool& p) noexcept;

// fjord::default_pool()'s scheduler, made if need be; throws as
// default_pool() does.
pool_core& default_pool_core();

// Runs f() on core and returns its result, or rethrows its exception
// (pool::call): on the calling thread as core's guest when it may join, else
// on one of core's workers. From one of core's workers it simply calls f().
template <class F>
decltype(auto) call_on(pool_core& core, F& f) {
  using value_t = std::invoke_result_t<F&>;
  if (current_worker_of(&core) != nullptr) {
    return f();
  }
  // Lives on this stack: the caller sleeps until the job has run.
  struct call_job final : job {
    call_job(F& fn, pool_core* p) : job(&execute), f(fn), pool(p) {}
    static void execute(job* j) noexcept {
      auto* self = static_cast<call_job*>(j);
      self->result.run(self->f);
      self->pool->count_down(self->latch);
    }
    static void run_as_guest(void* p) noexcept {
      auto* self = static_cast<call_job*>(p);
      self->result.run(self->f);
    }
    F& f;
    pool_core* pool;
    completion_latch latch{1};
    result_slot<value_t> result;
  };
  call_job j(f, &core);
  // The caller joins the pool for the call if it may (pool_options::callers_join),
  // else a worker runs it while the caller waits.
  if (!core.call_as_guest(&call_job::run_as_guest, &j)) {
    core.inject(&j, &j, 1);
    core.wait(j.latch);
  }
  if (j.result.has_error()) {
    std::rethrow_exception(j.result.error());
  }
  return static_cast<value_t>(j.result.take());
}

}  // namespace fjord::detail
