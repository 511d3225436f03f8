// fjord::blocking when the system refuses threads. This binary interposes
// pthread_create (its own process under ctest, so no other test sees it):
// the blocking pool's thread starts can be refused at will, and one refusal
// can be held back until the test lets it return. Only on threads that ask
// for it (the blocking pool starts its threads on the submitting thread),
// so the test's own threads start normally.
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <pthread.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <mutex>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

#include "fjord/blocking.hpp"
#include "fjord/sync_wait.hpp"
#include "fjord/task.hpp"

namespace {

using namespace std::chrono_literals;

enum class refusal { none, all, first_held };
std::atomic<refusal> mode{refusal::none};
thread_local bool refusing_here = false;
std::atomic<int> refused{0};
std::atomic<bool> holding{false};  // a refusal waits in pthread_create
std::atomic<bool> let_go{false};   // ... until this

}  // namespace

extern "C" int pthread_create(pthread_t* thread, const pthread_attr_t* attr, void* (*start)(void*),
                              void* arg) {
  using create_fn = int (*)(pthread_t*, const pthread_attr_t*, void* (*)(void*), void*);
  static const auto real = reinterpret_cast<create_fn>(::dlsym(RTLD_NEXT, "pthread_create"));
  switch (refusing_here ? mode.load() : refusal::none) {
    case refusal::none:
      return real(thread, attr, start, arg);
    case refusal::first_held:
      if (refused.fetch_add(1) == 0) {
        holding = true;
        while (!let_go) {
          std::this_thread::sleep_for(1ms);
        }
      }
      return EAGAIN;
    case refusal::all:
      refused.fetch_add(1);
      return EAGAIN;
  }
  return EAGAIN;
}

namespace {

fjord::task<int> call(int value) {
  co_return co_await fjord::blocking([value] { return value; });
}

// Runs body on a thread and waits at most 30 s for it: a call that hangs
// fails the test instead of the whole run.
template <class Body>
bool finishes(Body body) {
  std::atomic<bool> done{false};
  std::thread t([&done, body] {
    body();
    done = true;
  });
  const auto give_up = std::chrono::steady_clock::now() + 30s;
  while (!done && std::chrono::steady_clock::now() < give_up) {
    std::this_thread::sleep_for(1ms);
  }
  if (!done) {
    t.detach();  // stuck for good; the process ends with the test run
    return false;
  }
  t.join();
  return true;
}

void wait_for_no_blocking_threads() {
  const auto give_up = std::chrono::steady_clock::now() + 30s;
  while (fjord::blocking_threads() != 0 && std::chrono::steady_clock::now() < give_up) {
    std::this_thread::sleep_for(1ms);
  }
  ASSERT_EQ(fjord::blocking_threads(), 0u);
}

TEST(blocking_refused, with_no_thread_and_none_to_be_had_the_co_await_throws) {
  fjord::set_blocking_limits(4, 0ms);  // idle threads end at once
  EXPECT_EQ(fjord::sync_wait(call(1)), 1);
  wait_for_no_blocking_threads();
  mode = refusal::all;
  refusing_here = true;
  try {
    fjord::sync_wait(call(2));
    ADD_FAILURE() << "no exception";
  } catch (const std::system_error& e) {
    EXPECT_EQ(e.code(), std::errc::resource_unavailable_try_again);
    EXPECT_NE(std::string(e.what()).find("no blocking thread"), std::string::npos) << e.what();
  }
  EXPECT_GE(refused.load(), 1);
  mode = refusal::none;
  refusing_here = false;
  EXPECT_EQ(fjord::sync_wait(call(3)), 3);  // the pool works again
  fjord::set_blocking_limits(512, 10s);
}

TEST(blocking_refused, a_call_queued_behind_a_start_that_then_fails_fails_too) {
  // Two calls, no thread: the first call's start is held in pthread_create;
  // the second call's start is refused at once and, a start being under
  // way, it queues. When the held start fails too, nobody is left to run
  // the queued call: it must fail with the first, not wait forever.
  fjord::set_blocking_limits(4, 0ms);
  wait_for_no_blocking_threads();
  refused = 0;
  holding = false;
  let_go = false;
  mode = refusal::first_held;
  std::atomic<int> errors{0};
  auto one = [&errors](int value) {
    refusing_here = true;
    try {
      fjord::sync_wait(call(value));
    } catch (const std::system_error&) {
      errors.fetch_add(1);
    }
  };
  std::thread first(one, 1);
  while (!holding) {
    std::this_thread::sleep_for(1ms);
  }
  const bool second_done = finishes([&] {
    std::thread second_starter(one, 2);
    // The second call's start was refused (the count passes 1) before the
    // held one returns.
    while (refused.load() < 2) {
      std::this_thread::sleep_for(1ms);
    }
    let_go = true;
    second_starter.join();
  });
  first.join();
  mode = refusal::none;
  ASSERT_TRUE(second_done) << "the queued call was never run nor failed";
  EXPECT_EQ(errors.load(), 2);
  EXPECT_EQ(fjord::blocking_threads(), 0u);
  EXPECT_EQ(fjord::sync_wait(call(3)), 3);
  fjord::set_blocking_limits(512, 10s);
}

TEST(blocking_refused, a_raised_limit_whose_starts_fail_leaves_the_queue_to_the_running_thread) {
  // One thread, busy; three calls queue behind it. Raising the limit tries
  // to start threads for them, which the system refuses: the calls stay
  // queued and the running thread takes them, in order, when it is free.
  fjord::set_blocking_limits(1, 10s);
  std::atomic<bool> release{false};
  std::vector<int> order;  // written by the one thread only
  auto held = [&]() -> fjord::task<void> {
    co_await fjord::blocking([&] {
      while (!release) {
        std::this_thread::sleep_for(1ms);
      }
    });
  };
  auto queued = [&](int i) -> fjord::task<void> {
    co_await fjord::blocking([&order, i] { order.push_back(i); });
  };
  std::vector<std::thread> callers;
  callers.emplace_back([&] { fjord::sync_wait(held()); });
  while (fjord::blocking_threads() != 1) {
    std::this_thread::sleep_for(1ms);
  }
  for (int i = 0; i < 3; ++i) {
    callers.emplace_back([&, i] { fjord::sync_wait(queued(i)); });
    std::this_thread::sleep_for(20ms);  // queued in this order
  }
  refused = 0;
  mode = refusal::all;
  refusing_here = true;
  fjord::set_blocking_limits(4, 10s);
  refusing_here = false;
  mode = refusal::none;
  EXPECT_GE(refused.load(), 1);
  EXPECT_EQ(fjord::blocking_threads(), 1u);
  release = true;
  EXPECT_TRUE(finishes([&] {
    for (auto& c : callers) {
      c.join();
    }
  }));
  EXPECT_EQ(order, (std::vector<int>{0, 1, 2}));
  fjord::set_blocking_limits(512, 10s);
}

TEST(blocking_refused, a_call_queued_by_a_refused_start_runs_before_later_calls) {
  // One thread, busy, below a limit of 4. A call whose thread start is
  // refused queues (a thread runs); the next call's start succeeds. That new
  // thread must take the queued call first, not overtake it, and not leave
  // it waiting for the busy one.
  fjord::set_blocking_limits(4, 10s);
  std::atomic<bool> release{false};
  std::mutex order_mutex;
  std::vector<int> order;
  auto held = [&]() -> fjord::task<void> {
    co_await fjord::blocking([&] {
      while (!release) {
        std::this_thread::sleep_for(1ms);
      }
    });
  };
  auto queued = [&](int i) -> fjord::task<void> {
    co_await fjord::blocking([&, i] {
      const std::lock_guard lock(order_mutex);
      order.push_back(i);
    });
  };
  wait_for_no_blocking_threads();
  std::thread holder([&] { fjord::sync_wait(held()); });
  while (fjord::blocking_threads() != 1) {
    std::this_thread::sleep_for(1ms);
  }
  refused = 0;
  mode = refusal::all;
  std::thread first([&] {
    refusing_here = true;
    fjord::sync_wait(queued(0));
  });
  while (refused.load() < 1) {
    std::this_thread::sleep_for(1ms);
  }
  mode = refusal::none;
  std::this_thread::sleep_for(20ms);  // the refused start has queued its call
  const bool both_ran = finishes([&] {
    fjord::sync_wait(queued(1));
    first.join();
  });
  release = true;
  holder.join();
  ASSERT_TRUE(both_ran) << "the queued call waited for the busy thread";
  EXPECT_EQ(order, (std::vector<int>{0, 1}));
  fjord::set_blocking_limits(512, 10s);
}

}  // namespace
