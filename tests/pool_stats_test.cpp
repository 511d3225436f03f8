#include "fjord/pool_stats.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <numeric>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "fjord/join.hpp"
#include "fjord/pool.hpp"

namespace {

using namespace std::chrono_literals;

TEST(pool_stats, time_accounts_cover_the_workers_lives) {
  fjord::pool pool(fjord::pool_options{.workers = 2});
  std::this_thread::sleep_for(50ms);  // idle: mostly parked
  const auto idle = pool.stats();
  ASSERT_EQ(idle.workers.size(), 2u);
  for (const auto& w : idle.workers) {
    EXPECT_GE(w.parked + w.searching + w.busy, 40ms);
    EXPECT_GT(w.parked, w.busy) << "an idle worker is parked, not busy";
  }
  pool.submit([] { std::this_thread::sleep_for(30ms); }).get();  // one worker busy
  const auto after = pool.stats().total();
  EXPECT_GE(after.busy, 30ms);
  EXPECT_GT(after.utilisation(), 0.0);
  EXPECT_LT(after.utilisation(), 1.0);
}

TEST(pool_stats, one_job_in_sample_interval_is_timed) {
  fjord::pool pool(fjord::pool_options{.workers = 2});
  constexpr int jobs = 10'000;
  for (int i = 0; i < jobs; ++i) {
    pool.post([] { std::this_thread::sleep_for(std::chrono::nanoseconds(0)); });
  }
  pool.wait_idle();
  const auto stats = pool.stats();
  for (const auto& w : stats.workers) {
    const std::uint64_t timed =
        std::accumulate(w.job_durations.begin(), w.job_durations.end(), std::uint64_t{0});
    // Posted jobs all go through the sampled path: exactly every 64th.
    EXPECT_EQ(timed, w.jobs_run / fjord::job_duration_sample_interval);
  }
  EXPECT_GE(stats.total().jobs_run, static_cast<std::uint64_t>(jobs));
}

TEST(pool_stats, a_long_job_lands_in_its_power_of_two_bucket) {
  fjord::pool pool(fjord::pool_options{.workers = 1});
  // The 64th job run (the sampled one) sleeps 5 ms: bucket
  // floor(log2(5e6 ns)) = 22, or above when the sleep overshoots (a loaded
  // machine), never below. It is posted after the other 63 have run: the
  // pool does not promise to run posts in order (a thread's first posts and
  // its later ones may take different submission paths).
  for (int i = 1; i < 64; ++i) {
    pool.post([] {});
  }
  pool.wait_idle();
  pool.post([] { std::this_thread::sleep_for(5ms); });
  pool.wait_idle();
  const auto h = pool.stats().workers.at(0).job_durations;
  std::size_t bucket = fjord::job_duration_buckets;
  for (std::size_t i = 0; i < h.size(); ++i) {
    if (h[i] != 0) {
      bucket = i;
    }
  }
  ASSERT_LT(bucket, fjord::job_duration_buckets);
  EXPECT_GE(bucket, 22u);
}

TEST(pool_stats, steal_success_rate_and_queue_depth) {
  fjord::worker_stats w;
  EXPECT_EQ(w.steal_success_rate(), 0.0);
  w.steals = 3;
  w.failed_steals = 1;
  EXPECT_DOUBLE_EQ(w.steal_success_rate(), 0.75);
  fjord::pool pool(fjord::pool_options{.workers = 1});
  std::atomic<bool> release{false};
  // A job that posts 100 more onto its own deque and waits: depth 100.
  pool.post([&] {
    for (int i = 0; i < 100; ++i) {
      pool.post([] {});
    }
    while (!release.load()) {
      std::this_thread::yield();
    }
  });
  for (int i = 0; i < 1000 && pool.stats().workers.at(0).queue_depth < 100; ++i) {
    std::this_thread::sleep_for(1ms);
  }
  EXPECT_EQ(pool.stats().workers.at(0).queue_depth, 100u);
  release = true;
  pool.wait_idle();
  EXPECT_EQ(pool.stats().workers.at(0).queue_depth, 0u);
}

TEST(pool_stats, injection_depth_counts_every_outside_path) {
  fjord::pool pool(fjord::pool_options{.workers = 1});
  std::atomic<bool> running{false};
  std::atomic<bool> release{false};
  pool.post([&] {
    running = true;
    while (!release.load()) {
      std::this_thread::yield();
    }
  });
  while (!running.load()) {
    std::this_thread::yield();
  }
  EXPECT_EQ(pool.stats().injection_depth, 0u);
  // The one worker is held: what follows waits, on each path in turn.
  std::atomic<int> ran{0};
  for (int i = 0; i < 100; ++i) {
    pool.post([&] { ++ran; });  // this thread's submission lane
  }
  std::vector<std::function<void()>> bulk(50, [&] { ++ran; });
  pool.post_bulk(bulk);  // one chain on the linked queue
  for (int i = 0; i < 5; ++i) {
    pool.post(fjord::priority::high, [&] { ++ran; });
  }
  for (int i = 0; i < 7; ++i) {
    pool.post(fjord::priority::low, [&] { ++ran; });
  }
  const auto held = pool.stats();
  EXPECT_EQ(held.injection_depth, 162u);
  EXPECT_EQ(held.total().queue_depth, 0u);
  EXPECT_NE(fjord::summary_line(held, "p").find(", 162 queued"), std::string::npos)
      << fjord::summary_line(held, "p");
  EXPECT_NE(fjord::to_prometheus(held, "p").find("fjord_injection_depth{pool=\"p\"} 162\n"),
            std::string::npos);
  release = true;
  pool.wait_idle();
  EXPECT_EQ(ran.load(), 162);
  EXPECT_EQ(pool.stats().injection_depth, 0u);
}

TEST(pool_stats, prometheus_exposition_is_well_formed) {
  fjord::pool pool(fjord::pool_options{.workers = 2});
  for (int i = 0; i < 1000; ++i) {
    pool.post([] {});
  }
  pool.wait_idle();
  const std::string text = fjord::to_prometheus(pool.stats(), "we\"ird\\name\n");
  std::istringstream in(text);
  std::string line;
  const std::regex sample(
      R"re(^(fjord_[a-z_]+)\{pool="we\\"ird\\\\name\\n"(,worker="[0-9]+")?(,(state|le)="[^"]+")?\} ([-+0-9.e]+|\+Inf)$)re");
  std::set<std::string> typed;
  std::uint64_t last_bucket = 0;
  std::uint64_t inf_bucket = 0;
  std::uint64_t count = 0;
  int samples = 0;
  while (std::getline(in, line)) {
    if (line.rfind("# TYPE ", 0) == 0) {
      typed.insert(line.substr(7, line.find(' ', 7) - 7));
      continue;
    }
    if (line.rfind("# HELP ", 0) == 0) {
      continue;
    }
    std::smatch m;
    ASSERT_TRUE(std::regex_match(line, m, sample)) << line;
    ++samples;
    std::string family = m[1];
    for (const char* suffix : {"_bucket", "_sum", "_count"}) {
      const std::string s = suffix;
      if (family.size() > s.size() && family.compare(family.size() - s.size(), s.size(), s) == 0 &&
          family.rfind("fjord_job_duration_seconds", 0) == 0) {
        family = "fjord_job_duration_seconds";
      }
    }
    EXPECT_TRUE(typed.count(family)) << "no TYPE line before " << line;
    if (std::string(m[1]) == "fjord_job_duration_seconds_bucket") {
      const std::uint64_t v = std::stoull(m[5]);
      EXPECT_GE(v, last_bucket) << "buckets are cumulative";
      last_bucket = v;
      if (line.find("le=\"+Inf\"") != std::string::npos) {
        inf_bucket = v;
      }
    }
    if (std::string(m[1]) == "fjord_job_duration_seconds_count") {
      count = std::stoull(m[5]);
    }
  }
  EXPECT_GT(samples, 20);
  EXPECT_EQ(inf_bucket, count);
  EXPECT_GE(count, 1000u / fjord::job_duration_sample_interval - 2);
}

TEST(pool_stats, summary_line_is_one_line) {
  fjord::pool pool(fjord::pool_options{.workers = 2});
  pool.call([] {});
  const std::string line = fjord::summary_line(pool.stats(), "p");
  EXPECT_EQ(line.find('\n'), std::string::npos);
  EXPECT_EQ(line.rfind("fjord: pool \"p\": 2 threads, ", 0), 0u) << line;
}

}  // namespace
