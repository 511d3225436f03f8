// fork(): the child gets a fresh default pool and timer on first use; pools
// made before the fork refuse work with a clear error instead of hanging.

#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <stdexcept>
#include <stop_token>
#include <string>
#include <thread>

#include "fjord/detail/config.hpp"
#include "fjord/join.hpp"
#include "fjord/pool.hpp"
#include "fjord/sleep.hpp"
#include "fjord/sync_wait.hpp"
#include "fjord/task.hpp"

using namespace std::chrono_literals;

namespace {

// Runs child() in a forked child; its exit status, or -1 if it did not end
// within the limit (then it is killed).
template <class F>
int in_child_once(F child) {
  const pid_t pid = ::fork();
  if (pid == 0) {
    std::_Exit(child());
  }
  const auto end = std::chrono::steady_clock::now() + 30s;
  int status = 0;
  while (::waitpid(pid, &status, WNOHANG) == 0) {
    if (std::chrono::steady_clock::now() > end) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, &status, 0);
      return -1;
    }
    std::this_thread::sleep_for(1ms);
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : -2;
}

// GCC 12's AddressSanitizer takes no lock of its own around fork() (LLVM
// added that in 2023, llvm/llvm-project#75290; google/sanitizers#774): a
// child forked while another thread is inside the sanitizer's allocator
// can hang on its lock. One such hang was seen here, under ASan only,
// which 15 reruns did not repeat. Under ASan a hung child is tried again,
// twice at most (a hang that fjord caused would recur); elsewhere one
// hang fails the test.
template <class F>
int in_child(F child) {
  int status = in_child_once(child);
  for (int retry = 0; FJORD_ASAN && status == -1 && retry < 2; ++retry) {
    status = in_child_once(child);
  }
  return status;
}

long fib(int n) {
  if (n < 2) {
    return n;
  }
  auto [a, b] = fjord::join([n] { return fib(n - 1); }, [n] { return fib(n - 2); });
  return a + b;
}

}  // namespace

TEST(fork, the_child_gets_a_fresh_default_pool_and_timer) {
  // Parent: both exist and have run work.
  ASSERT_EQ(fib(15), 610);
  fjord::sync_wait([]() -> fjord::task<void> { co_await fjord::sleep_for(1ms); }());
  const int status = in_child([] {
    const bool joined = fib(15) == 610;
    const auto slept = fjord::sync_wait(
        []() -> fjord::task<fjord::sleep_status> { co_return co_await fjord::sleep_for(2ms); }());
    return joined && slept == fjord::sleep_status::elapsed ? 0 : 1;
  });
  EXPECT_EQ(status, 0);
}

TEST(fork, a_pool_made_before_the_fork_refuses_work_in_the_child) {
  fjord::pool p(fjord::pool_options{.workers = 2});
  auto q = std::make_unique<fjord::pool>(fjord::pool_options{.workers = 1});
  p.post([] {});  // this thread has a lane into p now
  const int status = in_child([&] {
    q.reset();  // destroying one does not wait for threads that are gone
    int refused = 0;
    try {
      p.post([] {});
    } catch (const std::logic_error& e) {
      refused += std::string(e.what()).find("fork()") != std::string::npos ? 1 : 0;
    }
    try {
      static_cast<void>(p.submit([] { return 1; }));
    } catch (const std::logic_error&) {
      ++refused;
    }
    return refused == 2 ? 0 : 1;
  });
  EXPECT_EQ(status, 0);
}

TEST(fork, a_stop_request_in_the_child_leaves_a_sleep_armed_in_the_parent_alone) {
  fjord::pool p(fjord::pool_options{.workers = 1});
  std::stop_source stop;
  std::atomic<bool> waiting{false};
  auto sleeper = [&]() -> fjord::task<fjord::sleep_status> {
    co_await p.schedule();
    waiting = true;
    co_return co_await fjord::sleep_for(std::chrono::hours(1), stop.get_token());
  };
  std::thread waiter(
      [&] { EXPECT_EQ(fjord::sync_wait(sleeper()), fjord::sleep_status::canceled); });
  while (!waiting.load() || fjord::detail::pool_access::core(p).waiting_coroutines() != 1) {
    std::this_thread::sleep_for(1ms);
  }
  // The child's timer service is new and knows nothing of the entry.
  EXPECT_EQ(in_child([&] {
              stop.request_stop();
              return 0;
            }),
            0);
  stop.request_stop();  // the parent's sleep ends as usual
  waiter.join();
}

TEST(fork, forking_from_a_job_leaves_a_usable_child) {
  fjord::pool p(fjord::pool_options{.workers = 2});
  const int status = p.call([] { return in_child([] { return fib(12) == 144 ? 0 : 1; }); });
  EXPECT_EQ(status, 0);
}
