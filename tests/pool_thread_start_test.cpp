// A thread started while the pool is told to wake everyone. This binary
// interposes pthread_create (its own process under ctest, so no other test
// sees it): a start made by the pool's monitor can be held after the thread
// exists, before its starter returns, the moment a starter may lose the CPU.
// The new thread runs, goes idle and parks meanwhile; whatever wakes every
// thread in that window (the pool's end here) must not miss it.
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <pthread.h>

#include <array>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <thread>

#include "fjord/detail/borrowed_stack.hpp"
#include "fjord/pool.hpp"
#include "fjord/pool_options.hpp"
#include "fjord/priority.hpp"
#include "support/blocked_worker.hpp"

namespace {

using namespace std::chrono_literals;

enum class hold { none, after_start, then_refuse };
std::atomic<hold> monitor_starts{hold::none};
std::atomic<bool> holding{false};  // a start is held in pthread_create
std::atomic<bool> let_go{false};   // ... until this
std::atomic<int> refused{0};
thread_local bool hold_here = false;  // this thread's starts too, not only the monitor's

bool called_by_the_monitor() {
  std::array<char, 16> name{};
  return pthread_getname_np(pthread_self(), name.data(), name.size()) == 0 &&
         std::strcmp(name.data(), "fjord-mon") == 0;
}

}  // namespace

extern "C" int pthread_create(pthread_t* thread, const pthread_attr_t* attr, void* (*start)(void*),
                              void* arg) {
  using create_fn = int (*)(pthread_t*, const pthread_attr_t*, void* (*)(void*), void*);
  static const auto real = reinterpret_cast<create_fn>(::dlsym(RTLD_NEXT, "pthread_create"));
  const hold mode = hold_here || called_by_the_monitor() ? monitor_starts.load() : hold::none;
  if (mode == hold::none) {
    return real(thread, attr, start, arg);
  }
  // after_start: the thread exists, its starter has not returned yet.
  // then_refuse: no thread; the start fails once the test lets it go.
  // Held from before the thread exists: it may run and finish jobs before
  // its starter gets the CPU back.
  const bool hold_it = !let_go.load();
  holding = hold_it;
  const int rc = mode == hold::after_start ? real(thread, attr, start, arg) : EAGAIN;
  if (hold_it) {
    const auto give_up = std::chrono::steady_clock::now() + 30s;
    while (!let_go && std::chrono::steady_clock::now() < give_up) {
      std::this_thread::sleep_for(1ms);
    }
    holding = false;
  }
  if (rc != 0) {
    refused.fetch_add(1);
  }
  return rc;
}

namespace {

bool sleep_until_set(const std::atomic<bool>& flag) {
  const auto end = std::chrono::steady_clock::now() + 10s;
  while (!flag.load() && std::chrono::steady_clock::now() < end) {
    std::this_thread::sleep_for(200us);
  }
  return flag.load();
}

bool sleep_until_set_count(const std::atomic<int>& count, int at_least) {
  const auto end = std::chrono::steady_clock::now() + 10s;
  while (count.load() < at_least && std::chrono::steady_clock::now() < end) {
    std::this_thread::sleep_for(200us);
  }
  return count.load() >= at_least;
}

TEST(pool_thread_start, a_pool_ends_while_its_newest_thread_is_still_being_counted) {
  auto p = std::make_unique<fjord::pool>(
      fjord::pool_options{.workers = 1, .replace_blocked_after = 1ms});
  monitor_starts = hold::after_start;
  // Each job waits for the other on a one-worker pool, so whichever runs
  // first, only a stand-in, which the monitor starts, can run the second.
  // Both are queued before either runs (a post after the monitor counted
  // the first job's thread out would start the stand-in itself).
  std::atomic<bool> first_ran{false};
  std::atomic<bool> second_ran{false};
  std::atomic<bool> first_saw_it{false};
  std::atomic<bool> second_saw_it{false};
  p->pause();
  p->post([&] {
    first_ran = true;
    first_saw_it.store(sleep_until_set(second_ran));
  });
  p->post(fjord::priority::low, [&] {
    second_ran = true;
    second_saw_it.store(sleep_until_set(first_ran));
  });
  p->resume();
  p->wait_idle();
  EXPECT_TRUE(first_saw_it.load());
  EXPECT_TRUE(second_saw_it.load());
  // The stand-in ran a job while its start is still held: the destructor's
  // wake-up reads the thread count before the monitor stores it.
  EXPECT_TRUE(holding.load());
  std::atomic<bool> destroyed{false};
  std::thread destroyer([&] {
    p.reset();
    destroyed = true;
  });
  std::this_thread::sleep_for(100ms);  // the destructor waits for the pool's end
  let_go = true;
  const auto give_up = std::chrono::steady_clock::now() + 30s;
  while (!destroyed && std::chrono::steady_clock::now() < give_up) {
    std::this_thread::sleep_for(1ms);
  }
  monitor_starts = hold::none;
  let_go = false;
  if (!destroyed) {
    destroyer.detach();  // stuck for good; the process ends with the test run
    FAIL() << "the pool never ended: its newest thread slept through the end";
  }
  destroyer.join();
}

TEST(pool_thread_start, a_start_under_way_is_not_counted_until_it_succeeds) {
  fjord::pool p(fjord::pool_options{.workers = 1, .replace_blocked_after = 1ms});
  refused = 0;
  monitor_starts = hold::then_refuse;
  std::atomic<bool> release{false};
  std::atomic<bool> second_ran{false};
  // Both queued before the first runs, the second at low priority, as above
  // (it stays queued for whoever runs next).
  p.pause();
  p.post([&] { sleep_until_set(release); });  // presumed blocked: a stand-in is started
  p.post(fjord::priority::low, [&] { second_ran.store(true); });
  p.resume();
  const auto give_up = std::chrono::steady_clock::now() + 10s;
  while (!holding && std::chrono::steady_clock::now() < give_up) {
    std::this_thread::sleep_for(1ms);
  }
  ASSERT_TRUE(holding.load());
  // The slot is counted inside (so a new thread could steal at once), but
  // its start may still fail: not a thread to count or to pin work to.
  EXPECT_EQ(p.thread_count(), 1u);
  EXPECT_EQ(p.stats().workers.size(), 1u);
  EXPECT_THROW(p.post_to(1, [] {}), std::out_of_range);
  // The blocked worker comes back first and, finding the pending stand-in
  // counted in its place, retires; then the start fails: the retired
  // worker must take the place back, or nobody runs the second job.
  release = true;
  while (p.stats().retired_threads == 0 && std::chrono::steady_clock::now() < give_up) {
    std::this_thread::sleep_for(1ms);
  }
  EXPECT_EQ(p.stats().retired_threads, 1u);
  let_go = true;  // the start fails, and every later one at once
  while (refused.load() == 0 && std::chrono::steady_clock::now() < give_up) {
    std::this_thread::sleep_for(1ms);
  }
  EXPECT_GE(refused.load(), 1);
  while (!second_ran && std::chrono::steady_clock::now() < give_up) {
    std::this_thread::sleep_for(1ms);
  }
  ASSERT_TRUE(second_ran.load()) << "a retired worker stayed retired with work queued";
  p.wait_idle();
  EXPECT_TRUE(second_ran.load());
  EXPECT_EQ(p.thread_count(), 1u);
  p.post_to(0, [&] { second_ran.store(false); });
  p.wait_idle();
  EXPECT_FALSE(second_ran.load());
  monitor_starts = hold::none;
  let_go = false;
}

TEST(pool_thread_start, a_refused_start_hands_on_the_work_posted_meanwhile) {
  // The thread a resize adds counts as a searcher from the start, so a post
  // meanwhile wakes nobody; when the start is refused, the work posted
  // meanwhile must still reach a parked worker.
  fjord::pool p(fjord::pool_options{.workers = 1});
  p.wait_idle();
  refused = 0;
  monitor_starts = hold::then_refuse;
  std::thread grower([&] {
    hold_here = true;
    p.resize(2);
  });
  const auto give_up = std::chrono::steady_clock::now() + 10s;
  while (!holding && std::chrono::steady_clock::now() < give_up) {
    std::this_thread::sleep_for(1ms);
  }
  ASSERT_TRUE(holding.load());
  std::this_thread::sleep_for(20ms);  // worker 0 parks, if it had not yet
  std::atomic<bool> ran{false};
  p.post([&] { ran = true; });
  let_go = true;
  grower.join();
  EXPECT_EQ(refused.load(), 1);
  while (!ran && std::chrono::steady_clock::now() < give_up) {
    std::this_thread::sleep_for(1ms);
  }
  EXPECT_TRUE(ran.load()) << "the job posted during the refused start was never run";
  EXPECT_EQ(p.thread_count(), 1u);
  monitor_starts = hold::none;
  let_go = false;
}

TEST(pool_thread_start, a_refused_stand_in_beside_a_caller_in_place_leaves_its_place_empty) {
  // Worker 1 blocks (a phantom for a stand-in), the stand-in's start is
  // refused, and worker 0 then looks for work beside the caller, which
  // computes in place: the place the stand-in did not take is empty, so
  // worker 0 must take worker 1's job rather than stand aside.
  if (!fjord::detail::borrowed_stack::supported) {
    GTEST_SKIP() << "no stack switch on this architecture: the call runs on a worker";
  }
  fjord::pool p(fjord::pool_options{.workers = 2});
  refused = 0;
  let_go = true;  // refused at once
  monitor_starts = hold::then_refuse;
  bool saw_refusal = false;
  // Worker 0 is busy when worker 1 blocks, so the wake-up for worker 1's
  // job goes to its phantom, not to a sleeper; worker 0 is let go once
  // the stand-in's start was refused.
  EXPECT_TRUE(fjord_test::job_of_blocked_worker_taken(
      p, {.other_busy = true,
          .on_blocker = [] { hold_here = true; },  // this thread's starts are refused
          .meanwhile = [&](fjord::pool&) { saw_refusal = sleep_until_set_count(refused, 1); }}));
  EXPECT_TRUE(saw_refusal);
  monitor_starts = hold::none;
  let_go = false;
}

}  // namespace
