// Dynamic scaling: bounds, resize(), growth, shrinking after idle_timeout,
// replacing workers blocked without block_in_place, following the CPUs.
#include <dirent.h>
#include <gtest/gtest.h>
#include <pthread.h>
#include <sched.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <functional>
#include <latch>
#include <random>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "fjord/block_in_place.hpp"
#include "fjord/pool.hpp"
#include "fjord/shutdown_error.hpp"
#include "support/eventually.hpp"

namespace {

using namespace std::chrono_literals;
using clock_type = std::chrono::steady_clock;

using fjord_test::eventually;

// Sleeps in steps (blocking the thread, without telling any pool) until
// flag is set or 10 s passed; the flag.
bool sleep_until_set(const std::atomic<bool>& flag, std::chrono::microseconds step) {
  const auto end = clock_type::now() + 10s;
  while (!flag.load() && clock_type::now() < end) {
    std::this_thread::sleep_for(step);
  }
  return flag.load();
}

std::string message_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "(no exception)";
}

TEST(pool_scaling, bad_bounds_are_rejected_by_name_and_value) {
  using fjord::pool_options;
  EXPECT_NE(message_of([] {
              fjord::pool p(pool_options{.min_workers = 0});
            }).find("min_workers must be in [1, 4096], got 0"),
            std::string::npos);
  EXPECT_NE(message_of([] {
              fjord::pool p(pool_options{.min_workers = 3, .max_workers = 2});
            }).find("min_workers (3) must not exceed max_workers (2)"),
            std::string::npos);
  EXPECT_NE(message_of([] {
              fjord::pool p(pool_options{.workers = 5, .min_workers = 1, .max_workers = 4});
            }).find("workers (5) must lie in [min_workers, max_workers] = [1, 4]"),
            std::string::npos);
  EXPECT_NE(message_of([] {
              fjord::pool p(pool_options{.workers = 1, .idle_timeout = 0ms});
            }).find("idle_timeout must be in [1ms, 24h], got 0ms"),
            std::string::npos);
  EXPECT_NE(message_of([] {
              fjord::pool p(pool_options{.workers = 1, .idle_timeout = 25h});
            }).find("got 90000000ms"),
            std::string::npos);
  EXPECT_NE(message_of([] {
              fjord::pool p(pool_options{.workers = 1, .replace_blocked_after = 99us});
            }).find("replace_blocked_after must be 0 (off) or in [100us, 24h], got 99us"),
            std::string::npos);
  EXPECT_NE(message_of([] {
              fjord::pool p(pool_options{.workers = 1, .max_workers = 5000});
            }).find("max_workers must be in [1, 4096], got 5000"),
            std::string::npos);
}

TEST(pool_scaling, an_unset_bound_is_the_starting_count) {
  fjord::pool fixed(fjord::pool_options{.workers = 3});
  EXPECT_EQ(fixed.min_workers(), 3u);
  EXPECT_EQ(fixed.max_workers(), 3u);
  fjord::pool low(fjord::pool_options{.workers = 2, .min_workers = 1});
  EXPECT_EQ(low.min_workers(), 1u);
  EXPECT_EQ(low.max_workers(), 2u);
  EXPECT_EQ(low.size(), 2u);
  fjord::pool high(fjord::pool_options{.workers = 1, .max_workers = 4});
  EXPECT_EQ(high.min_workers(), 1u);
  EXPECT_EQ(high.max_workers(), 4u);
  EXPECT_EQ(high.size(), 1u);
  // workers unset: the CPUs, clamped to the bounds.
  fjord::pool clamped(fjord::pool_options{.min_workers = 5, .max_workers = 6});
  EXPECT_EQ(clamped.size(), 5u);
}

TEST(pool_scaling, resize_rejects_bad_bounds_and_a_closed_pool) {
  fjord::pool p(fjord::pool_options{.workers = 1, .max_spare_threads = 3});
  EXPECT_THROW(p.resize(0), std::invalid_argument);
  EXPECT_THROW(p.resize(3, 2), std::invalid_argument);
  EXPECT_NE(message_of([&] { p.resize(1, 5); }).find("<= 4"), std::string::npos);
  p.resize(4);  // every slot
  EXPECT_EQ(p.size(), 4u);
  p.close();
  EXPECT_THROW(p.resize(2), fjord::shutdown_error);
}

// n jobs that each wait until all n run at once: only n concurrent threads
// finish them.
void run_concurrently(fjord::pool& p, int n) {
  std::latch all(n);
  std::atomic<int> done{0};
  for (int i = 0; i < n; ++i) {
    p.post([&] {
      all.arrive_and_wait();
      done.fetch_add(1);
    });
  }
  ASSERT_TRUE(eventually([&] { return done.load() == n; }));
}

TEST(pool_scaling, resize_up_starts_workers_at_once) {
  fjord::pool p(fjord::pool_options{.workers = 1});
  p.resize(3);
  EXPECT_EQ(p.size(), 3u);
  EXPECT_EQ(p.min_workers(), 3u);
  EXPECT_EQ(p.max_workers(), 3u);
  run_concurrently(p, 3);
  EXPECT_EQ(p.stats().running_threads, 3u);
}

TEST(pool_scaling, resize_down_retires_workers_and_keeps_them_for_later) {
  fjord::pool p(fjord::pool_options{.workers = 3});
  p.resize(1);
  EXPECT_EQ(p.size(), 1u);
  ASSERT_TRUE(eventually([&] {
    const fjord::pool_stats s = p.stats();
    return s.running_threads == 1 && s.retired_threads == 2;
  }));
  std::atomic<int> ran{0};
  for (int i = 0; i < 1000; ++i) {
    p.post([&] { ran.fetch_add(1); });
  }
  p.wait_idle();
  EXPECT_EQ(ran.load(), 1000);
  // Back up: the retired threads come back; no new thread is made.
  p.resize(3);
  run_concurrently(p, 3);
  EXPECT_EQ(p.stats().workers.size(), 3u);
}

TEST(pool_scaling, every_job_runs_exactly_once_while_resize_races_posters) {
  fjord::pool p(fjord::pool_options{.workers = 2, .max_spare_threads = 8});
  constexpr int posters = 3;
  constexpr int per_poster = 20000;
  std::vector<std::atomic<int>> runs(std::size_t{posters} * per_poster);
  std::atomic<bool> posting{true};
  std::thread resizer([&] {
    std::mt19937 rng(7);
    for (int resizes = 0; posting.load() || resizes < 300; ++resizes) {
      const std::size_t lo = 1 + rng() % 4;
      p.resize(lo, lo + rng() % 3);
      std::this_thread::sleep_for(std::chrono::microseconds(rng() % 500));
    }
  });
  std::vector<std::thread> threads;
  for (int t = 0; t < posters; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < per_poster; ++i) {
        p.post([&runs, k = t * per_poster + i] {
          if (k % 1000 == 0) {
            std::this_thread::sleep_for(200us);
          }
          runs[k].fetch_add(1, std::memory_order_relaxed);
        });
      }
    });
  }
  for (auto& t : threads) {
    t.join();
  }
  posting.store(false);
  resizer.join();
  p.wait_idle();
  for (std::size_t k = 0; k < runs.size(); ++k) {
    ASSERT_EQ(runs[k].load(), 1) << "job " << k;
  }
  // Surplus workers retire as they come round to it (wait_idle may see the
  // pool quiescent before they woke).
  ASSERT_TRUE(eventually([&] {
    const fjord::pool_stats s = p.stats();
    return s.running_threads == p.size() &&
           s.running_threads + s.retired_threads == s.workers.size();
  }));
}

TEST(pool_scaling, idle_workers_beyond_the_minimum_leave_after_the_idle_timeout) {
  fjord::pool p(
      fjord::pool_options{.workers = 3, .min_workers = 1, .max_workers = 3, .idle_timeout = 50ms});
  // Three jobs that run at once; each notes when it ended.
  std::latch all(3);
  std::atomic<int> done{0};
  std::atomic<clock_type::rep> first_end{0};
  for (int i = 0; i < 3; ++i) {
    p.post([&] {
      all.arrive_and_wait();
      clock_type::rep none = 0;
      first_end.compare_exchange_strong(none, clock_type::now().time_since_epoch().count());
      done.fetch_add(1);
    });
  }
  ASSERT_TRUE(eventually([&] { return done.load() == 3; }));
  ASSERT_TRUE(eventually([&] { return p.size() == 1 && p.stats().running_threads == 1; }));
  // Not before the timeout: each worker parks after its own job ended, so
  // after the first one did.
  const clock_type::time_point ended{clock_type::duration(first_end.load())};
  EXPECT_GE(clock_type::now() - ended, 50ms);
  EXPECT_EQ(p.stats().retired_threads, 2u);
  // And it stays there: the minimum never leaves.
  std::this_thread::sleep_for(150ms);
  EXPECT_EQ(p.size(), 1u);
}

TEST(pool_scaling, the_pool_grows_while_work_waits_and_every_worker_is_busy) {
  fjord::pool p(
      fjord::pool_options{.workers = 1, .min_workers = 1, .max_workers = 3, .idle_timeout = 100ms});
  // Three jobs that only finish together: the one worker blocks in the
  // first (without saying so), so the other two need workers the pool adds.
  run_concurrently(p, 3);
  EXPECT_EQ(p.size(), 3u);
  // Never beyond max_workers, however long work waits.
  std::latch release(1);
  std::atomic<int> started{0};
  for (int i = 0; i < 5; ++i) {
    p.post([&] {
      started.fetch_add(1);
      release.wait();
    });
  }
  ASSERT_TRUE(eventually([&] { return started.load() == 3; }));
  std::this_thread::sleep_for(30ms);
  EXPECT_EQ(started.load(), 3);
  EXPECT_EQ(p.size(), 3u);
  release.count_down();
  p.wait_idle();
  EXPECT_EQ(started.load(), 5);
  // Idle again: back to the minimum.
  ASSERT_TRUE(eventually([&] { return p.size() == 1; }));
}

TEST(pool_scaling, a_worker_blocked_without_saying_so_gets_a_stand_in) {
  fjord::pool p(fjord::pool_options{.workers = 1, .replace_blocked_after = 1ms});
  // The first job waits for the second, queued behind it on a one-worker
  // pool: only a stand-in can run the second.
  std::atomic<bool> second_ran{false};
  std::atomic<bool> first_saw_it{false};
  p.post([&] { first_saw_it.store(sleep_until_set(second_ran, 200us)); });
  p.post([&] { second_ran.store(true); });
  p.wait_idle();
  EXPECT_TRUE(first_saw_it.load());
  // The stand-in retired when the first job returned.
  ASSERT_TRUE(eventually([&] { return p.stats().running_threads == 1; }));
  EXPECT_EQ(p.size(), 1u);
}

TEST(pool_scaling, a_presumed_block_and_block_in_place_count_once) {
  fjord::pool p(fjord::pool_options{.workers = 1, .replace_blocked_after = 1ms});
  std::atomic<bool> go_on{false};
  p.post([&] {
    while (!go_on.load()) {
      std::this_thread::sleep_for(200us);  // presumed blocked after ~1 ms
    }
    fjord::block_in_place([] { std::this_thread::sleep_for(5ms); });
  });
  p.post([&] { go_on.store(true); });  // needs the stand-in
  p.wait_idle();
  ASSERT_TRUE(eventually([&] {
    const fjord::pool_stats s = p.stats();
    return s.running_threads == 1 && s.running_threads + s.retired_threads == s.workers.size();
  }));
  run_concurrently(p, 1);
}

std::chrono::nanoseconds this_thread_cpu() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return std::chrono::seconds(t.tv_sec) + std::chrono::nanoseconds(t.tv_nsec);
}

TEST(pool_scaling, a_drain_still_gets_a_stand_in_for_a_blocked_worker) {
  // Destroyed at once: the drain itself needs the stand-in.
  std::atomic<bool> second_ran{false};
  std::atomic<bool> first_saw_it{false};
  {
    fjord::pool p(fjord::pool_options{.workers = 1, .replace_blocked_after = 1ms});
    p.post([&] { first_saw_it.store(sleep_until_set(second_ran, 200us)); });
    p.post([&] { second_ran.store(true); });
  }
  EXPECT_TRUE(first_saw_it.load());
}

TEST(pool_scaling, a_paused_pool_neither_grows_nor_replaces) {
  fjord::pool p(fjord::pool_options{
      .workers = 1, .min_workers = 1, .max_workers = 3, .replace_blocked_after = 1ms});
  p.pause();
  std::atomic<int> ran{0};
  for (int i = 0; i < 10; ++i) {
    p.post([&] { ran.fetch_add(1); });
  }
  std::this_thread::sleep_for(50ms);
  EXPECT_EQ(p.size(), 1u);
  EXPECT_EQ(p.stats().workers.size(), 1u);
  EXPECT_EQ(ran.load(), 0);
  p.resume();
  p.wait_idle();
  EXPECT_EQ(ran.load(), 10);
}

TEST(pool_scaling, a_lower_minimum_lets_an_idle_fixed_pool_shrink) {
  fjord::pool p(fjord::pool_options{.workers = 3, .idle_timeout = 20ms});
  run_concurrently(p, 3);
  std::this_thread::sleep_for(40ms);
  EXPECT_EQ(p.size(), 3u);  // fixed: the timeout does not apply
  p.resize(1, 3);
  ASSERT_TRUE(eventually([&] { return p.size() == 1; }));
  EXPECT_EQ(p.max_workers(), 3u);
}

TEST(pool_scaling, resize_from_a_job_while_the_pool_closes_does_not_hang) {
  for (int trial = 0; trial < 20; ++trial) {
    fjord::pool p(fjord::pool_options{.workers = 2});
    std::atomic<bool> started{false};
    p.post([&] {
      started.store(true);
      for (int i = 0; i < 200; ++i) {
        try {
          p.resize(1, 2 + (i % 2));
        } catch (const fjord::shutdown_error&) {
          return;  // closing: refused, as documented
        }
      }
    });
    while (!started.load()) {
      std::this_thread::yield();
    }
    p.close();
    EXPECT_THROW(p.resize(1, 3), fjord::shutdown_error);
  }
}

TEST(pool_scaling, resize_in_a_fork_child_is_refused) {
  fjord::pool p(fjord::pool_options{.workers = 1});
  const pid_t child = ::fork();
  ASSERT_NE(child, -1);
  if (child == 0) {
    try {
      p.resize(2);
    } catch (const std::logic_error&) {
      std::_Exit(p.stats().running_threads == 0 ? 0 : 2);
    }
    std::_Exit(1);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
}

TEST(pool_scaling, the_thread_back_from_blocking_retires_and_its_stand_in_keeps_going) {
  // The preference lasts about a time slice: on a loaded machine the
  // returning thread may miss it, so one clean try out of three is enough.
  bool stand_in_kept = false;
  for (int attempt = 0; attempt < 3 && !stand_in_kept; ++attempt) {
    fjord::pool p(fjord::pool_options{.workers = 1});
    std::atomic<pthread_t> blocker{};
    std::atomic<pthread_t> stand_in{};
    std::atomic<bool> stand_in_ran{false};
    p.post([&] {
      blocker.store(pthread_self());
      fjord::block_in_place([&] { sleep_until_set(stand_in_ran, 1ms); });
    });
    p.post([&] {
      stand_in.store(pthread_self());
      stand_in_ran.store(true);
    });
    p.wait_idle();
    ASSERT_TRUE(stand_in_ran.load());
    ASSERT_TRUE(eventually([&] { return p.stats().running_threads == 1; }));
    // The one running thread is the stand-in: later work runs there.
    std::atomic<pthread_t> later{};
    p.post([&] { later.store(pthread_self()); });
    p.wait_idle();
    stand_in_kept = pthread_equal(later.load(), stand_in.load()) != 0 &&
                    pthread_equal(later.load(), blocker.load()) == 0;
  }
  EXPECT_TRUE(stand_in_kept);
}

TEST(pool_scaling, a_thread_woken_onto_a_blockers_cpu_gets_its_own_cpus_back) {
  cpu_set_t process;
  ASSERT_EQ(sched_getaffinity(0, sizeof(process), &process), 0);
  if (CPU_COUNT(&process) < 2) {
    GTEST_SKIP() << "needs two CPUs";
  }
  fjord::pool p(fjord::pool_options{.workers = 1});
  // The first episode starts a stand-in thread; in the later ones the
  // blocker wakes a retired thread, lending it its CPU.
  for (int episode = 0; episode < 4; ++episode) {
    std::atomic<bool> checked{false};
    std::atomic<int> cpus_seen{0};
    // Both queued before the worker starts either: the blocker sees the
    // second waiting when it blocks.
    p.pause();
    p.post([&] { fjord::block_in_place([&] { sleep_until_set(checked, 1ms); }); });
    p.post([&] {
      cpu_set_t mine;
      sched_getaffinity(0, sizeof(mine), &mine);
      cpus_seen.store(CPU_COUNT(&mine));
      checked.store(true);
    });
    p.resume();
    p.wait_idle();
    EXPECT_EQ(cpus_seen.load(), CPU_COUNT(&process)) << "episode " << episode;
    ASSERT_TRUE(eventually([&] { return p.stats().running_threads == 1; }));
  }
}

TEST(pool_scaling, a_computing_job_is_not_replaced) {
  // A job that computes keeps its place: the job behind it waits (a thread
  // waiting for a CPU on a loaded machine counts as computing). One clean
  // try out of three is enough, should the scheduler statistics lag.
  bool kept = false;
  for (int attempt = 0; attempt < 3 && !kept; ++attempt) {
    fjord::pool p(fjord::pool_options{.workers = 1, .replace_blocked_after = 1ms});
    std::atomic<bool> second_ran{false};
    std::atomic<bool> overtaken{false};
    p.post([&] {
      const auto cpu_end = this_thread_cpu() + 30ms;
      while (this_thread_cpu() < cpu_end) {
        if (second_ran.load(std::memory_order_relaxed)) {
          overtaken.store(true);
        }
      }
    });
    p.post([&] { second_ran.store(true); });
    p.wait_idle();
    kept = !overtaken.load() && p.stats().workers.size() == 1;
  }
  EXPECT_TRUE(kept);
}

TEST(pool_scaling, jobs_run_exactly_once_while_the_pool_grows_and_shrinks) {
  fjord::pool p(fjord::pool_options{.workers = 1,
                                    .max_spare_threads = 16,
                                    .min_workers = 1,
                                    .max_workers = 4,
                                    .idle_timeout = 2ms,
                                    .replace_blocked_after = 500us});
  constexpr int rounds = 20;
  constexpr int per_round = 2000;
  std::vector<std::atomic<int>> runs(std::size_t{rounds} * per_round);
  std::mt19937 rng(11);
  for (int r = 0; r < rounds; ++r) {
    std::vector<std::thread> posters;
    for (int t = 0; t < 2; ++t) {
      posters.emplace_back([&, t, seed = rng()] {
        std::mt19937 local(seed);
        for (int i = t; i < per_round; i += 2) {
          const int k = r * per_round + i;
          const auto kind = static_cast<unsigned>(local() % 100);
          p.post([&runs, k, kind] {
            if (kind == 0) {
              std::this_thread::sleep_for(1ms);  // blocks, unannounced
            } else if (kind == 1) {
              fjord::block_in_place([] { std::this_thread::sleep_for(500us); });
            }
            runs[k].fetch_add(1, std::memory_order_relaxed);
          });
        }
      });
    }
    for (auto& t : posters) {
      t.join();
    }
    if (r % 4 == 3) {
      p.wait_idle();
      std::this_thread::sleep_for(std::chrono::milliseconds(rng() % 6));  // some shrink
    }
  }
  p.wait_idle();
  for (std::size_t k = 0; k < runs.size(); ++k) {
    ASSERT_EQ(runs[k].load(), 1) << "job " << k;
  }
  const fjord::pool_stats s = p.stats();
  EXPECT_GE(p.size(), 1u);
  EXPECT_LE(p.size(), 4u);
  EXPECT_EQ(s.running_threads + s.retired_threads, s.workers.size());
}

// The kernel's id of the thread named `name` in this process, or -1.
pid_t thread_named(const std::string& name) {
  pid_t found = -1;
  if (DIR* d = ::opendir("/proc/self/task")) {
    while (const dirent* e = ::readdir(d)) {  // NOLINT(concurrency-mt-unsafe): one reader
      if (e->d_name[0] == '.') {
        continue;
      }
      std::ifstream comm(std::string("/proc/self/task/") + e->d_name + "/comm");
      std::string line;
      std::getline(comm, line);
      if (line == name) {
        found = static_cast<pid_t>(std::atoi(e->d_name));
      }
    }
    ::closedir(d);
  }
  return found;
}

TEST(pool_scaling, a_pool_made_without_counts_follows_the_cpus_it_may_use) {
  if (fjord::available_cpus() < 2) {
    GTEST_SKIP() << "needs two CPUs";
  }
  fjord::pool p(fjord::pool_options{.name = "follow"});
  const std::size_t start = p.size();
  EXPECT_EQ(start, fjord::available_cpus());
  // Narrow the CPUs the monitor sees (as a cgroup quota or a changed mask
  // would): it reads them from its own thread.
  const pid_t monitor = thread_named("follow-mon");
  ASSERT_NE(monitor, -1);
  cpu_set_t one;
  CPU_ZERO(&one);
  CPU_SET(sched_getcpu(), &one);
  ASSERT_EQ(sched_setaffinity(monitor, sizeof(one), &one), 0);
  // It looks while the pool is busy, about once a second.
  std::atomic<bool> stop{false};
  p.post([&] {
    while (!stop.load()) {
      std::this_thread::sleep_for(1ms);
    }
  });
  const bool followed = eventually([&] { return p.size() == 1; });
  stop.store(true);
  EXPECT_TRUE(followed);
  EXPECT_EQ(p.min_workers(), 1u);
  EXPECT_EQ(p.max_workers(), 1u);
  // An explicit resize ends the following.
  p.resize(2);
  EXPECT_EQ(p.size(), 2u);
}

TEST(pool_scaling, a_pool_given_a_count_has_no_monitor) {
  fjord::pool p(fjord::pool_options{.workers = 2, .name = "fixedpool"});
  EXPECT_EQ(thread_named("fixedpool-mon"), -1);
  fjord::pool scaling(fjord::pool_options{.workers = 1, .name = "grows", .max_workers = 2});
  EXPECT_NE(thread_named("grows-mon"), -1);
}

}  // namespace
