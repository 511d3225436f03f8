// The streaming kernel of large integer + scans (detail/streaming_scan.hpp):
// every length and alignment against std::inclusive_scan, in place too, and
// an end-to-end scan past the threshold that selects it.
#include "fjord/detail/streaming_scan.hpp"

#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <limits>
#include <numeric>
#include <vector>

#include "fjord/scan.hpp"
#include "support/algorithm_inputs.hpp"

namespace {

template <class T>
void check_every_length_and_alignment() {
  const auto values = test_support::random_ints(300, 17, -1'000'000, 1'000'000);
  for (std::size_t offset = 0; offset < 16; ++offset) {
    for (std::size_t count = 0; count < 200; ++count) {
      std::vector<T> in(count);
      for (std::size_t i = 0; i < count; ++i) {
        in[i] = static_cast<T>(values[i]);
      }
      std::vector<T> want(count);
      std::inclusive_scan(in.begin(), in.end(), want.begin(), std::plus<>(), T{5});
      std::vector<T> out(count + offset + 1, T{0});
      const T last =
          fjord::detail::streaming_inclusive_sum<T>(in.data(), out.data() + offset, count, T{5});
      ASSERT_EQ(last, count == 0 ? T{5} : want.back()) << count << " " << offset;
      ASSERT_TRUE(
          std::equal(want.begin(), want.end(), out.begin() + static_cast<std::ptrdiff_t>(offset)))
          << count << " " << offset;
      ASSERT_EQ(out.back(), T{0}) << "wrote past the end";
      // In place: every line is read before it is written.
      std::vector<T> buffer(count + offset);
      std::copy(in.begin(), in.end(), buffer.begin() + static_cast<std::ptrdiff_t>(offset));
      T* at = buffer.data() + offset;
      (void)fjord::detail::streaming_inclusive_sum<T>(at, at, count, T{5});
      ASSERT_TRUE(std::equal(want.begin(), want.end(), at)) << count << " " << offset;
    }
  }
}

TEST(streaming_scan, matches_std_at_every_length_and_alignment) {
  check_every_length_and_alignment<std::int32_t>();
  check_every_length_and_alignment<std::uint32_t>();
  check_every_length_and_alignment<std::int64_t>();
  check_every_length_and_alignment<std::uint64_t>();
}

TEST(streaming_scan, wraps_as_the_sequential_sum_of_the_same_values_does) {
  std::vector<std::uint32_t> in(100, std::numeric_limits<std::uint32_t>::max() / 3);
  std::vector<std::uint32_t> want(in.size());
  std::vector<std::uint32_t> out(in.size());
  std::inclusive_scan(in.begin(), in.end(), want.begin());
  (void)fjord::detail::streaming_inclusive_sum<std::uint32_t>(in.data(), out.data(), in.size(), 0);
  EXPECT_EQ(out, want);
}

TEST(streaming_scan, a_scan_past_the_threshold_matches_std_on_every_pool) {
  // Past the threshold (three quarters of the last-level cache), so the
  // parallel scan takes the streaming path; odd, so tiles and lines end
  // unaligned.
  const std::size_t n = fjord::detail::streaming_store_threshold() / sizeof(std::int32_t) + 12345;
  std::vector<std::int32_t> in(n);
  for (std::size_t i = 0; i < n; ++i) {
    in[i] = static_cast<std::int32_t>((i * 2654435761U) % 2001) - 1000;
  }
  std::vector<std::int32_t> want(n);
  std::inclusive_scan(in.begin(), in.end(), want.begin());
  for (const auto& policy :
       {fjord::par.on(test_support::two_workers()), fjord::par.on(test_support::one_worker()),
        fjord::par.deterministic()}) {
    std::vector<std::int32_t> out(n + 1, 7);
    EXPECT_EQ(fjord::inclusive_scan(policy, in.begin(), in.end(), out.begin() + 1), out.end());
    EXPECT_TRUE(std::equal(want.begin(), want.end(), out.begin() + 1));
    EXPECT_EQ(out.front(), 7);
    std::vector<std::int32_t> in_place = in;
    fjord::inclusive_scan(policy, in_place.begin(), in_place.end(), in_place.begin(), std::plus<>(),
                          std::int32_t{3});
    EXPECT_EQ(in_place.back(), static_cast<std::int32_t>(want.back() + 3));
    EXPECT_EQ(in_place[n / 2], static_cast<std::int32_t>(want[n / 2] + 3));
  }
}

}  // namespace
