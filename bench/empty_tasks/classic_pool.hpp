#pragma once
// The seed's "conventional ThreadPool": one mutex, one condition variable, a
// queue of std::function; submit() returns a std::future through
// std::packaged_task (the progschj/ThreadPool pattern), written anew here.

#include <condition_variable>
#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <queue>
#include <thread>
#include <vector>

namespace bench {

class classic_pool {
 public:
  explicit classic_pool(int threads) {
    for (int i = 0; i < threads; ++i) {
      workers_.emplace_back([this] {
        while (true) {
          std::function<void()> job;
          {
            std::unique_lock lock(mutex_);
            ready_.wait(lock, [this] { return stop_ || !jobs_.empty(); });
            if (stop_ && jobs_.empty()) {
              return;
            }
            job = std::move(jobs_.front());
            jobs_.pop();
          }
          job();
        }
      });
    }
  }
  ~classic_pool() {
    {
      std::lock_guard lock(mutex_);
      stop_ = true;
    }
    ready_.notify_all();
    for (auto& w : workers_) {
      w.join();
    }
  }

  void post(std::function<void()> f) {
    {
      std::lock_guard lock(mutex_);
      jobs_.push(std::move(f));
    }
    ready_.notify_one();
  }

  template <class F>
  auto submit(F f) -> std::future<decltype(f())> {
    auto task = std::make_shared<std::packaged_task<decltype(f())()>>(std::move(f));
    auto result = task->get_future();
    post([task] { (*task)(); });
    return result;
  }

 private:
  std::mutex mutex_;
  std::condition_variable ready_;
  std::queue<std::function<void()>> jobs_;
  bool stop_ = false;
  std::vector<std::thread> workers_;
};

}  // namespace bench
