#pragma once

// A worker that pushes a job onto its own deque and then waits for it,
// beside a caller computing in place (pool::call): the shape of the hangs
// docs/scheduler.md lists under "The caller takes a worker's place".

#include <atomic>
#include <chrono>
#include <cstddef>
#include <functional>
#include <thread>

#include "fjord/block_in_place.hpp"
#include "fjord/pool.hpp"
#include "support/eventually.hpp"

namespace fjord_test {

// How a worker waits for a job it pushed onto its own deque, beside a caller
// that computes in place until the worker is done (bounded).
struct blocked_worker_setup {
  std::size_t blocker = 1;
  // It runs on for this long without telling fjord before it waits.
  std::chrono::milliseconds before{0};
  // It waits in block_in_place; if not, without telling fjord (the monitor
  // may presume it blocked).
  bool tells = true;
  // Worker 0 computes meanwhile (no sleeper is left to wake), until the
  // blocker is done or, with `meanwhile`, until that has run.
  bool other_busy = false;
  // Run on the blocker's thread before it pushes its job.
  std::function<void()> on_blocker;
  // Run from outside once the blocker waits.
  std::function<void(fjord::pool&)> meanwhile;
};

// Whether the blocker's job was taken while it waited.
inline bool job_of_blocked_worker_taken(fjord::pool& p, const blocked_worker_setup& s) {
  for (std::size_t i = 0; i < p.stats().workers.size(); ++i) {
    if (!eventually([&] { return p.stats().workers[i].parks >= 1; })) {
      return false;
    }
  }
  std::atomic<bool> job_ran{false};
  std::atomic<bool> waits{false};
  std::atomic<bool> worker_done{false};
  std::atomic<bool> taken_in_time{false};
  std::atomic<bool> other_started{false};
  std::atomic<bool> release_other{false};
  std::atomic<bool> set_up{true};  // worker 0 started, the blocker waited
  p.call([&] {
    std::thread driver([&] {
      if (s.other_busy) {
        p.post_to(0, [&] {
          other_started = true;
          const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(15);
          while (!release_other.load() && !worker_done.load() &&
                 std::chrono::steady_clock::now() < end) {
          }
        });
        set_up = set_up && eventually([&] { return other_started.load(); });
      }
      p.post_to(s.blocker, [&] {
        if (s.on_blocker) {
          s.on_blocker();
        }
        p.post([&job_ran] { job_ran = true; });  // onto this worker's deque
        std::this_thread::sleep_for(s.before);
        const auto wait = [&] {
          waits = true;
          taken_in_time = eventually([&job_ran] { return job_ran.load(); });
        };
        if (s.tells) {
          fjord::block_in_place(wait);
        } else {
          wait();
        }
        worker_done = true;
      });
      if (s.meanwhile) {
        set_up = set_up && eventually([&] { return waits.load(); });
        s.meanwhile(p);
        release_other = true;
      }
    });
    driver.join();
    const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(15);
    while (!worker_done.load() && std::chrono::steady_clock::now() < end) {
    }
  });
  return eventually([&] { return worker_done.load(); }) && taken_in_time.load() && set_up.load();
}

}  // namespace fjord_test
