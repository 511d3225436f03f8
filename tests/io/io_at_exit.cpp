// I/O during static destruction, after the default pool has closed: a
// coroutine under sync_wait waits for a pipe another thread writes to.
// Nobody polls the reactor but the sync_wait thread itself, so it must.

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>

#include "fjord/pool.hpp"
#include "fjord/registered_fd.hpp"
#include "fjord/sync_wait.hpp"
#include "fjord/task.hpp"

namespace {

using namespace std::chrono_literals;

struct waits_at_exit {
  waits_at_exit() = default;
  waits_at_exit(const waits_at_exit&) = delete;
  waits_at_exit& operator=(const waits_at_exit&) = delete;
  // NOLINTNEXTLINE(bugprone-exception-escape): a throw here fails the test (terminate)
  ~waits_at_exit() {
    int fds[2];
    if (::pipe(fds) != 0) {
      std::_Exit(2);
    }
    const fjord::registered_fd r(fds[0]);
    std::thread writer([&] {
      std::this_thread::sleep_for(50ms);
      const char c = 'x';
      static_cast<void>(::write(fds[1], &c, 1));
    });
    const auto t0 = std::chrono::steady_clock::now();
    auto body = [&]() -> fjord::task<fjord::io_status> { co_return co_await r.readable(20s); };
    const fjord::io_status s = fjord::sync_wait(body());
    const auto waited = std::chrono::steady_clock::now() - t0;
    writer.join();
    std::printf("status %d after %lld ms\n", static_cast<int>(s),
                static_cast<long long>(
                    std::chrono::duration_cast<std::chrono::milliseconds>(waited).count()));
    std::fflush(stdout);
    std::_Exit(s == fjord::io_status::ready ? 0 : 1);
  }
};

waits_at_exit at_exit;  // constructed before the default pool, so destroyed after it

}  // namespace

// NOLINTNEXTLINE(bugprone-exception-escape): a throw here fails the test (terminate)
int main() {
  // Bring the default pool up (and, with it, its end at exit), and the
  // reactor with a wait served while the pool lives.
  fjord::default_pool().call([] {});
  auto warm = []() -> fjord::task<int> { co_return 1; };
  return fjord::sync_wait(warm()) == 1 ? 0 : 3;
}
