#pragma once

#include <condition_variable>
#include <cstddef>
#include <mutex>

#include "fjord/detail/chrono.hpp"
#include "fjord/detail/job.hpp"

namespace fjord::detail {

// The threads fjord::blocking runs its calls on, apart from every pool's
// workers: a thread is made when a call finds none idle (up to a limit,
// beyond which calls queue), and an idle thread ends after keep_alive
// (tokio's spawn_blocking pool, libcsp's block). One per process; made
// anew in the child of a fork().
class blocking_pool {
 public:
  static blocking_pool& instance();

  // Runs j on one of the threads. Throws std::system_error when no thread
  // is running and none can be made.
  void submit(job* j);

  // fjord::set_blocking_limits.
  void set_limits(std::size_t max_threads, std::chrono::nanoseconds keep_alive);

  std::size_t threads() const;
  std::size_t idle_threads() const;

 private:
  blocking_pool() = default;
  static void forget_in_child() noexcept;
  void thread_main() noexcept;
  // A detached thread for a place already counted in threads_; false (and
  // the place given back) when the system refuses one.
  bool start_thread() noexcept;
  // Under mutex_: j out of the queue, if no thread took it yet.
  bool take_back(job* j) noexcept;

  mutable std::mutex mutex_;
  std::condition_variable work_;
  job* head_ = nullptr;  // guarded; the queue, oldest first
  job* tail_ = nullptr;
  std::size_t threads_ = 0;  // guarded
  std::size_t idle_ = 0;     // guarded
  std::size_t queued_ = 0;   // guarded: calls in the queue
  std::size_t wakeups_ = 0;  // guarded: calls handed to idle threads, not yet taken
  std::size_t max_threads_ = 512;
  std::chrono::nanoseconds keep_alive_ = std::chrono::seconds(10);
};

}  // namespace fjord::detail
