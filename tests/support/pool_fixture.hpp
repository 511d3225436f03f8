#pragma once

#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "fjord/detail/assert.hpp"
#include "fjord/detail/frame_allocator.hpp"
#include "fjord/pool.hpp"
#include "support/lifetime_probe.hpp"

namespace fjord_test {

// Runs a test on pools of 1, 2 and 4 workers (as marl's fixtures do), and
// after each run checks that the pool left nothing behind: every job block
// of its workers' heaps freed, no coroutine still waiting on it, every
// coroutine frame freed (counted in builds with assertions: Debug, ASan,
// TSan), and every lifetime_probe made during the test destroyed with its
// frame.
//
//   class join_on_pools : public fjord_test::pool_fixture {};
//   TEST_P(join_on_pools, something) { fjord::pool& p = pool(); ... }
//   INSTANTIATE_TEST_SUITE_P(workers, join_on_pools, fjord_test::worker_counts,
//                            fjord_test::worker_count_name);
class pool_fixture : public ::testing::TestWithParam<std::size_t> {
 protected:
  void SetUp() override {
    probes_before_ = lifetime_probe::live.load();
    frames_before_ = fjord::detail::frame_allocator::live_frames();
    pool_.emplace(fjord::pool_options{.workers = GetParam()});
  }

  void TearDown() override {
    pool_->wait_idle();
    fjord::detail::pool_core& core = fjord::detail::pool_access::core(*pool_);
    EXPECT_EQ(core.live_heap_blocks(), 0) << "job blocks still allocated after the test";
    EXPECT_EQ(core.waiting_coroutines(), 0) << "coroutines still waiting on the pool";
    pool_.reset();
    EXPECT_EQ(lifetime_probe::live.load(), probes_before_) << "coroutine frames not destroyed";
#if FJORD_ASSERTIONS
    EXPECT_EQ(fjord::detail::frame_allocator::live_frames(), frames_before_)
        << "coroutine frames still allocated after the test";
#endif
  }

  fjord::pool& pool() {
    return *pool_;
  }

 private:
  std::optional<fjord::pool> pool_;
  long probes_before_ = 0;
  std::int64_t frames_before_ = 0;
};

inline const auto worker_counts = ::testing::Values(std::size_t{1}, std::size_t{2}, std::size_t{4});

inline std::string worker_count_name(const ::testing::TestParamInfo<std::size_t>& info) {
  return std::to_string(info.param) + "_workers";
}

}  // namespace fjord_test
