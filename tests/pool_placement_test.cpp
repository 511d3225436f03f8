// pool_options::cpus, pin_each_worker and the thread hooks.
#include <gtest/gtest.h>
#include <pthread.h>
#include <sched.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <mutex>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "fjord/block_in_place.hpp"
#include "fjord/pool.hpp"
#include "fjord/shutdown_error.hpp"

namespace {

using namespace std::chrono_literals;

std::vector<unsigned> allowed_cpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  EXPECT_EQ(sched_getaffinity(0, sizeof(set), &set), 0);
  std::vector<unsigned> cpus;
  for (unsigned c = 0; c < CPU_SETSIZE; ++c) {
    if (CPU_ISSET(c, &set)) {
      cpus.push_back(c);
    }
  }
  return cpus;
}

std::vector<unsigned> this_thread_cpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  EXPECT_EQ(pthread_getaffinity_np(pthread_self(), sizeof(set), &set), 0);
  std::vector<unsigned> cpus;
  for (unsigned c = 0; c < CPU_SETSIZE; ++c) {
    if (CPU_ISSET(c, &set)) {
      cpus.push_back(c);
    }
  }
  return cpus;
}

std::string error_of(const fjord::pool_options& o) {
  try {
    fjord::pool p(o);
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "no error";
}

TEST(pool_placement, bad_cpu_sets_are_rejected_naming_the_value) {
  EXPECT_NE(error_of({.cpus = std::vector<unsigned>{}}).find("empty"), std::string::npos);
  const unsigned first = allowed_cpus().front();
  const std::string twice = error_of({.cpus = std::vector<unsigned>{first, first}});
  EXPECT_NE(twice.find("CPU " + std::to_string(first) + " is listed twice"), std::string::npos)
      << twice;
  const std::string huge = error_of({.cpus = std::vector<unsigned>{100000}});
  EXPECT_NE(huge.find("CPU 100000"), std::string::npos) << huge;
  // The first CPU number the process may not use.
  const std::vector<unsigned> allowed = allowed_cpus();
  unsigned outside = 0;
  while (std::find(allowed.begin(), allowed.end(), outside) != allowed.end()) {
    ++outside;
  }
  const std::string not_ours = error_of({.cpus = std::vector<unsigned>{outside}});
  EXPECT_NE(not_ours.find("CPU " + std::to_string(outside) + " is not in this process's"),
            std::string::npos)
      << not_ours;
  EXPECT_NE(error_of({.pin_each_worker = true}).find("needs pool_options::cpus"),
            std::string::npos);
}

TEST(pool_placement, workers_default_to_one_per_listed_cpu_and_run_there) {
  const unsigned first = allowed_cpus().front();
  fjord::pool p(fjord::pool_options{.cpus = std::vector<unsigned>{first}});
  EXPECT_EQ(p.size(), 1u);
  EXPECT_EQ(p.call([] { return this_thread_cpus(); }), std::vector<unsigned>{first});
}

TEST(pool_placement, pin_each_worker_gives_worker_i_the_ith_cpu_alone) {
  const std::vector<unsigned> cpus = allowed_cpus();
  std::mutex m;
  std::vector<std::vector<unsigned>> seen(cpus.size());
  {
    fjord::pool p(fjord::pool_options{
        .cpus = cpus, .pin_each_worker = true, .on_thread_start = [&](std::size_t i) {
          std::lock_guard lock(m);
          seen.at(i) = this_thread_cpus();
        }});
    EXPECT_EQ(p.size(), cpus.size());
  }
  for (std::size_t i = 0; i < cpus.size(); ++i) {
    EXPECT_EQ(seen[i], std::vector<unsigned>{cpus[i]}) << "worker " << i;
  }
}

TEST(pool_placement, without_pinning_every_thread_gets_the_whole_list) {
  const std::vector<unsigned> cpus = allowed_cpus();
  fjord::pool p(fjord::pool_options{.workers = 3, .cpus = cpus});
  EXPECT_EQ(p.size(), 3u);
  EXPECT_EQ(p.call([] { return this_thread_cpus(); }), cpus);
}

thread_local int hook_state = 0;

TEST(pool_hooks, start_runs_before_the_first_job_and_stop_after_the_last) {
  std::atomic<int> started{0};
  std::atomic<int> stopped{0};
  std::atomic<int> jobs_seeing_state{0};
  std::mutex m;
  std::set<std::size_t> indexes;
  {
    fjord::pool p(fjord::pool_options{.workers = 2,
                                      .on_thread_start =
                                          [&](std::size_t i) {
                                            hook_state = 42;
                                            std::lock_guard lock(m);
                                            indexes.insert(i);
                                            started.fetch_add(1);
                                          },
                                      .on_thread_stop =
                                          [&](std::size_t) {
                                            EXPECT_EQ(hook_state, 42);
                                            stopped.fetch_add(1);
                                          }});
    for (int i = 0; i < 1000; ++i) {
      p.post([&] {
        if (hook_state == 42) {
          jobs_seeing_state.fetch_add(1);
        }
      });
    }
    p.wait_idle();
    EXPECT_EQ(stopped.load(), 0);
  }
  EXPECT_EQ(started.load(), 2);
  EXPECT_EQ(stopped.load(), 2);
  EXPECT_EQ(indexes, (std::set<std::size_t>{0, 1}));
  EXPECT_EQ(jobs_seeing_state.load(), 1000);
}

TEST(pool_hooks, spare_threads_run_them_with_indexes_past_the_workers) {
  std::mutex m;
  std::set<std::size_t> indexes;
  {
    fjord::pool p(fjord::pool_options{.workers = 1, .on_thread_start = [&](std::size_t i) {
                                        std::lock_guard lock(m);
                                        indexes.insert(i);
                                      }});
    // The worker blocks; a spare runs the job posted meanwhile.
    std::atomic<bool> ran{false};
    p.call([&] {
      p.post([&] { ran = true; });
      fjord::block_in_place([&] {
        while (!ran.load()) {
          std::this_thread::sleep_for(1ms);
        }
      });
    });
  }
  EXPECT_TRUE(indexes.count(0) == 1);
  EXPECT_TRUE(indexes.count(1) == 1) << "no spare thread ran the start hook";
}

TEST(pool_hooks, an_exception_from_a_hook_goes_to_the_handler) {
  std::atomic<int> handled{0};
  {
    fjord::pool p(fjord::pool_options{
        .workers = 2,
        .on_thread_start = [](std::size_t) { throw std::runtime_error("start"); },
        .on_thread_stop = [](std::size_t) { throw std::runtime_error("stop"); },
        .unhandled_exception_handler = [&](std::exception_ptr) { handled.fetch_add(1); }});
    EXPECT_EQ(p.call([] { return 5; }), 5);  // the pool still works
  }
  EXPECT_EQ(handled.load(), 4);
}

TEST(pool_hooks, the_start_hook_runs_as_a_pool_thread_and_the_stop_hook_after_the_end) {
  std::atomic<int> refused_wait{0};
  std::atomic<int> refused_post{0};
  std::atomic<int> ran_from_start_hook{0};
  std::atomic<fjord::pool*> self{nullptr};
  {
    fjord::pool p(
        fjord::pool_options{.workers = 2,
                            .on_thread_start =
                                [&](std::size_t) {
                                  while (self.load() == nullptr) {  // set right after construction
                                    std::this_thread::yield();
                                  }
                                  try {
                                    self.load()->wait_idle();  // would wait for itself
                                  } catch (const std::logic_error&) {
                                    refused_wait.fetch_add(1);
                                  }
                                  self.load()->post([&] { ran_from_start_hook.fetch_add(1); });
                                },
                            .on_thread_stop =
                                [&](std::size_t) {
                                  try {
                                    self.load()->post([] {});  // nobody would run it
                                  } catch (const fjord::shutdown_error&) {
                                    refused_post.fetch_add(1);
                                  }
                                }});
    self.store(&p);
    p.wait_idle();
  }
  EXPECT_EQ(refused_wait.load(), 2);
  EXPECT_EQ(ran_from_start_hook.load(), 2);
  EXPECT_EQ(refused_post.load(), 2);
}

}  // namespace
