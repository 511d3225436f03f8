#pragma once

#include "fjord/detail/job.hpp"
#include "fjord/detail/pool_core.hpp"
#include "fjord/detail/worker.hpp"

namespace fjord::detail {

// Coroutines of one pool woken together on one of its workers (a chunk of
// a closing walk), resumed there one after another inside the job that
// woke them, instead of each going through the worker's runnext slot and
// deque and back out through its loop (a read-modify-write, a push, a pop
// and a loop turn saved per coroutine).
//
// What is not resumed yet stays visible to the pool: before resuming each
// coroutine, the run puts itself (a job holding the rest of the chain) on
// the worker's deque, where an idle worker steals it as it would steal the
// resumptions themselves, and so does any worker when a resumed coroutine
// blocks this thread waiting for one further on. After each, the worker
// pops its deque: a resume_chain (this one, or one that a coroutine it ran
// left there) it goes on with; anything else it puts back and returns, and
// the chain runs later as an ordinary job, or is running on a thief. Nothing
// is run twice: whoever pops or steals the job owns the rest. Before each
// resumption, the first too, the worker yields to what its loop would do at
// that job boundary (pool_core::may_run_next_here): then the chain waits on
// the deque instead.
class resume_chain : job {
 public:
  // On w, a worker of home, inside a job its main loop runs: resumes the coroutines whose
  // resumption jobs are first and those linked after it through next()
  // (each a coroutine waiting on home, traced as woken with note_wake()).
  static void run(pool_core& home, worker& w, job* first) noexcept;

 private:
  resume_chain(pool_core& home, job* rest) noexcept : job(&execute), home_(&home), rest_(rest) {}

  static void execute(job* j) noexcept;
  // at_loop_level: run by w's main loop (or by a job it runs), not by a wait
  // that helps inside another job (pool_core::runs_at_loop_level).
  static void go_on(resume_chain* self, worker& w, bool at_loop_level) noexcept;

  pool_core* home_;
  job* rest_;  // never null while the run exists
};

}  // namespace fjord::detail
