#include "fjord/registered_fd.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <stdexcept>
#include <stop_token>
#include <system_error>
#include <thread>

#include "fjord/detail/reactor.hpp"
#include "fjord/pool.hpp"
#include "fjord/readiness.hpp"
#include "fjord/spawn.hpp"
#include "fjord/stop_token.hpp"
#include "fjord/sync_wait.hpp"
#include "fjord/task.hpp"
#include "fjord/when_all.hpp"

namespace {

using namespace std::chrono_literals;
using fjord::io_status;

// A non-blocking pipe, closed at the end of the test.
struct pipe_pair {
  int read_end = -1;
  int write_end = -1;
  pipe_pair() {
    int fds[2];
    if (::pipe2(fds, O_NONBLOCK | O_CLOEXEC) != 0) {
      throw std::system_error(errno, std::generic_category(), "pipe2");
    }
    read_end = fds[0];
    write_end = fds[1];
  }
  ~pipe_pair() {
    ::close(read_end);
    ::close(write_end);
  }
  pipe_pair(const pipe_pair&) = delete;
  pipe_pair& operator=(const pipe_pair&) = delete;
  void put(char c = 'x') const { ASSERT_EQ(::write(write_end, &c, 1), 1); }
};

TEST(registered_fd, a_ready_fd_is_ready_at_once) {
  const pipe_pair p;
  p.put();
  const fjord::registered_fd r(p.read_end);
  auto body = [&]() -> fjord::task<io_status> { co_return co_await r.readable(); };
  EXPECT_EQ(fjord::sync_wait(body()), io_status::ready);
}

TEST(registered_fd, waits_until_data_comes_from_another_thread) {
  const pipe_pair p;
  const fjord::registered_fd r(p.read_end);
  std::thread writer([&] {
    std::this_thread::sleep_for(20ms);
    p.put();
  });
  auto body = [&]() -> fjord::task<io_status> { co_return co_await r.readable(10s); };
  EXPECT_EQ(fjord::sync_wait(body()), io_status::ready);
  writer.join();
}

TEST(registered_fd, times_out_when_nothing_comes) {
  const pipe_pair p;
  const fjord::registered_fd r(p.read_end);
  auto body = [&]() -> fjord::task<io_status> { co_return co_await r.readable(20ms); };
  const auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(fjord::sync_wait(body()), io_status::timeout);
  EXPECT_GE(std::chrono::steady_clock::now() - start, 20ms);
}

TEST(registered_fd, a_stop_request_cancels_the_wait) {
  const pipe_pair p;
  const fjord::registered_fd r(p.read_end);
  std::stop_source source;
  std::thread stopper([&] {
    std::this_thread::sleep_for(20ms);
    source.request_stop();
  });
  auto body = [&]() -> fjord::task<io_status> {
    co_return co_await r.readable({}, source.get_token());
  };
  EXPECT_EQ(fjord::sync_wait(body()), io_status::canceled);
  stopper.join();
}

TEST(registered_fd, a_stop_requested_before_the_wait_cancels_it_at_once) {
  const pipe_pair p;
  const fjord::registered_fd r(p.read_end);
  std::stop_source source;
  source.request_stop();
  auto body = [&]() -> fjord::task<io_status> {
    co_return co_await r.readable(10s, source.get_token());
  };
  EXPECT_EQ(fjord::sync_wait(body()), io_status::canceled);
}

TEST(registered_fd, the_coroutines_own_stop_token_cancels_the_wait) {
  const pipe_pair p;
  const fjord::registered_fd r(p.read_end);
  std::stop_source source;
  auto wait = [&]() -> fjord::task<io_status> { co_return co_await r.readable(); };
  std::thread stopper([&] {
    std::this_thread::sleep_for(20ms);
    source.request_stop();
  });
  EXPECT_EQ(fjord::sync_wait(fjord::with_stop_token(source.get_token(), wait())),
            io_status::canceled);
  stopper.join();
}

TEST(registered_fd, closing_the_registration_ends_a_pending_wait_with_closed) {
  const pipe_pair p;
  fjord::pool pool(fjord::pool_options{.workers = 2});
  fjord::registered_fd r(p.read_end);
  std::atomic<bool> waiting{false};
  auto body = [&]() -> fjord::task<io_status> {
    co_await pool.schedule();
    waiting = true;
    co_return co_await r.readable();
  };
  std::thread closer([&] {
    while (!waiting) {
      std::this_thread::yield();
    }
    std::this_thread::sleep_for(20ms);
    r.close();
  });
  EXPECT_EQ(fjord::sync_wait(body()), io_status::closed);
  closer.join();
}

TEST(registered_fd, a_one_off_wait_on_an_fd_closed_meanwhile_ends_by_its_deadline) {
  // As readable()'s header warns: the close takes the fd out of epoll
  // silently, so nothing but the deadline ends the wait. The close comes
  // from a second child of the same when_all, which runs once the wait has
  // suspended (so after it registered the fd), on the same thread.
  int fds[2];
  ASSERT_EQ(::pipe2(fds, O_NONBLOCK | O_CLOEXEC), 0);
  auto wait = [&]() -> fjord::task<io_status> { co_return co_await fjord::readable(fds[0], 1s); };
  auto close_both = [&]() -> fjord::task<void> {
    ::close(fds[0]);
    ::close(fds[1]);  // the writer goes too: no event can say so
    co_return;
  };
  auto body = [&]() -> fjord::task<io_status> {
    auto [status, closed] = co_await fjord::when_all(wait(), close_both());
    static_cast<void>(closed);
    co_return status;
  };
  EXPECT_EQ(fjord::sync_wait(body()), io_status::timeout);
}

TEST(registered_fd, a_wait_on_a_closed_registration_ends_at_once) {
  const pipe_pair p;
  fjord::registered_fd r(p.read_end);
  r.close();
  EXPECT_FALSE(r.is_registered());
  auto body = [&]() -> fjord::task<io_status> { co_return co_await r.readable(10s); };
  EXPECT_EQ(fjord::sync_wait(body()), io_status::closed);
}

TEST(registered_fd, two_readers_at_once_is_an_error_naming_the_fd) {
  const pipe_pair p;
  fjord::pool pool(fjord::pool_options{.workers = 2});
  const fjord::registered_fd r(p.read_end);
  std::atomic<bool> first_waiting{false};
  auto first = [&]() -> fjord::task<io_status> {
    co_await pool.schedule();
    first_waiting = true;
    co_return co_await r.readable(10s);
  };
  auto second = [&]() -> fjord::task<std::string> {
    co_await pool.schedule();
    while (!first_waiting) {
      std::this_thread::yield();
    }
    std::this_thread::sleep_for(10ms);
    try {
      co_await r.readable(10s);
    } catch (const std::logic_error& e) {
      p.put();  // lets the first one finish
      co_return e.what();
    }
    co_return "no error";
  };
  auto both = [&]() -> fjord::task<std::string> {
    auto [status, message] = co_await fjord::when_all(first(), second());
    EXPECT_EQ(status, io_status::ready);
    co_return message;
  };
  const std::string message = fjord::sync_wait(both());
  EXPECT_NE(message.find("fd " + std::to_string(p.read_end)), std::string::npos) << message;
}

TEST(registered_fd, a_bad_fd_is_refused_by_name) {
  try {
    const fjord::registered_fd r(-5);
    FAIL() << "no error";
  } catch (const std::system_error& e) {
    EXPECT_NE(std::string(e.what()).find("fd -5"), std::string::npos) << e.what();
  }
  const int regular = ::open("/proc/self/exe", O_RDONLY | O_CLOEXEC);
  ASSERT_GE(regular, 0);
  EXPECT_THROW(fjord::registered_fd{regular}, std::system_error);
  ::close(regular);
}

TEST(registered_fd, registrations_are_released_and_reused) {
  const pipe_pair p;
  const std::size_t before = fjord::detail::reactor::instance().registrations();
  for (int i = 0; i < 1000; ++i) {
    const fjord::registered_fd r(p.read_end);
    EXPECT_EQ(fjord::detail::reactor::instance().registrations(), before + 1);
  }
  EXPECT_EQ(fjord::detail::reactor::instance().registrations(), before);
}

TEST(registered_fd, a_ready_fd_resumes_its_coroutine_on_its_own_pool) {
  const pipe_pair p;
  fjord::pool pool(fjord::pool_options{.workers = 2});
  const fjord::registered_fd r(p.read_end);
  std::thread writer([&] {
    std::this_thread::sleep_for(10ms);
    p.put();
  });
  auto body = [&]() -> fjord::task<bool> {
    co_await pool.schedule();
    EXPECT_EQ(co_await r.readable(10s), io_status::ready);
    co_return pool.owns_current_thread();
  };
  EXPECT_TRUE(fjord::sync_wait(body()));
  writer.join();
}

double process_cpu_seconds() {
  rusage u{};
  ::getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
         static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6;
}

// No polling loop: while a coroutine waits 500 ms for an fd, the pool's
// threads sleep (one in epoll_wait, one on its futex). A spinning or
// back-off poller would burn most of a core; the bound leaves room for a
// slow, shared machine.
TEST(registered_fd, an_idle_pool_waiting_for_an_fd_uses_almost_no_cpu) {
  const pipe_pair p;
  fjord::pool pool(fjord::pool_options{.workers = 2});
  const fjord::registered_fd r(p.read_end);
  auto body = [&]() -> fjord::task<io_status> {
    co_await pool.schedule();
    co_return co_await r.readable(500ms);
  };
  const double before = process_cpu_seconds();
  EXPECT_EQ(fjord::sync_wait(body()), io_status::timeout);
  EXPECT_LT(process_cpu_seconds() - before, 0.1);
}

// A worker that never parks still serves I/O: between jobs it looks at the
// reactor. One worker runs a chain of jobs that repost themselves until the
// waiting coroutine has resumed (on that same worker).
TEST(registered_fd, a_busy_worker_polls_between_jobs) {
  const pipe_pair p;
  fjord::pool pool(fjord::pool_options{.workers = 1});
  const fjord::registered_fd r(p.read_end);
  std::atomic<bool> resumed{false};
  std::atomic<bool> chain_running{false};
  std::atomic<long> chain_jobs{0};
  const auto give_up = std::chrono::steady_clock::now() + 10s;
  std::function<void()> link = [&] {
    chain_running = true;
    chain_jobs.fetch_add(1);
    if (!resumed && std::chrono::steady_clock::now() < give_up) {
      pool.post(link);
    }
  };
  auto waiter = [&]() -> fjord::task<void> {
    pool.post(link);  // the chain starts behind us: the worker never parks again
    EXPECT_EQ(co_await r.readable(20s), io_status::ready);
    resumed = true;
  };
  // Spawned, and waited for on plain atomics: a thread in sync_wait would
  // poll the reactor itself and serve the fd in the busy worker's place.
  fjord::spawn(pool, waiter());
  while (!chain_running) {
    std::this_thread::yield();
  }
  std::this_thread::sleep_for(20ms);
  p.put();
  while (!resumed && std::chrono::steady_clock::now() < give_up) {
    std::this_thread::sleep_for(1ms);
  }
  pool.wait_idle();
  EXPECT_TRUE(resumed.load());
  EXPECT_LT(std::chrono::steady_clock::now(), give_up);
  EXPECT_GT(chain_jobs.load(), 0);
}

// The poller of pool Q gives its role up (an fd of Q's is ready) and then
// runs a long job, while pool P's only worker sleeps on its futex (it found
// the role taken). The hand-off must reach P: else P's fd, ready soon
// after, waits for Q's job to end. No thread here may poll in Q's place:
// the test thread waits on plain atomics, not in sync_wait.
// A coroutine spawned on `pool` that waits for `r` to be readable;
// start() returns once it is waiting, and `resumed` says when it ran on.
struct spawned_fd_wait {
  std::atomic<bool> waiting{false};
  std::atomic<bool> resumed{false};

  void start(fjord::pool& pool, const fjord::registered_fd& r) {
    auto body = [](spawned_fd_wait& self, const fjord::registered_fd& fd) -> fjord::task<void> {
      self.waiting = true;
      EXPECT_EQ(co_await fd.readable(20s), io_status::ready);
      self.resumed = true;
    };
    fjord::spawn(pool, body(*this, r));
    while (!waiting) {
      std::this_thread::yield();
    }
  }
};

// docs/io.md, "Who polls": a worker out of work polls the reactor while it
// searches. With a 1 s spin budget the searcher would otherwise spin that
// long, park (becoming the poller) and only then see the fd: here the fd
// is served with no worker parking in between.
TEST(registered_fd, a_searching_worker_polls_while_it_searches) {
  const pipe_pair p;
  fjord::pool pool(fjord::pool_options{.workers = 2, .spin_budget = std::chrono::seconds(1)});
  const fjord::registered_fd r(p.read_end);
  spawned_fd_wait w;
  std::atomic<bool> busy{false};
  std::atomic<bool> last_job_done{false};
  const auto give_up = std::chrono::steady_clock::now() + 10s;
  w.start(pool, r);
  // One worker stays in a job until the coroutine runs (so it cannot
  // poll between jobs); the other runs a short job, then searches.
  pool.post([&] {
    busy = true;
    while (!w.resumed && std::chrono::steady_clock::now() < give_up) {
    }
  });
  while (!busy) {
    std::this_thread::yield();
  }
  pool.post([&] { last_job_done = true; });
  while (!last_job_done) {
    std::this_thread::yield();
  }
  std::this_thread::sleep_for(5ms);  // the searcher is well into its search
  const std::uint64_t parks_before = pool.stats().total().parks;
  p.put();
  while (!w.resumed && std::chrono::steady_clock::now() < give_up) {
    std::this_thread::yield();
  }
  const std::uint64_t parks_after = pool.stats().total().parks;
  EXPECT_TRUE(w.resumed.load());
  EXPECT_EQ(parks_after, parks_before) << "a worker parked before the fd was served";
  pool.wait_idle();
}

// docs/io.md, "Who polls": the worker woken from epoll counts itself a
// searcher before it resumes the coroutines, so resuming one wakes no other
// worker: it runs that one itself.
TEST(registered_fd, the_poller_runs_the_coroutine_it_resumed_without_waking_another_worker) {
  const pipe_pair p;
  fjord::pool pool(fjord::pool_options{.workers = 2, .spin_budget = std::chrono::microseconds(0)});
  const fjord::registered_fd r(p.read_end);
  spawned_fd_wait w;
  w.start(pool, r);
  std::this_thread::sleep_for(50ms);  // both workers parked, one in epoll_wait
  const std::uint64_t wakeups_before = pool.stats().total().wakeups;
  p.put();
  const auto give_up = std::chrono::steady_clock::now() + 10s;
  while (!w.resumed && std::chrono::steady_clock::now() < give_up) {
    std::this_thread::yield();
  }
  std::this_thread::sleep_for(50ms);  // a worker woken for nothing would show by now
  EXPECT_TRUE(w.resumed.load());
  EXPECT_EQ(pool.stats().total().wakeups - wakeups_before, 1U);
  pool.wait_idle();
}

TEST(registered_fd, the_poller_role_is_handed_on_across_pools) {
  const pipe_pair for_p;
  const pipe_pair for_q;
  fjord::pool p(fjord::pool_options{.workers = 1, .name = "p"});
  fjord::pool q(fjord::pool_options{.workers = 1, .name = "q"});
  const fjord::registered_fd rp(for_p.read_end);
  const fjord::registered_fd rq(for_q.read_end);
  std::atomic<bool> p_resumed{false};
  std::atomic<bool> q_spun_until_p{false};
  std::atomic<int> done{0};
  auto on_q = [&]() -> fjord::task<void> {
    EXPECT_EQ(co_await rq.readable(20s), io_status::ready);
    // Q's only worker is busy now, until P's coroutine resumed (or 10 s).
    const auto give_up = std::chrono::steady_clock::now() + 10s;
    while (!p_resumed && std::chrono::steady_clock::now() < give_up) {
    }
    q_spun_until_p = p_resumed.load();
    done.fetch_add(1);
  };
  auto on_p = [&]() -> fjord::task<void> {
    EXPECT_EQ(co_await rp.readable(20s), io_status::ready);
    p_resumed = true;
    done.fetch_add(1);
  };
  fjord::spawn(q, on_q());
  std::this_thread::sleep_for(50ms);  // Q's worker parks as the poller
  fjord::spawn(p, on_p());
  std::this_thread::sleep_for(50ms);  // P's worker parks on its futex
  for_q.put();
  std::this_thread::sleep_for(20ms);  // Q's worker leaves the role and spins
  for_p.put();
  const auto give_up = std::chrono::steady_clock::now() + 30s;
  while (done < 2 && std::chrono::steady_clock::now() < give_up) {
    std::this_thread::sleep_for(1ms);
  }
  ASSERT_EQ(done.load(), 2);
  EXPECT_TRUE(q_spun_until_p.load()) << "P's fd waited for Q's long job to end";
}

// A pool being destroyed waits for a coroutine waiting on an fd (as for a
// sleep); closing the registration lets it finish.
TEST(registered_fd, destroying_a_pool_waits_for_a_coroutine_waiting_for_an_fd) {
  const pipe_pair p;
  fjord::registered_fd r(p.read_end);
  std::atomic<int> outcome{-1};
  std::thread closer;
  // Outlives the pool: the coroutine reads its captures while the pool's
  // destructor waits.
  auto body = [&]() -> fjord::task<void> { outcome = static_cast<int>(co_await r.readable()); };
  {
    fjord::pool pool(fjord::pool_options{.workers = 2});
    fjord::spawn(pool, body());
    closer = std::thread([&] {
      std::this_thread::sleep_for(30ms);
      r.close();
    });
  }
  EXPECT_EQ(outcome.load(), static_cast<int>(io_status::closed));
  closer.join();
}

TEST(readable, a_one_off_wait_on_an_eventfd) {
  const int efd = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  ASSERT_GE(efd, 0);
  fjord::pool pool(fjord::pool_options{.workers = 2});
  std::thread signaller([&] {
    std::this_thread::sleep_for(10ms);
    const std::uint64_t one = 1;
    ASSERT_EQ(::write(efd, &one, sizeof one), static_cast<ssize_t>(sizeof one));
  });
  auto body = [&]() -> fjord::task<io_status> {
    co_await pool.schedule();
    co_return co_await fjord::readable(efd, 10s);
  };
  EXPECT_EQ(fjord::sync_wait(body()), io_status::ready);
  signaller.join();
  // Unregistered after: a second one-off wait can register it again.
  auto again = [&]() -> fjord::task<io_status> { co_return co_await fjord::readable(efd, 1ms); };
  EXPECT_EQ(fjord::sync_wait(again()), io_status::ready);
  ::close(efd);
}

TEST(writable, an_empty_pipe_is_writable) {
  const pipe_pair p;
  auto body = [&]() -> fjord::task<io_status> { co_return co_await fjord::writable(p.write_end); };
  EXPECT_EQ(fjord::sync_wait(body()), io_status::ready);
}

// Many coroutines on a pool, each waiting for its own pipe with a deadline
// that races the data: every wait ends exactly once, as ready or timeout,
// and a timeout is only reported when the data was not there in time.
TEST(registered_fd, timeouts_racing_readiness_end_every_wait_once) {
  fjord::pool pool(fjord::pool_options{.workers = 2});
  constexpr int n = 200;
  std::vector<std::unique_ptr<pipe_pair>> pipes;
  for (int i = 0; i < n; ++i) {
    pipes.push_back(std::make_unique<pipe_pair>());
  }
  std::atomic<int> ready{0};
  std::atomic<int> timed_out{0};
  auto waiter = [&](int i) -> fjord::task<void> {
    co_await pool.schedule();
    const fjord::registered_fd r(pipes[i]->read_end);
    const io_status s = co_await r.readable(std::chrono::microseconds(50 + 20 * (i % 50)));
    (s == io_status::ready ? ready : timed_out).fetch_add(1);
  };
  std::thread writer([&] {
    for (int i = 0; i < n; ++i) {
      pipes[i]->put();
      if (i % 16 == 0) {
        std::this_thread::sleep_for(100us);
      }
    }
  });
  std::vector<fjord::task<void>> tasks;
  for (int i = 0; i < n; ++i) {
    tasks.push_back(waiter(i));
  }
  fjord::sync_wait(fjord::when_all(std::move(tasks)));
  writer.join();
  EXPECT_EQ(ready + timed_out, n);
}

}  // namespace
