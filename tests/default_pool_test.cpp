// fjord::default_pool(): sizing from FJORD_WORKERS, use during static
// destruction, std::exit from a job, and timers that do not create it. Each
// case runs in a fresh process (a death test), where the default pool does
// not exist yet.

#include <dirent.h>

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <stdexcept>
#include <string>
#include <thread>

#include "fjord/async_latch.hpp"
#include "fjord/invoke.hpp"
#include "fjord/join.hpp"
#include "fjord/pool.hpp"
#include "fjord/shutdown_error.hpp"
#include "fjord/sleep.hpp"
#include "fjord/spawn.hpp"
#include "fjord/sync_wait.hpp"
#include "fjord/task.hpp"

using namespace std::chrono_literals;

// These tests call std::exit and setenv on purpose: in death-test children,
// or before the pool they configure exists, where no other thread runs.
// NOLINTBEGIN(concurrency-mt-unsafe)

namespace {

// The message default_pool() throws with FJORD_WORKERS=value, or "" if it
// does not throw; exits the (child) process with 0 if that matches `expect`.
[[noreturn]] void check_workers_variable(const char* value, const std::string& expect) {
  ::setenv("FJORD_WORKERS", value, 1);
  std::string message;
  try {
    static_cast<void>(fjord::default_pool());
  } catch (const std::invalid_argument& e) {
    message = e.what();
  }
  std::_Exit(message.find(expect) != std::string::npos ? 0 : 1);
}

// Threads of this process whose name starts with "fjord" (a sanitizer's own
// threads do not count).
std::size_t fjord_threads() {
  std::size_t n = 0;
  if (DIR* d = ::opendir("/proc/self/task")) {
    while (const dirent* e = ::readdir(d)) {
      if (e->d_name[0] == '.') {
        continue;
      }
      std::ifstream comm(std::string("/proc/self/task/") + e->d_name + "/comm");
      std::string name;
      std::getline(comm, name);
      n += name.rfind("fjord", 0) == 0 ? 1 : 0;
    }
    ::closedir(d);
  }
  return n;
}

}  // namespace

TEST(default_pool, bad_fjord_workers_values_are_rejected_naming_the_variable_and_value) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  for (const char* bad : {"-1", "abc", "0", "5000", "", "3x", "99999999999999999999"}) {
    const std::string expect = std::string("FJORD_WORKERS") + " must be a whole number of worker " +
                               "threads in [1, 4096], got \"" + bad + "\"";
    EXPECT_EXIT(check_workers_variable(bad, expect), ::testing::ExitedWithCode(0), "") << bad;
  }
}

TEST(default_pool, fjord_workers_sets_its_size) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        ::setenv("FJORD_WORKERS", "3", 1);
        std::_Exit(fjord::default_pool().size() == 3 ? 0 : 1);
      },
      ::testing::ExitedWithCode(0), "");
}

namespace {

// Used from a static destructor, after the default pool was shut down.
struct uses_fjord_at_exit {
  // NOLINTNEXTLINE(bugprone-exception-escape): a throw here fails the test (terminate)
  ~uses_fjord_at_exit() {
    // join runs both closures inline.
    auto [a, b] = fjord::join([] { return 1; }, [] { return 2; });
    auto [c, d, e] = fjord::invoke([] { return 3; }, [] { return 4; }, [] { return 5; });
    // A sleep resumes on this thread, which waits in sync_wait.
    const auto slept = fjord::sync_wait(
        []() -> fjord::task<fjord::sleep_status> { co_return co_await fjord::sleep_for(2ms); }());
    // Posting is refused with a clear error.
    bool refused = false;
    try {
      fjord::default_pool().post([] {});
    } catch (const fjord::shutdown_error&) {
      refused = true;
    }
    bool submit_refused = false;
    try {
      static_cast<void>(fjord::default_pool().submit([] { return 1; }));
    } catch (const fjord::shutdown_error&) {
      submit_refused = true;
    }
    bool spawn_refused = false;
    try {
      fjord::spawn(fjord::default_pool(), []() -> fjord::task<void> { co_return; }());
    } catch (const fjord::shutdown_error&) {
      spawn_refused = true;
    }
    const bool ok = a == 1 && b == 2 && c + d + e == 12 && slept == fjord::sleep_status::elapsed &&
                    refused && submit_refused && spawn_refused;
    std::_Exit(ok ? 42 : 1);
  }
};

}  // namespace

TEST(default_pool, join_sleep_and_post_during_static_destruction) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        static uses_fjord_at_exit user;  // made before the pool: destroyed after it
        fjord::join([] {}, [] {});       // makes the default pool
        std::exit(0);
      },
      ::testing::ExitedWithCode(42), "");
}

TEST(default_pool, jobs_posted_before_exit_run_at_exit) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        fjord::default_pool().post([] {
          std::this_thread::sleep_for(20ms);
          std::_Exit(7);  // runs during exit's drain
        });
        std::exit(0);
      },
      ::testing::ExitedWithCode(7), "");
}

TEST(default_pool, exit_does_not_wait_for_coroutines_parked_on_it) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        static fjord::async_latch never(1);  // nobody counts it down
        fjord::spawn(fjord::default_pool(), []() -> fjord::task<void> { co_await never.wait(); }());
        fjord::spawn(fjord::default_pool(), []() -> fjord::task<void> {
          co_await fjord::sleep_for(std::chrono::hours(24));
        }());
        std::exit(5);
      },
      ::testing::ExitedWithCode(5), "");
}

TEST(default_pool, std_exit_from_a_job_keeps_its_status) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(fjord::join([] { std::exit(3); }, [] {}), ::testing::ExitedWithCode(3), "");
}

TEST(default_pool, std_exit_from_a_job_of_a_static_pool_keeps_its_status) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        static fjord::pool p(fjord::pool_options{.workers = 2});
        p.call([] { std::exit(4); });
      },
      ::testing::ExitedWithCode(4), "");
}

TEST(default_pool, a_pool_destroyed_by_its_own_worker_is_no_longer_current) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        auto* p = new fjord::pool(fjord::pool_options{.workers = 1});
        std::atomic<int> result{-1};
        p->post([&] {
          delete p;  // left running: it cannot wait for itself
          result = fjord::current_pool() == nullptr ? 0 : 1;
        });
        while (result.load() < 0) {
          std::this_thread::sleep_for(1ms);
        }
        std::_Exit(result.load());
      },
      ::testing::ExitedWithCode(0), "");
}

TEST(default_pool, timers_do_not_create_it) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  // A bad FJORD_WORKERS would make creating it throw; nothing may try.
  EXPECT_EXIT(
      {
        ::setenv("FJORD_WORKERS", "-1", 1);
        {
          fjord::pool p(fjord::pool_options{.workers = 1});
          fjord::sync_wait([&]() -> fjord::task<void> {
            co_await p.schedule();
            co_await fjord::sleep_for(5ms);
          }());
          fjord::sync_wait([]() -> fjord::task<void> { co_await fjord::sleep_for(5ms); }());
          // Its one worker and the timer thread; no default pool.
          std::_Exit(fjord_threads() == 2 ? 0 : 1);
        }
      },
      ::testing::ExitedWithCode(0), "");
}

// NOLINTEND(concurrency-mt-unsafe)
