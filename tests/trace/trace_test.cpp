#include "fjord/trace.hpp"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <memory>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "fjord/channel.hpp"
#include "fjord/detail/trace_data.hpp"
#include "fjord/join.hpp"
#include "fjord/pool.hpp"
#include "fjord/readiness.hpp"
#include "fjord/sleep.hpp"
#include "fjord/sync_wait.hpp"
#include "fjord/task.hpp"
#include "fjord/task_group.hpp"
#include "fjord/when_all.hpp"

namespace {

using namespace std::chrono_literals;
using fjord::detail::trace_data;
using fjord::detail::trace_event;
using fjord::detail::trace_kind;

long fib(int n) {
  if (n < 2) {
    return n;
  }
  auto [a, b] = fjord::join([n] { return fib(n - 1); }, [n] { return fib(n - 2); });
  return a + b;
}

std::string temp_path(const std::string& name) {
  return (std::filesystem::temp_directory_path() /
          ("fjord_trace_test_" + std::to_string(::getpid()) + "_" + name))
      .string();
}

// The session as the binary file holds it, read back.
trace_data written_trace() {
  const std::string path = temp_path("read_back.fjtrace");
  fjord::trace::write(path);
  std::unique_ptr<std::FILE, int (*)(std::FILE*)> f(std::fopen(path.c_str(), "rb"), &std::fclose);
  EXPECT_TRUE(f);
  trace_data data = fjord::detail::read_trace_binary(f.get());
  std::filesystem::remove(path);
  return data;
}

std::size_t count_kind(const trace_data& data, trace_kind kind) {
  std::size_t n = 0;
  for (const auto& t : data.tracks) {
    for (const auto& e : t.events) {
      n += e.kind == static_cast<std::uint32_t>(kind) ? 1 : 0;
    }
  }
  return n;
}

// What every trace must satisfy (docs/tracing.md): timestamps never go
// back on a track; each job's begin has its end after it, properly nested
// (the callers stop tracing once their pools are idle: a job running as the
// trace stops has no end); a steal names a worker of the thief's pool other
// than the thief.
void expect_well_formed(const trace_data& data) {
  std::map<std::uint64_t, std::uint32_t> pool_threads;
  for (const auto& t : data.tracks) {
    if (t.pool_id != 0) {
      pool_threads[t.pool_id] = std::max(pool_threads[t.pool_id], t.worker_index + 1);
    }
  }
  for (const auto& t : data.tracks) {
    std::uint64_t last = 0;
    std::vector<std::uint64_t> open_jobs;
    bool unmatched_end = false;
    for (const auto& e : t.events) {
      EXPECT_GE(e.tsc, last) << "tid " << t.tid;
      last = e.tsc;
      const auto kind = static_cast<trace_kind>(e.kind);
      if (kind == trace_kind::job_begin) {
        open_jobs.push_back(e.a);
      } else if (kind == trace_kind::job_end) {
        if (open_jobs.empty()) {
          unmatched_end = true;  // only a job that began before start() may
        } else {
          EXPECT_EQ(open_jobs.back(), e.a) << "tid " << t.tid;
          open_jobs.pop_back();
        }
      } else if (kind == trace_kind::steal) {
        ASSERT_NE(t.pool_id, 0u) << "a steal by a thread of no pool";
        EXPECT_NE(e.small, t.worker_index);
        EXPECT_LT(e.small, pool_threads[t.pool_id] + 64);  // spares may not have recorded
      }
    }
    static_cast<void>(unmatched_end);
    EXPECT_TRUE(open_jobs.empty()) << "tid " << t.tid << ": a job began and never ended";
  }
}

TEST(trace, start_refuses_a_tiny_buffer_and_a_second_start) {
  try {
    fjord::trace::start({.buffer_bytes = 1000});
    FAIL() << "a 1000-byte buffer was accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("1000"), std::string::npos) << e.what();
  }
  EXPECT_FALSE(fjord::trace::running());
  fjord::trace::start();
  EXPECT_TRUE(fjord::trace::running());
  EXPECT_THROW(fjord::trace::start(), std::logic_error);
  fjord::trace::stop();
  fjord::trace::stop();  // no effect
  EXPECT_FALSE(fjord::trace::running());
}

TEST(trace, write_before_any_start_is_an_error_and_a_bad_path_is_named) {
  // In a process of its own (the threadsafe style runs this test alone in
  // a fresh one): earlier tests of this binary may have started sessions.
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        try {
          fjord::trace::write(temp_path("never.json"));
        } catch (const std::logic_error&) {
          std::_Exit(0);
        }
        std::_Exit(1);
      },
      ::testing::ExitedWithCode(0), "");
  fjord::trace::start();
  fjord::trace::stop();
  try {
    fjord::trace::write("/nonexistent-dir/x.json");
    FAIL() << "wrote to a directory that does not exist";
  } catch (const std::system_error& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent-dir/x.json"), std::string::npos);
  }
}

TEST(trace, fork_join_records_jobs_steals_and_parks_on_each_worker) {
  // Every call handed to a worker (injected), as callers that may not join do.
  fjord::pool pool(fjord::pool_options{.workers = 2, .callers_join = false});
  fjord::trace::start();
  long total = 0;
  for (int i = 0; i < 20; ++i) {
    total += pool.call([] { return fib(20); });
  }
  pool.wait_idle();  // every job has ended (and recorded its end)
  fjord::trace::stop();
  EXPECT_EQ(total, 20 * 6765);
  const trace_data data = written_trace();
  expect_well_formed(data);
  EXPECT_GT(count_kind(data, trace_kind::job_begin), 0u);
  EXPECT_GT(count_kind(data, trace_kind::inject), 0u);
  EXPECT_GT(count_kind(data, trace_kind::search_begin), 0u);
  // Joins are not recorded one by one (docs/tracing.md): their halves show
  // when stolen.
  EXPECT_EQ(count_kind(data, trace_kind::fork), 0u);
  std::size_t worker_tracks = 0;
  for (const auto& t : data.tracks) {
    if (t.pool_id != 0) {
      ++worker_tracks;
      EXPECT_EQ(t.pool_name, "fjord");
    }
  }
  EXPECT_GE(worker_tracks, 1u);
  EXPECT_EQ(data.dropped(), 0u);
}

TEST(trace, a_forced_steal_is_recorded_with_its_victim_and_the_stolen_job_runs_on_the_thief) {
  // The call on a worker, so that both sides of the steal are workers.
  fjord::pool pool(fjord::pool_options{.workers = 2, .callers_join = false});
  fjord::trace::start();
  // The first half waits for the second to start, which only a thief can
  // do: the other worker must steal it from this one.
  pool.call([] {
    std::atomic<bool> second_started{false};
    fjord::join(
        [&] {
          while (!second_started.load()) {
            std::this_thread::yield();
          }
        },
        [&] { second_started = true; });
  });
  pool.wait_idle();
  fjord::trace::stop();
  const trace_data data = written_trace();
  expect_well_formed(data);
  std::size_t steals = 0;
  for (const auto& t : data.tracks) {
    for (std::size_t i = 0; i < t.events.size(); ++i) {
      const trace_event& e = t.events[i];
      if (e.kind != static_cast<std::uint32_t>(trace_kind::steal)) {
        continue;
      }
      ++steals;
      EXPECT_EQ(e.small, 1 - t.worker_index) << "the victim is the other worker";
      // The thief's next job is the stolen one.
      bool ran = false;
      for (std::size_t k = i + 1; k < t.events.size() && !ran; ++k) {
        ran = t.events[k].kind == static_cast<std::uint32_t>(trace_kind::job_begin) &&
              t.events[k].a == e.a;
      }
      EXPECT_TRUE(ran);
    }
  }
  EXPECT_GE(steals, 1u);
}

TEST(trace, task_group_children_are_forks_and_each_stolen_one_follows_its_fork) {
  // Calls on a worker: the forks and steals are all on worker tracks.
  fjord::pool pool(fjord::pool_options{.workers = 2, .callers_join = false});
  fjord::trace::start();
  std::atomic<int> ran{0};
  for (int round = 0; round < 20; ++round) {
    pool.call([&] {
      fjord::task_group group;
      for (int i = 0; i < 200; ++i) {
        group.run([&] {
          // Work without joins: a stolen join half has no fork event.
          volatile long sink = 0;
          for (int k = 0; k < 2000; ++k) {
            sink = sink + k;
          }
          ran.fetch_add(1, std::memory_order_relaxed);
        });
      }
      group.wait();
    });
  }
  pool.wait_idle();  // every job has ended (and recorded its end)
  fjord::trace::stop();
  EXPECT_EQ(ran.load(), 20 * 200);
  const trace_data data = written_trace();
  expect_well_formed(data);
  EXPECT_GE(count_kind(data, trace_kind::fork), 20u * 200u);
  // Every stolen job was made stealable by a fork on its victim's track.
  std::map<std::pair<std::uint64_t, std::uint32_t>, std::set<std::uint64_t>> forks;
  for (const auto& t : data.tracks) {
    for (const auto& e : t.events) {
      if (e.kind == static_cast<std::uint32_t>(trace_kind::fork)) {
        forks[{t.pool_id, t.worker_index}].insert(e.a);
      }
    }
  }
  for (const auto& t : data.tracks) {
    for (const auto& e : t.events) {
      if (e.kind == static_cast<std::uint32_t>(trace_kind::steal)) {
        const auto& made = forks[std::make_pair(t.pool_id, e.small)];
        EXPECT_TRUE(made.contains(e.a))
            << "a stolen job that no fork on worker " << e.small << " made";
      }
    }
  }
}

TEST(trace, a_full_buffer_drops_and_counts_never_blocks) {
  fjord::trace::start({.buffer_bytes = std::size_t{1} << 20});
  constexpr std::size_t recorded = 200'000;
  for (std::size_t i = 0; i < recorded; ++i) {
    fjord::trace::instant("tick");
  }
  fjord::trace::stop();
  const trace_data data = written_trace();
  std::size_t kept = 0;
  std::uint64_t dropped = 0;
  for (const auto& t : data.tracks) {
    if (t.tid == static_cast<std::uint64_t>(::getpid())) {
      kept = t.events.size();
      dropped = t.dropped;
    }
  }
  EXPECT_GT(dropped, 0u);
  EXPECT_LE(kept * sizeof(trace_event), std::size_t{1} << 20);
  EXPECT_EQ(kept + dropped, recorded) << "every event is either kept or counted";
  EXPECT_EQ(fjord::trace::dropped(), dropped);
}

TEST(trace, a_new_session_discards_the_last_and_stop_is_immediate_for_its_caller) {
  fjord::trace::start();
  fjord::trace::instant("first session");
  fjord::trace::stop();
  fjord::trace::instant("after stop");
  fjord::trace::start();
  fjord::trace::instant("second session");
  fjord::trace::stop();
  const trace_data data = written_trace();
  std::vector<std::string> names;
  for (const auto& t : data.tracks) {
    for (const auto& e : t.events) {
      if (e.kind == static_cast<std::uint32_t>(trace_kind::instant)) {
        names.push_back(data.names.at(e.a));
      }
    }
  }
  EXPECT_EQ(names, std::vector<std::string>{"second session"});
}

TEST(trace, spans_counters_and_threads_that_exit_keep_their_events) {
  fjord::trace::start();
  std::thread t([] {
    const fjord::trace::span s("in a thread");
    fjord::trace::counter("items", -42);
  });
  t.join();
  {
    const fjord::trace::span outer("outer");
    const fjord::trace::span inner("inner");
  }
  fjord::trace::stop();
  const trace_data data = written_trace();
  std::map<std::string, int> seen;
  std::int64_t counted = 0;
  for (const auto& tr : data.tracks) {
    for (const auto& e : tr.events) {
      if (e.kind == static_cast<std::uint32_t>(trace_kind::span_begin)) {
        ++seen[data.names.at(e.a)];
      } else if (e.kind == static_cast<std::uint32_t>(trace_kind::counter)) {
        counted = static_cast<std::int64_t>(e.b);
        EXPECT_EQ(data.names.at(e.a), "items");
      }
    }
  }
  EXPECT_EQ(seen["in a thread"], 1);
  EXPECT_EQ(seen["outer"], 1);
  EXPECT_EQ(seen["inner"], 1);
  EXPECT_EQ(counted, -42);
  // The next session frees the exited thread's buffer (ASan would report a
  // leak of it otherwise, or a use after free by a reader).
  fjord::trace::start();
  fjord::trace::stop();
  EXPECT_NO_THROW(written_trace());
}

TEST(trace, coroutine_timer_channel_and_fd_waits_are_recorded) {
  fjord::pool pool(fjord::pool_options{.workers = 2});
  fjord::trace::start();
  fjord::channel<int> ch(0);  // rendezvous: one side blocks
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  auto sleeper = [&]() -> fjord::task<> {
    co_await pool.schedule();
    co_await fjord::sleep_for(20ms);
  };
  auto receiver = [&]() -> fjord::task<int> {
    co_await pool.schedule();
    auto v = co_await ch.receive();
    co_return v.value_or(-1);
  };
  auto sender = [&]() -> fjord::task<> {
    co_await pool.schedule();
    co_await fjord::sleep_for(10ms);
    co_await ch.send(7);
  };
  // Nothing is ever written: the wait must suspend, and ends by its
  // deadline (a ready fd would end it at once, unrecorded). The durations
  // leave room for preemption on a loaded machine: a wait or sleep whose
  // deadline passes before it suspends ends at once, with no timer and no
  // fd wait to record (CI once lost a 5 ms wait that way).
  auto waiter = [&]() -> fjord::task<fjord::io_status> {
    co_await pool.schedule();
    co_return co_await fjord::readable(fds[0], 100ms);
  };
  auto [a, got, b, outcome] =
      fjord::sync_wait(fjord::when_all(sleeper(), receiver(), sender(), waiter()));
  pool.wait_idle();  // every job has ended (and recorded its end)
  fjord::trace::stop();
  EXPECT_EQ(got, 7);
  EXPECT_EQ(outcome, fjord::io_status::timeout);
  ::close(fds[0]);
  ::close(fds[1]);
  const trace_data data = written_trace();
  expect_well_formed(data);
  EXPECT_GE(count_kind(data, trace_kind::coroutine_suspend), 3u);
  EXPECT_GE(count_kind(data, trace_kind::coroutine_wake), 3u);
  EXPECT_GE(count_kind(data, trace_kind::timer_fire), 3u);
  EXPECT_GE(count_kind(data, trace_kind::channel_block), 1u);
  EXPECT_GE(count_kind(data, trace_kind::channel_unblock), 1u);
  EXPECT_GE(count_kind(data, trace_kind::io_wait), 1u);
  EXPECT_GE(count_kind(data, trace_kind::io_ready), 1u);
  // A woken coroutine's job begins after its wake, on a worker.
  std::size_t woken_then_run = 0;
  for (const auto& t : data.tracks) {
    for (const auto& e : t.events) {
      if (e.kind != static_cast<std::uint32_t>(trace_kind::coroutine_wake)) {
        continue;
      }
      for (const auto& u : data.tracks) {
        for (const auto& f : u.events) {
          if (f.kind == static_cast<std::uint32_t>(trace_kind::job_begin) && f.a == e.a &&
              f.tsc >= e.tsc) {
            ++woken_then_run;
            goto next;
          }
        }
      }
    next:;
    }
  }
  EXPECT_GE(woken_then_run, 3u);
}

TEST(trace, many_pools_and_pools_ending_while_traced) {
  fjord::trace::start();
  std::atomic<bool> stop{false};
  fjord::pool shared(fjord::pool_options{.workers = 2, .name = "shared"});
  std::thread poster([&] {
    while (!stop.load()) {
      shared.post([] {});
    }
  });
  for (int round = 0; round < 10; ++round) {
    fjord::pool a(fjord::pool_options{.workers = 2, .name = "a"});
    fjord::pool b(fjord::pool_options{.workers = 1, .name = "b"});
    a.post([] { fib(12); });
    b.post([] { fib(12); });
  }  // destroyed while the poster and the trace go on
  stop = true;
  poster.join();
  shared.wait_idle();
  fjord::trace::stop();
  const trace_data data = written_trace();
  expect_well_formed(data);
  std::map<std::string, std::set<std::uint64_t>> pools;
  for (const auto& t : data.tracks) {
    if (t.pool_id != 0) {
      pools[t.pool_name].insert(t.pool_id);
    }
  }
  EXPECT_EQ(pools["a"].size(), 10u) << "one pool id for each pool a made";
  EXPECT_EQ(pools["b"].size(), 10u);
  EXPECT_EQ(pools["shared"].size(), 1u);
}

TEST(trace, a_forked_child_does_not_trace) {
  fjord::trace::start();
  const pid_t child = ::fork();
  if (child == 0) {
    const bool running = fjord::trace::running();
    fjord::trace::instant("in the child");
    ::_exit(running ? 1 : 0);
  }
  ASSERT_GT(child, 0);
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  EXPECT_TRUE(fjord::trace::running());
  fjord::trace::stop();
}

TEST(trace, json_is_the_same_whether_written_directly_or_through_the_binary_form) {
  fjord::pool pool(fjord::pool_options{.workers = 2});
  fjord::trace::start();
  pool.call([] { return fib(16); });
  fjord::trace::stop();
  const std::string json = temp_path("direct.json");
  fjord::trace::write(json);
  const trace_data data = written_trace();
  const std::string converted = temp_path("converted.json");
  {
    std::unique_ptr<std::FILE, int (*)(std::FILE*)> f(std::fopen(converted.c_str(), "wb"),
                                                      &std::fclose);
    fjord::detail::write_chrome_json(data, f.get());
  }
  auto slurp = [](const std::string& p) {
    std::unique_ptr<std::FILE, int (*)(std::FILE*)> f(std::fopen(p.c_str(), "rb"), &std::fclose);
    std::string s;
    char buf[4096];
    std::size_t n = 0;
    while ((n = std::fread(buf, 1, sizeof buf, f.get())) != 0) {
      s.append(buf, n);
    }
    return s;
  };
  const std::string a = slurp(json);
  EXPECT_EQ(a, slurp(converted));
  EXPECT_EQ(a.rfind("{\"displayTimeUnit\"", 0), 0u);
  std::filesystem::remove(json);
  std::filesystem::remove(converted);
}

}  // namespace
