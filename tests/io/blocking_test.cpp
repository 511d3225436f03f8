#include "fjord/blocking.hpp"

#include <gtest/gtest.h>
#include <pthread.h>
#include <sched.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <csignal>
#include <limits>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "fjord/pool.hpp"
#include "fjord/stop_token.hpp"
#include "fjord/sync_wait.hpp"
#include "fjord/task.hpp"
#include "fjord/when_all.hpp"

namespace {

using namespace std::chrono_literals;

TEST(blocking, returns_the_result_and_resumes_on_the_coroutines_pool) {
  fjord::pool pool(fjord::pool_options{.workers = 2});
  auto body = [&]() -> fjord::task<bool> {
    co_await pool.schedule();
    const auto id = co_await fjord::blocking([] { return std::this_thread::get_id(); });
    EXPECT_FALSE(pool.owns_current_thread() && id == std::this_thread::get_id());
    co_return pool.owns_current_thread();
  };
  EXPECT_TRUE(fjord::sync_wait(body()));
}

// docs/io.md: blocking threads carry their own name, not that of the
// worker that happened to start them.
TEST(blocking, its_threads_are_named_fjord_blocking) {
  fjord::pool pool(fjord::pool_options{.workers = 1, .name = "named-pool"});
  auto body = [&]() -> fjord::task<std::string> {
    co_await pool.schedule();
    co_return co_await fjord::blocking([] {
      char name[16] = {};
      pthread_getname_np(pthread_self(), name, sizeof name);
      return std::string(name);
    });
  };
  EXPECT_EQ(fjord::sync_wait(body()), "fjord-blocking");
}

TEST(blocking, runs_off_every_pool_and_propagates_exceptions) {
  fjord::pool pool(fjord::pool_options{.workers = 1});
  auto body = [&]() -> fjord::task<std::string> {
    co_await pool.schedule();
    const bool on_pool = co_await fjord::blocking([&] { return pool.owns_current_thread(); });
    EXPECT_FALSE(on_pool);
    try {
      co_await fjord::blocking([]() -> int { throw std::runtime_error("from the call"); });
    } catch (const std::runtime_error& e) {
      co_return e.what();
    }
    co_return "no error";
  };
  EXPECT_EQ(fjord::sync_wait(body()), "from the call");
}

TEST(blocking, many_blocked_calls_do_not_hold_the_workers) {
  fjord::pool pool(fjord::pool_options{.workers = 1});
  std::atomic<bool> release{false};
  std::atomic<int> done{0};
  auto blocked = [&]() -> fjord::task<void> {
    co_await pool.schedule();
    co_await fjord::blocking([&] {
      while (!release) {
        std::this_thread::sleep_for(1ms);
      }
    });
    done.fetch_add(1);
  };
  auto releaser = [&]() -> fjord::task<void> {
    co_await pool.schedule();
    // Runs on the pool's only worker while 16 calls block: they are not on it.
    release = true;
    co_return;
  };
  std::vector<fjord::task<void>> tasks;
  for (int i = 0; i < 16; ++i) {
    tasks.push_back(blocked());
  }
  tasks.push_back(releaser());
  fjord::sync_wait(fjord::when_all(std::move(tasks)));
  EXPECT_EQ(done.load(), 16);
}

// Puts the blocking pool's default limits back when a test ends, however
// it ends (an ASSERT returns early).
struct default_limits_restored {
  default_limits_restored() = default;
  default_limits_restored(const default_limits_restored&) = delete;
  default_limits_restored& operator=(const default_limits_restored&) = delete;
  ~default_limits_restored() {
    try {
      fjord::set_blocking_limits(512, 10s);
    } catch (const std::exception& e) {
      ADD_FAILURE() << "restoring the limits: " << e.what();
    }
  }
};

// Makes n calls that each wait until all n are inside (30 s at most), so
// the pool grows to n threads at least; returns how many got inside.
int calls_inside_at_once(int n) {
  std::atomic<int> inside{0};
  std::atomic<bool> release{false};
  auto call = [&]() -> fjord::task<void> {
    co_await fjord::blocking([&] {
      inside.fetch_add(1);
      while (!release) {
        std::this_thread::sleep_for(1ms);
      }
    });
  };
  std::thread releaser([&] {
    const auto give_up = std::chrono::steady_clock::now() + 30s;
    while (inside < n && std::chrono::steady_clock::now() < give_up) {
      std::this_thread::sleep_for(1ms);
    }
    release = true;
  });
  std::vector<fjord::task<void>> tasks;
  for (int i = 0; i < n; ++i) {
    tasks.push_back(call());
  }
  fjord::sync_wait(fjord::when_all(std::move(tasks)));
  releaser.join();
  return inside.load();
}

TEST(blocking, the_pool_grows_on_demand_and_shrinks_when_idle) {
  fjord::set_blocking_limits(64, 30s);  // long enough to count them on a loaded machine
  const int inside = calls_inside_at_once(8);
  EXPECT_EQ(inside, 8);
  EXPECT_GE(fjord::blocking_threads(), 8u);
  // Idle threads end after the keep-alive (a shorter one now: set_limits
  // makes idle threads look at it again).
  fjord::set_blocking_limits(64, 50ms);
  const auto give_up = std::chrono::steady_clock::now() + 30s;
  while (fjord::blocking_threads() != 0 && std::chrono::steady_clock::now() < give_up) {
    std::this_thread::sleep_for(10ms);
  }
  EXPECT_EQ(fjord::blocking_threads(), 0u);
  fjord::set_blocking_limits(512, 10s);
}

TEST(blocking, under_a_trickle_of_calls_the_threads_not_needed_end) {
  // A call goes to the thread that went idle last, so one thread serves a
  // trickle of calls one at a time and the others reach their keep-alive.
  // (Were idle threads woken in turn, each would be used every 8 calls,
  // well within its keep-alive, and all 8 would stay.)
  const default_limits_restored restore;
  fjord::set_blocking_limits(64, 250ms);
  const int inside = calls_inside_at_once(8);
  ASSERT_EQ(inside, 8);
  ASSERT_GE(fjord::blocking_threads(), 8u);
  auto one_call = []() -> fjord::task<int> {
    co_return co_await fjord::blocking([] { return 1; });
  };
  int calls = 0;
  // A call every 10 ms for 8 keep-alives: the thread that ran a call is
  // idle again well before the next (a third thread stays only if that
  // takes over 10 ms twice within a keep-alive).
  const auto until = std::chrono::steady_clock::now() + 2s;
  while (std::chrono::steady_clock::now() < until) {
    calls += fjord::sync_wait(one_call());
    std::this_thread::sleep_for(10ms);
  }
  EXPECT_GT(calls, 0);
  EXPECT_LE(fjord::blocking_threads(), 2u);
}

// The child's exit: status 0 within 20 s (killed otherwise).
void expect_a_clean_exit(pid_t child) {
  int status = 0;
  pid_t ended = 0;
  const auto give_up = std::chrono::steady_clock::now() + 20s;
  while ((ended = ::waitpid(child, &status, WNOHANG)) == 0 &&
         std::chrono::steady_clock::now() < give_up) {
    std::this_thread::sleep_for(1ms);
  }
  if (ended == 0) {
    ::kill(child, SIGKILL);
    ::waitpid(child, &status, 0);
  }
  ASSERT_EQ(ended, child) << "the child was still there after 20 s";
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "status " << status;
}

TEST(blocking, a_child_forked_inside_a_call_ends_when_the_call_returns) {
  // In the child, the forking thread is the only one and the pool is
  // forgotten: when f returns, the child ends with _exit(0) rather than go
  // idle in the forgotten pool for its keep-alive (or hang on its lock).
  fjord::set_blocking_limits(512, 60s);
  const pid_t child = fjord::sync_wait([]() -> fjord::task<pid_t> {
    co_return co_await fjord::blocking([] { return ::fork(); });
  }());
  if (child == 0) {
    return;  // not reached: the child's only thread ends once f returns
  }
  ASSERT_GT(child, 0);
  expect_a_clean_exit(child);
  fjord::set_blocking_limits(512, 10s);
}

TEST(blocking, a_child_forked_inside_a_call_from_a_pool_never_runs_the_continuation) {
  // The coroutine is on a pool: waking it in the child would take locks of
  // a pool whose threads are gone, or run the parent's continuation there.
  // The child must end (status 0) before that.
  fjord::pool pool(fjord::pool_options{.workers = 1});
  const pid_t child = fjord::sync_wait([](fjord::pool& p) -> fjord::task<pid_t> {
    co_await p.schedule();
    const pid_t pid = co_await fjord::blocking([] { return ::fork(); });
    if (pid == 0) {
      ::_exit(7);  // the continuation ran in the child
    }
    co_return pid;
  }(pool));
  ASSERT_GT(child, 0);
  expect_a_clean_exit(child);
}

// Whether a thread may go back from SCHED_IDLE and a nice value 5 higher to
// the main thread's policy and nice value (it needs CAP_SYS_NICE or a high
// enough RLIMIT_NICE): tried on a scratch thread.
bool may_undo_a_background_placement() {
  bool undone = false;
  std::thread([&undone] {
    const pid_t main_thread = ::getpid();
    sched_param param{};
    const int policy = ::sched_getscheduler(main_thread);
    ::sched_getparam(main_thread, &param);
    const int nice = ::getpriority(PRIO_PROCESS, static_cast<id_t>(main_thread));
    const sched_param zero{};
    undone = ::sched_setscheduler(0, SCHED_IDLE, &zero) == 0 &&
             ::setpriority(PRIO_PROCESS, 0, nice + 5) == 0 &&
             ::sched_setscheduler(0, policy, &param) == 0 &&
             ::setpriority(PRIO_PROCESS, 0, nice) == 0;
  }).join();
  return undone;
}

// A thread's CPU count, scheduling policy and nice value.
struct thread_placement {
  int cpus = 0;
  int policy = -1;
  int nice = 0;
  static thread_placement of_this_thread() {
    cpu_set_t set;
    CPU_ZERO(&set);
    ::sched_getaffinity(0, sizeof set, &set);
    return {CPU_COUNT(&set), ::sched_getscheduler(0), ::getpriority(PRIO_PROCESS, 0)};
  }
};

// The placement of a worker of p, and of the blocking thread that runs a
// call it makes.
std::pair<thread_placement, thread_placement> placements_seen_from(fjord::pool& p) {
  return fjord::sync_wait(
      [](fjord::pool& on) -> fjord::task<std::pair<thread_placement, thread_placement>> {
        co_await on.schedule();
        const thread_placement worker = thread_placement::of_this_thread();
        const thread_placement thread =
            co_await fjord::blocking([] { return thread_placement::of_this_thread(); });
        co_return std::pair{worker, thread};
      }(p));
}

TEST(blocking, a_thread_started_from_a_pinned_worker_takes_the_main_threads_placement) {
  cpu_set_t main_cpus;
  CPU_ZERO(&main_cpus);
  ASSERT_EQ(::sched_getaffinity(::getpid(), sizeof main_cpus, &main_cpus), 0);
  if (CPU_COUNT(&main_cpus) < 2) {
    GTEST_SKIP() << "the main thread may run on one CPU only: nothing to tell apart";
  }
  int first_cpu = 0;
  while (!CPU_ISSET(first_cpu, &main_cpus)) {
    ++first_cpu;
  }
  const int main_policy = ::sched_getscheduler(::getpid());
  const int main_nice = ::getpriority(PRIO_PROCESS, static_cast<id_t>(::getpid()));
  // The worker runs on one CPU, as SCHED_IDLE, 5 nicer (a background pool's hook).
  auto background = [first_cpu](std::size_t) {
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(first_cpu, &one);
    ASSERT_EQ(::sched_setaffinity(0, sizeof one, &one), 0);
    const sched_param zero{};
    ASSERT_EQ(::sched_setscheduler(0, SCHED_IDLE, &zero), 0);
    ASSERT_EQ(::setpriority(PRIO_PROCESS, 0, ::getpriority(PRIO_PROCESS, 0) + 5), 0);
  };
  fjord::pool pool(fjord::pool_options{.workers = 1, .on_thread_start = background});
  // No idle blocking thread left, so the worker's call starts a new one.
  const default_limits_restored restore;
  fjord::set_blocking_limits(512, 0ms);
  const auto give_up = std::chrono::steady_clock::now() + 30s;
  while (fjord::blocking_threads() != 0 && std::chrono::steady_clock::now() < give_up) {
    std::this_thread::sleep_for(1ms);
  }
  ASSERT_EQ(fjord::blocking_threads(), 0u);
  const auto [worker, thread] = placements_seen_from(pool);
  EXPECT_EQ(worker.cpus, 1);
  EXPECT_EQ(worker.policy, SCHED_IDLE);
  EXPECT_EQ(thread.cpus, CPU_COUNT(&main_cpus));  // always permitted
  if (main_nice + 5 <= 19) {
    EXPECT_EQ(worker.nice, main_nice + 5);
  }
  // Policy and nice go back only where the system lets a thread do so.
  if (may_undo_a_background_placement()) {
    EXPECT_EQ(thread.policy, main_policy);
    EXPECT_EQ(thread.nice, main_nice);
  }
}

TEST(blocking, a_main_thread_marked_reset_on_fork_gives_its_blocking_threads_sched_other) {
  if (!may_undo_a_background_placement()) {
    GTEST_SKIP() << "leaving SCHED_IDLE needs CAP_SYS_NICE or RLIMIT_NICE here";
  }
  // In a child, whose blocking pool starts empty and whose main thread the
  // test may change for good: SCHED_BATCH, reset on fork. The worker (made
  // by it, so SCHED_OTHER) turns itself SCHED_IDLE; the blocking thread it
  // starts must drop both for SCHED_OTHER, not copy SCHED_BATCH.
  const pid_t child = ::fork();
  if (child == 0) {
    const sched_param zero{};
    if (::sched_setscheduler(0, SCHED_BATCH | SCHED_RESET_ON_FORK, &zero) != 0) {
      ::_exit(2);
    }
    auto background = [](std::size_t) {
      const sched_param none{};
      ::sched_setscheduler(0, SCHED_IDLE, &none);
    };
    int code = 3;
    {
      fjord::pool pool(fjord::pool_options{.workers = 1, .on_thread_start = background});
      const auto [worker, thread] = placements_seen_from(pool);
      code = worker.policy == SCHED_IDLE && thread.policy == SCHED_OTHER ? 0 : 4;
    }
    ::_exit(code);
  }
  ASSERT_GT(child, 0);
  expect_a_clean_exit(child);
}

TEST(blocking, a_limit_of_one_thread_runs_calls_one_after_another) {
  fjord::set_blocking_limits(1, 1s);
  std::atomic<int> concurrent{0};
  std::atomic<int> most{0};
  auto call = [&]() -> fjord::task<void> {
    co_await fjord::blocking([&] {
      const int now = concurrent.fetch_add(1) + 1;
      int seen = most.load();
      while (now > seen && !most.compare_exchange_weak(seen, now)) {
      }
      std::this_thread::sleep_for(1ms);
      concurrent.fetch_sub(1);
    });
  };
  std::vector<fjord::task<void>> tasks;
  for (int i = 0; i < 20; ++i) {
    tasks.push_back(call());
  }
  fjord::sync_wait(fjord::when_all(std::move(tasks)));
  EXPECT_EQ(most.load(), 1);
  fjord::set_blocking_limits(512, 10s);
}

TEST(blocking, threads_above_a_lowered_limit_end_when_idle) {
  fjord::set_blocking_limits(64, std::chrono::hours(1));
  EXPECT_EQ(calls_inside_at_once(6), 6);
  EXPECT_GE(fjord::blocking_threads(), 6u);
  // The keep-alive is an hour: only the lowered limit can end them.
  fjord::set_blocking_limits(2, std::chrono::hours(1));
  const auto give_up = std::chrono::steady_clock::now() + 30s;
  while (fjord::blocking_threads() > 2 && std::chrono::steady_clock::now() < give_up) {
    std::this_thread::sleep_for(5ms);
  }
  EXPECT_LE(fjord::blocking_threads(), 2u);
  fjord::set_blocking_limits(512, 10s);
}

TEST(blocking, a_raised_limit_starts_threads_for_queued_calls) {
  fjord::set_blocking_limits(1, 1s);
  std::atomic<int> inside{0};
  std::atomic<int> most{0};
  std::atomic<bool> release{false};
  auto call = [&]() -> fjord::task<void> {
    co_await fjord::blocking([&] {
      const int now = inside.fetch_add(1) + 1;
      int seen = most.load();
      while (now > seen && !most.compare_exchange_weak(seen, now)) {
      }
      while (!release) {
        std::this_thread::sleep_for(1ms);
      }
      inside.fetch_sub(1);
    });
  };
  std::thread controller([&] {
    const auto give_up = std::chrono::steady_clock::now() + 30s;
    // One call runs at the limit of one; the other three queue behind it.
    while (inside < 1 && std::chrono::steady_clock::now() < give_up) {
      std::this_thread::sleep_for(1ms);
    }
    std::this_thread::sleep_for(20ms);
    fjord::set_blocking_limits(4, 1s);
    // Only threads started for the queued calls can bring all four in.
    while (inside < 4 && std::chrono::steady_clock::now() < give_up) {
      std::this_thread::sleep_for(1ms);
    }
    release = true;
  });
  std::vector<fjord::task<void>> tasks;
  for (int i = 0; i < 4; ++i) {
    tasks.push_back(call());
  }
  fjord::sync_wait(fjord::when_all(std::move(tasks)));
  controller.join();
  EXPECT_EQ(most.load(), 4);
  fjord::set_blocking_limits(512, 10s);
}

TEST(blocking, bad_limits_are_refused_by_value) {
  try {
    fjord::set_blocking_limits(0, 1s);
    FAIL() << "no error";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("not 0"), std::string::npos) << e.what();
  }
  EXPECT_THROW(fjord::set_blocking_limits(4, -1s), std::invalid_argument);
  EXPECT_THROW(fjord::set_blocking_limits(4, std::chrono::hours::min()), std::invalid_argument);
  EXPECT_THROW(fjord::set_blocking_limits(
                   4, std::chrono::duration<double>(std::numeric_limits<double>::quiet_NaN())),
               std::invalid_argument);
}

TEST(blocking, a_stop_request_does_not_end_a_call_that_runs) {
  std::stop_source source;
  std::atomic<bool> inside{false};
  std::atomic<bool> release{false};
  std::thread stopper([&] {
    while (!inside) {
      std::this_thread::yield();
    }
    source.request_stop();
    std::this_thread::sleep_for(20ms);
    release = true;
  });
  auto body = [&]() -> fjord::task<int> {
    co_return co_await fjord::blocking([&] {
      inside = true;
      while (!release) {
        std::this_thread::sleep_for(1ms);
      }
      return 42;
    });
  };
  const int got = fjord::sync_wait(fjord::with_stop_token(source.get_token(), body()));
  stopper.join();
  EXPECT_EQ(got, 42);  // f's result: the co_await waited for it
}

TEST(blocking, a_keep_alive_too_long_for_nanoseconds_saturates) {
  const default_limits_restored restore;
  // Each overflows when converted to nanoseconds as is (to a negative count).
  EXPECT_NO_THROW(fjord::set_blocking_limits(4, std::chrono::hours::max()));
  EXPECT_NO_THROW(fjord::set_blocking_limits(4, std::chrono::seconds::max()));
  EXPECT_NO_THROW(fjord::set_blocking_limits(4, std::chrono::milliseconds::max()));
  EXPECT_NO_THROW(fjord::set_blocking_limits(4, std::chrono::duration<double>(1e300)));
  // Just below 2^63 ns as a float: its conversion to nanoseconds in float
  // rounds up to 2^63, past the range.
  EXPECT_NO_THROW(fjord::set_blocking_limits(4, std::chrono::duration<float>(9223371776.0F)));
  // And it keeps an idle thread alive.
  EXPECT_EQ(fjord::sync_wait([]() -> fjord::task<int> {
              co_return co_await fjord::blocking([] { return 1; });
            }()),
            1);
  std::this_thread::sleep_for(50ms);
  EXPECT_GE(fjord::blocking_threads(), 1u);
}

}  // namespace
