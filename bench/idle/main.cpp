// Two figures for a pool with no work: the CPU it burns while idle for a
// second (percent of one core, `--impl NAME-cpu`), and the latency from
// posting a task to a parked pool until the task starts (`--impl NAME-wake`,
// microseconds, each sample after 20 ms of idleness).
#include <linux/futex.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <functional>
#include <thread>

#include "common/harness.hpp"
#include "fjord/pool.hpp"

#ifdef BENCH_HAVE_TBB
#include <tbb/global_control.h>
#include <tbb/task_arena.h>
#endif

namespace {

double process_cpu_seconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
         static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6;
}

// The floor for post-to-start latency: one thread parked on a bare futex,
// woken with one FUTEX_WAKE, running the posted function. No pool can start
// a task sooner after parking its workers in the kernel; the gap between
// this row and a pool's row is that pool's own overhead.
class futex_thread {
 public:
  futex_thread() : thread_([this] { loop(); }) {}
  futex_thread(const futex_thread&) = delete;
  futex_thread& operator=(const futex_thread&) = delete;
  ~futex_thread() {
    post([this] { stop_ = true; });
    thread_.join();
  }
  void post(std::function<void()> f) {
    fn_ = std::move(f);
    word_.store(1, std::memory_order_release);
    syscall(SYS_futex, &word_, FUTEX_WAKE_PRIVATE, 1, nullptr, nullptr, 0);
  }

 private:
  void loop() {
    while (!stop_) {
      while (word_.load(std::memory_order_acquire) == 0) {
        syscall(SYS_futex, &word_, FUTEX_WAIT_PRIVATE, 0, nullptr, nullptr, 0);
      }
      word_.store(0, std::memory_order_relaxed);
      fn_();
    }
  }

  std::atomic<std::uint32_t> word_{0};
  std::function<void()> fn_;
  bool stop_ = false;
  std::thread thread_;
};

template <class Post>
void measure(const bench::args& a, const std::string& what, Post post) {
  if (what == "cpu") {
    bench::run_rounds(a, "% of a core", 0, [&] {
      std::atomic<bool> ran{false};
      post([&] { ran = true; });
      while (!ran.load()) {
        std::this_thread::yield();
      }
      const double before = process_cpu_seconds();
      const auto start = bench::clock::now();
      std::this_thread::sleep_for(std::chrono::seconds(1));
      const double cpu = process_cpu_seconds() - before;
      return 100.0 * cpu / (bench::since_ms(start) / 1000.0);
    });
  } else {
    bench::run_rounds(a, "us", 0, [&] {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      std::atomic<std::int64_t> started{0};
      const auto t0 = bench::clock::now();
      post([&] { started = (bench::clock::now() - t0).count(); });
      while (started.load() == 0) {
        std::this_thread::yield();
      }
      return static_cast<double>(started.load()) / 1000.0;
    });
  }
}

}  // namespace

int main(int argc, char** argv) {
  auto a = bench::args::parse(argc, argv);
  const auto dash = a.impl.rfind('-');
  const std::string impl = a.impl.substr(0, dash);
  const std::string what = dash == std::string::npos ? "" : a.impl.substr(dash + 1);
  if (what != "cpu" && what != "wake") {
    bench::unknown_impl(a.impl);
  }
  if (impl == "futex" && what == "wake") {
    futex_thread t;
    measure(a, what, [&](auto f) { t.post(f); });
  } else if (impl == "fjord") {
    fjord::pool pool(fjord::pool_options{.workers = static_cast<std::size_t>(a.threads)});
    measure(a, what, [&](auto f) { pool.post(f); });
#ifdef BENCH_HAVE_TBB
  } else if (impl == "onetbb") {
    tbb::global_control gc(tbb::global_control::max_allowed_parallelism, a.threads + 1);
    tbb::task_arena arena(a.threads, 0);
    measure(a, what, [&](auto f) { arena.enqueue(f); });
#endif
  } else {
    bench::unknown_impl(a.impl);
  }
}
