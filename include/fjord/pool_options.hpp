#pragma once

#include <cstddef>
#include <exception>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "fjord/detail/chrono.hpp"

namespace fjord {

/// How a pool is built. Every field has a sensible default; invalid values make
/// the pool constructor throw std::invalid_argument naming the field and value.
struct pool_options {
  /// Worker threads. Unset: the CPUs this process may use (affinity mask and
  /// cgroup CPU quota), see fjord::available_cpus().
  std::optional<std::size_t> workers;

  /// How long an idle worker keeps looking for work before it parks. Longer
  /// means lower wake-up latency, shorter means less CPU burnt when idle.
  /// At most one second.
  std::chrono::microseconds spin_budget{50};

  /// Thread names are "<name>-<index>" (Linux keeps the first 15 bytes).
  std::string name = "fjord";

  /// Slots in each worker's deque (a power of two, at least 64). Only touched
  /// pages cost memory; a full deque degrades to running children inline.
  std::size_t deque_capacity = std::size_t{1} << 16;

  /// Each worker thread's stack, in bytes (at least 64 KiB). The default
  /// holds 100,000 nested joins of small closures in an optimised build.
  /// Only the pages used cost memory. A guard region below it turns an
  /// overflow into a clear message ("fjord: stack overflow on worker ...")
  /// instead of a bare SIGSEGV.
  std::size_t stack_size = std::size_t{32} << 20;

  /// A call into the pool (pool::call, and join, invoke and the parallel
  /// algorithms entered from outside) made by a thread that is no pool's
  /// worker runs on that thread, which joins the pool as its guest until the
  /// call returns, as oneTBB's task_arena::execute and OpenMP's master thread
  /// do: no job to hand over, no worker to wake for the start, no wake-up
  /// of the caller at the end, and the caller's CPU works on the call. The
  /// call runs on a stack of the pool's (stack_size). One caller at a time
  /// per pool is a guest; the others, and every caller while the pool is
  /// paused or when this is false, hand the call to a worker and wait. A
  /// guest takes nothing from the injection queues, so a call does not wait
  /// behind unrelated posts; but while it waits for a stolen half it helps
  /// as a worker does, stealing from the workers' deques, which may hold
  /// jobs a worker took from those queues (another caller's handed-over
  /// call too). So, as on a worker, a call must not hold a lock across a
  /// join, group or future wait that a job of the pool may take. Inside
  /// the call, pool::this_thread_index() is nullopt: the caller is none of
  /// the pool's numbered threads. While it works on the call the caller
  /// takes one of the pool's `workers` places, as oneTBB's arena counts
  /// its caller: the call's forks wake at most workers - 1 workers (a
  /// 1-worker pool runs the call on the caller alone), and a worker beyond
  /// those stands aside, so a pool sized to the CPUs does not put one
  /// thread more on them. The caller gives its place back while it waits
  /// for a stolen half and in a blocking section (block_in_place,
  /// sync_wait); work submitted from outside wakes workers as always. So,
  /// as in a call handed to a worker, halves that wait for each other
  /// without telling fjord may wait forever on a 1-worker pool. Off
  /// (false) on pools with cpus or thread hooks: their calls run on the
  /// threads those options set up. x86-64 only; elsewhere calls go to a
  /// worker.
  bool callers_join = true;

  /// How many spare threads may stand in for workers blocked in sync_wait,
  /// in a wait on another pool's work, or in fjord::block_in_place, so that
  /// the pool keeps `workers` threads running (docs/scheduler.md,
  /// "Blocking"). Spares retire when the blocked workers return and are
  /// kept for reuse. 0 turns compensation off.
  std::size_t max_spare_threads = 256;

  /// Dynamic scaling (docs/scheduler.md, "Scaling"): the pool runs between
  /// min_workers and max_workers workers. It grows by one worker a
  /// millisecond while work waits and no worker is free to take it, and a
  /// worker beyond min_workers that finds no work for idle_timeout leaves
  /// (its thread is kept, parked, for the next growth). `workers` is how many
  /// run at the start; unset, it is available_cpus() clamped to the bounds.
  /// An unset bound is the starting count: {.min_workers = 1} shrinks to one
  /// worker when idle and grows back. With all three unset (and no cpus),
  /// the pool follows available_cpus(), so a change of the cgroup CPU quota
  /// is noticed within a second of work. pool::resize() changes the bounds
  /// at run time.
  std::optional<std::size_t> min_workers;
  /// The upper bound of dynamic scaling; see min_workers.
  std::optional<std::size_t> max_workers;
  /// How long a worker beyond min_workers stays idle before it leaves the
  /// pool (at least 1 ms, at most a day).
  std::chrono::milliseconds idle_timeout{10'000};

  /// A worker that has been inside one job for this long, wanting less
  /// than half a CPU meanwhile (blocked in a sleep, a system call or a lock
  /// it did not announce with fjord::block_in_place), while other work
  /// waits, gets a stand-in as block_in_place would have given it (Go's
  /// sysmon hands such a thread's place on the same way). A job that
  /// computes, or waits for a CPU on a loaded machine, is never replaced: a
  /// second thread would only share its CPU. Zero (the default) turns it
  /// off; else at least 100 us, at most a day. Stand-ins count against
  /// max_spare_threads. Needs the kernel's per-thread scheduler statistics
  /// (/proc/self/task/TID/schedstat); without them it does nothing.
  std::chrono::microseconds replace_blocked_after{0};

  /// CPUs (Linux numbers) the pool's threads run on. Unset: wherever the
  /// process may run. Every CPU must be in the process's affinity mask, and
  /// an empty or repeating list is an error. With cpus set and `workers`
  /// unset, the pool has one worker per listed CPU.
  std::optional<std::vector<unsigned>> cpus;

  /// With cpus: worker i runs on cpus[i % cpus.size()] alone (spare threads,
  /// which stand in for any worker, use the whole list). Without: every
  /// thread may use the whole list.
  bool pin_each_worker = false;

  /// Called on each of the pool's threads (spares included) before its first
  /// job and after its last, with the thread's index: 0 to size()-1 for the
  /// workers, size() and up for spares. The place to set a scheduling
  /// policy, a thread priority or thread-local state. An exception leaving a
  /// hook goes to unhandled_exception_handler. The start hook runs as one of
  /// the pool's threads (work it posts runs there next); the stop hook runs
  /// after the pool ended: posting from it throws fjord::shutdown_error, and
  /// it must not close or destroy the pool, whose destructor is joining it.
  std::function<void(std::size_t)> on_thread_start;
  /// The stop hook: as on_thread_start says, on each thread (spares included)
  /// after its last job, with the same index.
  std::function<void(std::size_t)> on_thread_stop;

  /// Called on a worker with the exception of a posted (fire-and-forget) job.
  /// Unset: print it and std::terminate, as an exception leaving std::thread does.
  std::function<void(std::exception_ptr)> unhandled_exception_handler;
};

/// The number of CPUs this process may run on: the affinity mask, further
/// limited by a cgroup (v2 cpu.max or v1 cfs quota) CPU quota; at least 1.
std::size_t available_cpus() noexcept;

}  // namespace fjord
