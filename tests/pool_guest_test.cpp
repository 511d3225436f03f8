// Callers that join a pool for their calls (pool_options::callers_join;
// docs/scheduler.md, "Callers that join").
#include <pthread.h>

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <stdexcept>
#include <thread>
#include <vector>

#include "fjord/block_in_place.hpp"
#include "fjord/detail/borrowed_stack.hpp"
#include "fjord/detail/pool_core.hpp"
#include "fjord/join.hpp"
#include "fjord/pool.hpp"
#include "fjord/sync_wait.hpp"
#include "fjord/task.hpp"
#include "support/blocked_worker.hpp"
#include "support/eventually.hpp"
#include "support/nested_joins.hpp"

namespace {

using namespace std::chrono_literals;

constexpr bool can_join = fjord::detail::borrowed_stack::supported;

long fib(int n) {
  if (n < 2) {
    return n;
  }
  auto [x, y] = fjord::join([n] { return fib(n - 1); }, [n] { return fib(n - 2); });
  return x + y;
}

// Runs f on a new thread with a stack of `stack` bytes and waits for it.
template <class F>
void on_thread_with_stack(std::size_t stack, F f) {
  pthread_attr_t attr;
  ASSERT_EQ(pthread_attr_init(&attr), 0);
  ASSERT_EQ(pthread_attr_setstacksize(&attr, stack), 0);
  pthread_t t{};
  ASSERT_EQ(pthread_create(
                &t, &attr,
                [](void* p) -> void* {
                  (*static_cast<F*>(p))();
                  return nullptr;
                },
                &f),
            0);
  pthread_attr_destroy(&attr);
  pthread_join(t, nullptr);
}

struct where {
  std::thread::id thread;
  bool owned = false;
  std::optional<std::size_t> index;
  fjord::pool* current = nullptr;
};

where where_called(fjord::pool& p) {
  return p.call([&p] {
    return where{std::this_thread::get_id(), p.owns_current_thread(), p.this_thread_index(),
                 fjord::current_pool()};
  });
}

// A call that another thread holds open (as the pool's guest, when it may
// join) until release(); the constructor returns once the call has begun.
class call_held_open {
 public:
  explicit call_held_open(fjord::pool& p)
      : caller_([this, &p] {
          p.call([this] {
            inside_ = true;
            while (!release_.load()) {
              std::this_thread::sleep_for(1ms);
            }
          });
        }) {
    EXPECT_TRUE(fjord_test::eventually([this] { return inside_.load(); }));
  }
  ~call_held_open() { release(); }
  call_held_open(const call_held_open&) = delete;
  call_held_open& operator=(const call_held_open&) = delete;
  void release() {
    release_ = true;
    if (caller_.joinable()) {
      caller_.join();
    }
  }

 private:
  std::atomic<bool> inside_{false};
  std::atomic<bool> release_{false};
  std::thread caller_;
};

TEST(callers_join, a_call_from_outside_runs_on_the_calling_thread) {
  if (!can_join) {
    GTEST_SKIP() << "no stack switch on this architecture: calls go to a worker";
  }
  fjord::pool p(fjord::pool_options{.workers = 2});
  const where w = where_called(p);
  EXPECT_EQ(w.thread, std::this_thread::get_id());
  // In the pool for the call, but not one of its numbered threads.
  EXPECT_TRUE(w.owned);
  EXPECT_FALSE(w.index.has_value());
  EXPECT_EQ(w.current, &p);
  EXPECT_FALSE(p.owns_current_thread()) << "the caller left the pool when the call returned";
  EXPECT_EQ(fjord::current_pool(), nullptr);
  EXPECT_GE(p.stats().callers.jobs_run, 1u);
}

TEST(callers_join, calls_go_to_a_worker_when_callers_may_not_join) {
  const auto on_a_worker = [](fjord::pool& p) {
    const where w = where_called(p);
    EXPECT_NE(w.thread, std::this_thread::get_id());
    EXPECT_TRUE(w.owned);
    EXPECT_TRUE(w.index.has_value());
  };
  {
    fjord::pool p(fjord::pool_options{.workers = 1, .callers_join = false});
    on_a_worker(p);
  }
  {
    // Thread hooks set up state on the pool's threads: calls run there.
    fjord::pool p(fjord::pool_options{.workers = 1, .on_thread_start = [](std::size_t) {}});
    on_a_worker(p);
  }
  {
    cpu_set_t set;
    CPU_ZERO(&set);
    ASSERT_EQ(sched_getaffinity(0, sizeof(set), &set), 0);
    unsigned cpu = 0;
    while (!CPU_ISSET(cpu, &set)) {
      ++cpu;
    }
    // Placed pools run their calls on the CPUs they were given.
    fjord::pool p(fjord::pool_options{.workers = 1, .cpus = std::vector<unsigned>{cpu}});
    on_a_worker(p);
  }
}

TEST(callers_join, a_call_gets_the_pools_stack_whatever_the_callers) {
  if (!can_join) {
    GTEST_SKIP() << "no stack switch on this architecture";
  }
  // About 200 bytes a nested join in an optimised build, far more under
  // the sanitizers: either way several MiB, against a caller's 256 KiB.
#if defined(NDEBUG) && !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)
  constexpr int depth = 40000;
#else
  constexpr int depth = 4000;
#endif
  fjord::pool p(fjord::pool_options{.workers = 2});
  int result = 0;
  bool on_caller = false;
  on_thread_with_stack(std::size_t{256} * 1024, [&] {
    const auto caller = std::this_thread::get_id();
    result = p.call([&] {
      on_caller = std::this_thread::get_id() == caller;
      return fjord_test::nested_joins(depth);
    });
  });
  EXPECT_EQ(result, depth);
  EXPECT_TRUE(on_caller);
}

TEST(callers_join, a_second_caller_meanwhile_hands_its_call_to_a_worker) {
  if (!can_join) {
    GTEST_SKIP() << "no stack switch on this architecture";
  }
  fjord::pool p(fjord::pool_options{.workers = 2});
  call_held_open first(p);
  const where w = where_called(p);
  EXPECT_NE(w.thread, std::this_thread::get_id()) << "the guest's place was taken";
  EXPECT_TRUE(w.index.has_value());
  first.release();
  // Free again: this caller joins now.
  EXPECT_EQ(where_called(p).thread, std::this_thread::get_id());
}

TEST(callers_join, exceptions_reach_the_caller) {
  fjord::pool p(fjord::pool_options{.workers = 2});
  EXPECT_THROW(p.call([]() -> int { throw std::runtime_error("from the call"); }),
               std::runtime_error);
  // A throwing half of a join inside the call, too.
  EXPECT_THROW(p.call([] {
    fjord::join([] { return fib(10); }, []() -> long { throw std::invalid_argument("b"); });
  }),
               std::invalid_argument);
  EXPECT_EQ(p.call([] { return fib(15); }), 610);
}

TEST(callers_join, a_guest_takes_no_work_submitted_from_outside) {
  if (!can_join) {
    GTEST_SKIP() << "no stack switch on this architecture";
  }
  fjord::pool p(fjord::pool_options{.workers = 1});
  // The only worker is held, so a job submitted from outside waits in the
  // injection queue while the guest waits for it (helping as it waits).
  std::atomic<bool> hold{true};
  std::atomic<bool> holding{false};
  p.post([&] {
    holding = true;
    while (hold.load()) {
      std::this_thread::sleep_for(100us);
    }
  });
  ASSERT_TRUE(fjord_test::eventually([&] { return holding.load(); }));
  fjord::future<std::thread::id> submitted = p.submit([] { return std::this_thread::get_id(); });
  const auto caller = std::this_thread::get_id();
  std::thread release([&] {
    std::this_thread::sleep_for(20ms);
    hold = false;
  });
  const std::thread::id ran_on = p.call([&] { return submitted.get(); });
  release.join();
  EXPECT_NE(ran_on, caller) << "the guest ran a job submitted from outside";
}

TEST(callers_join, an_overflow_of_the_guest_stack_is_reported_as_such) {
  if (!can_join) {
    GTEST_SKIP() << "no stack switch on this architecture";
  }
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_DEATH(
      {
        fjord::pool p(fjord::pool_options{.workers = 1, .stack_size = std::size_t{256} * 1024});
        struct deep {
          static int down(int n) {
            volatile char frame[512];
            frame[0] = static_cast<char>(n);
            return n == 0 ? frame[0] : down(n - 1) + frame[0];
          }
        };
        p.call([] { return deep::down(1 << 30); });
      },
      "stack.overflow");
}

TEST(callers_join, a_worker_steals_from_the_guest) {
  fjord::pool p(fjord::pool_options{.workers = 2});
  // The first half waits for the second to start, which only a worker that
  // steals it from the caller's deque can do.
  const bool stolen = p.call([] {
    const auto caller = std::this_thread::get_id();
    std::atomic<bool> second_started{false};
    std::thread::id second_ran_on;
    fjord::join(
        [&] {
          while (!second_started.load()) {
            std::this_thread::yield();
          }
        },
        [&] {
          second_ran_on = std::this_thread::get_id();
          second_started = true;
        });
    return second_ran_on != caller;
  });
  EXPECT_TRUE(stolen);
}

TEST(callers_join, work_a_call_leaves_behind_runs_exactly_once) {
  fjord::pool p(fjord::pool_options{.workers = 2});
  constexpr int posts = 1000;
  std::vector<std::atomic<int>> ran(posts);
  // Posts from inside the call go on the guest's deque; whatever nobody
  // took when the call returns goes to the pool's queues.
  p.call([&] {
    for (int i = 0; i < posts; ++i) {
      p.post([&ran, i] { ran[static_cast<std::size_t>(i)].fetch_add(1); });
    }
  });
  p.wait_idle();
  for (const auto& r : ran) {
    ASSERT_EQ(r.load(), 1);
  }
  EXPECT_EQ(fjord::detail::pool_access::core(p).live_heap_blocks(), 0);
}

TEST(callers_join, a_coroutine_started_in_a_call_may_end_on_a_worker) {
  fjord::pool p(fjord::pool_options{.workers = 2});
  auto hop = [](fjord::pool& pool) -> fjord::task<int> {
    co_await pool.schedule();
    co_return 7;
  };
  std::optional<fjord::task<int>> started;
  p.call([&] { started.emplace(hop(p)); });
  EXPECT_EQ(fjord::sync_wait(std::move(*started)), 7);
  // The waiting counts of the guest and the workers add up: the pool goes
  // idle and ends.
  p.wait_idle();
  EXPECT_EQ(fjord::detail::pool_access::core(p).waiting_coroutines(), 0);
}

TEST(callers_join, wait_idle_waits_for_a_call_in_progress) {
  if (!can_join) {
    GTEST_SKIP() << "no stack switch on this architecture";
  }
  fjord::pool p(fjord::pool_options{.workers = 2});
  call_held_open caller(p);
  std::atomic<bool> idle{false};
  std::thread waiter([&] {
    p.wait_idle();
    idle = true;
  });
  // Every worker is idle, yet the call is work in the pool.
  std::this_thread::sleep_for(50ms);
  EXPECT_FALSE(idle.load());
  caller.release();
  EXPECT_TRUE(fjord_test::eventually([&] { return idle.load(); }));
  waiter.join();
}

TEST(callers_join, a_paused_pool_runs_no_call_until_resumed) {
  fjord::pool p(fjord::pool_options{.workers = 1});
  p.pause();
  std::atomic<bool> ran{false};
  std::thread caller([&] { p.call([&] { ran = true; }); });
  std::this_thread::sleep_for(50ms);
  EXPECT_FALSE(ran.load());
  p.resume();
  caller.join();
  EXPECT_TRUE(ran.load());
}

TEST(callers_join, a_paused_pool_is_destroyed_while_a_guest_waits_for_queued_work) {
  if (!can_join) {
    GTEST_SKIP() << "no stack switch on this architecture";
  }
  auto p = std::make_unique<fjord::pool>(fjord::pool_options{.workers = 1});
  std::atomic<bool> inside{false};
  std::atomic<bool> go{false};
  std::optional<fjord::future<int>> queued;
  std::atomic<int> got{0};
  std::thread caller([&] {
    got = p->call([&] {
      inside = true;
      while (!go.load()) {
        std::this_thread::sleep_for(1ms);
      }
      // Queued from outside: only a worker runs it, and the worker is paused.
      return queued->get();
    });
  });
  ASSERT_TRUE(fjord_test::eventually([&] { return inside.load(); }));
  p->pause();
  queued.emplace(p->submit([] { return 5; }));
  go = true;
  // The destructor resumes the pool before it waits for the guest to leave.
  std::atomic<bool> destroyed{false};
  std::thread destroyer([&] {
    p.reset();
    destroyed = true;
  });
  EXPECT_TRUE(fjord_test::eventually([&] { return destroyed.load(); }));
  destroyer.join();
  caller.join();
  EXPECT_EQ(got.load(), 5);
}

TEST(callers_join, a_guest_calls_into_another_pool) {
  fjord::pool a(fjord::pool_options{.workers = 1});
  fjord::pool b(fjord::pool_options{.workers = 1});
  const auto r = a.call([&] {
    // A guest of a is a worker of no pool for b: b's worker runs this one.
    return b.call([&] { return b.owns_current_thread() && b.this_thread_index().has_value(); });
  });
  EXPECT_TRUE(r);
  EXPECT_EQ(a.call([&] {
    return fjord::join(
               b, [] { return fib(12); }, [] { return 1; })
        .first;
  }),
            144);
}

TEST(callers_join, many_callers_at_once_each_get_their_results) {
  fjord::pool p(fjord::pool_options{.workers = 2});
  constexpr int threads = 4;
  constexpr int calls = 200;
  std::atomic<int> wrong{0};
  std::atomic<long> leaves{0};
  std::vector<std::thread> ts;
  for (int t = 0; t < threads; ++t) {
    ts.emplace_back([&, t] {
      for (int i = 0; i < calls; ++i) {
        const int n = 8 + (t + i) % 8;
        const long r = p.call([&] {
          leaves.fetch_add(1, std::memory_order_relaxed);
          return fib(n);
        });
        long expected = 0;
        long next = 1;
        for (int k = 0; k < n; ++k) {
          const long sum = expected + next;
          expected = next;
          next = sum;
        }
        if (r != expected) {
          wrong.fetch_add(1);
        }
      }
    });
  }
  for (auto& t : ts) {
    t.join();
  }
  EXPECT_EQ(wrong.load(), 0);
  EXPECT_EQ(leaves.load(), threads * calls);
  p.wait_idle();
  EXPECT_EQ(fjord::detail::pool_access::core(p).live_heap_blocks(), 0);
}

// Waits until the pool's worker `index` has gone to sleep at least once.
void wait_until_parked(fjord::pool& p, std::size_t index = 0) {
  ASSERT_TRUE(fjord_test::eventually([&] { return p.stats().workers[index].parks >= 1; }));
}

TEST(callers_join, the_caller_takes_the_place_of_a_one_worker_pools_worker) {
  if (!can_join) {
    GTEST_SKIP() << "no stack switch on this architecture";
  }
  // A pool of one thread runs a joined call on one thread: the caller's.
  // Its worker, asleep, is not woken for the call's forks.
  fjord::pool p(fjord::pool_options{.workers = 1});
  wait_until_parked(p);
  for (int i = 0; i < 50; ++i) {
    EXPECT_EQ(p.call([] { return fib(18); }), 2584);
  }
  const fjord::pool_stats s = p.stats();
  EXPECT_EQ(s.workers[0].jobs_run, 0U);
  EXPECT_EQ(s.workers[0].steals, 0U);
  EXPECT_EQ(s.callers.jobs_run, 50U);
}

TEST(callers_join, work_from_outside_runs_while_the_caller_holds_the_only_place) {
  if (!can_join) {
    GTEST_SKIP() << "no stack switch on this architecture";
  }
  fjord::pool p(fjord::pool_options{.workers = 1});
  wait_until_parked(p);
  std::atomic<bool> ran{false};
  const bool seen = p.call([&] {
    std::thread poster([&] { p.post([&] { ran = true; }); });
    poster.join();
    // Waiting without telling the pool: the place stays taken, and the
    // worker must still be woken for work submitted from outside.
    return fjord_test::eventually([&] { return ran.load(); });
  });
  EXPECT_TRUE(seen);
}

TEST(callers_join, a_blocking_section_in_a_call_gives_the_callers_place_back) {
  if (!can_join) {
    GTEST_SKIP() << "no stack switch on this architecture";
  }
  fjord::pool p(fjord::pool_options{.workers = 1});
  wait_until_parked(p);
  // The first half blocks until the second has run, which only the worker
  // can do, once the caller gives its place back for the blocking section.
  const bool second_ran_on_the_worker = p.call([] {
    const auto caller = std::this_thread::get_id();
    std::atomic<bool> second_done{false};
    std::thread::id second_ran_on;
    fjord::join(
        [&] {
          fjord::block_in_place([&] {
            static_cast<void>(fjord_test::eventually([&] { return second_done.load(); }));
          });
        },
        [&] {
          second_ran_on = std::this_thread::get_id();
          second_done = true;
        });
    return second_ran_on != caller;
  });
  EXPECT_TRUE(second_ran_on_the_worker);
}

TEST(callers_join, beside_two_workers_a_fork_the_caller_waits_for_is_always_taken) {
  // One of the two workers may stand aside while the caller works, never
  // both: a first half that waits for its second half (which it may do only
  // while a worker is free to steal it) sees it taken every time, whether
  // the workers were searching or asleep when the call came.
  fjord::pool p(fjord::pool_options{.workers = 2});
  int taken = 0;
  constexpr int calls = 200;
  for (int i = 0; i < calls; ++i) {
    std::this_thread::sleep_for(std::chrono::microseconds(i % 4 == 0 ? 2000 : 20 * (i % 7)));
    const bool ok = p.call([] {
      std::atomic<bool> second_done{false};
      bool seen = false;
      fjord::join([&] { seen = fjord_test::eventually([&] { return second_done.load(); }); },
                  [&] { second_done = true; });
      return seen;
    });
    taken += ok ? 1 : 0;
  }
  EXPECT_EQ(taken, calls);
}

TEST(callers_join, a_park_inside_a_blocking_section_leaves_the_place_given_back) {
  if (!can_join) {
    GTEST_SKIP() << "no stack switch on this architecture";
  }
  fjord::pool p(fjord::pool_options{.workers = 1});
  wait_until_parked(p);
  // Inside the blocking section the caller joins and parks for a half the
  // worker stole. Waking from that park must not take the place back while
  // the section lasts: the job it posts afterwards, which it then waits for
  // without telling the pool, is the worker's to run.
  const bool posted_job_ran = p.call([&p] {
    return fjord::block_in_place([&p] {
      const std::uint64_t parks_before = p.stats().workers[0].parks;
      std::atomic<bool> second_started{false};
      fjord::join(
          [&] {
            // The worker steals the second half (the caller's place is
            // given back), so the caller then parks for it.
            EXPECT_TRUE(fjord_test::eventually([&] { return second_started.load(); }));
          },
          [&] {
            second_started = true;
            std::this_thread::sleep_for(5ms);  // the caller parks meanwhile
          });
      // The worker is asleep again (it stole, so it woke since).
      EXPECT_TRUE(
          fjord_test::eventually([&] { return p.stats().workers[0].parks > parks_before; }));
      std::atomic<bool> ran{false};
      p.post([&ran] { ran = true; });
      return fjord_test::eventually([&ran] { return ran.load(); });
    });
  });
  EXPECT_TRUE(posted_job_ran);
}

TEST(callers_join, a_worker_that_blocks_with_no_stand_in_beside_the_caller_has_its_job_taken) {
  if (!can_join) {
    GTEST_SKIP() << "no stack switch on this architecture";
  }
  // No spare threads: a worker that blocks leaves its place empty, and the
  // job it left on its deque must go to the sleeping worker, although the
  // caller (computing, holding its place) and the blocked worker seemed to
  // fill the pool's two places when the job was pushed.
  fjord::pool p(fjord::pool_options{.workers = 2, .max_spare_threads = 0});
  EXPECT_TRUE(fjord_test::job_of_blocked_worker_taken(p, {}));
}

TEST(callers_join, a_worker_presumed_blocked_with_no_stand_in_beside_the_caller_has_its_job_taken) {
  if (!can_join) {
    GTEST_SKIP() << "no stack switch on this architecture";
  }
  // Worker 1 sleeps without telling fjord: the monitor presumes it blocked
  // but has no spare to stand in, so its place is empty. Its job must reach
  // worker 0, asleep beside the caller in place; so must it once worker 1
  // says it blocks (a section begun by a presumed worker adds no phantom).
  fjord::pool p(
      fjord::pool_options{.workers = 2, .max_spare_threads = 0, .replace_blocked_after = 20ms});
  EXPECT_TRUE(fjord_test::job_of_blocked_worker_taken(p, {.before = 300ms}));
}

TEST(callers_join, the_stand_in_for_a_one_worker_pools_blocked_worker_takes_its_job) {
  if (!can_join) {
    GTEST_SKIP() << "no stack switch on this architecture";
  }
  // No sleeper to wake: the stand-in is started for the worker's phantom,
  // and holds the place the worker left; it must not stand aside for the
  // caller at its first look, or the job stays where nobody pops it.
  fjord::pool p(fjord::pool_options{.workers = 1});
  EXPECT_TRUE(fjord_test::job_of_blocked_worker_taken(p, {.blocker = 0}));
}

TEST(callers_join, the_stand_in_for_a_worker_presumed_blocked_takes_its_job) {
  if (!can_join) {
    GTEST_SKIP() << "no stack switch on this architecture";
  }
  fjord::pool p(fjord::pool_options{.workers = 1, .replace_blocked_after = 20ms});
  EXPECT_TRUE(fjord_test::job_of_blocked_worker_taken(p, {.blocker = 0, .tells = false}));
}

TEST(callers_join, the_stand_in_for_a_worker_blocked_beside_a_busy_one_takes_its_job) {
  if (!can_join) {
    GTEST_SKIP() << "no stack switch on this architecture";
  }
  fjord::pool p(fjord::pool_options{.workers = 2});
  EXPECT_TRUE(fjord_test::job_of_blocked_worker_taken(p, {.other_busy = true}));
}

TEST(callers_join, a_pool_shrunk_while_a_worker_blocks_beside_the_caller_has_its_job_taken) {
  if (!can_join) {
    GTEST_SKIP() << "no stack switch on this architecture";
  }
  // The shrink leaves no place the blocked worker's count could live in:
  // worker 0, free once it is done, must still take the job.
  fjord::pool p(fjord::pool_options{.workers = 2, .max_spare_threads = 0});
  EXPECT_TRUE(fjord_test::job_of_blocked_worker_taken(
      p, {.other_busy = true, .meanwhile = [](fjord::pool& pool) { pool.resize(1, 1); }}));
}

}  // namespace
