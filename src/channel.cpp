#include <algorithm>
#include <cstdint>
#include <functional>

#include "fjord/detail/channel_waiter.hpp"

namespace fjord::detail {

void lock_channels(channel_base** channels, std::size_t n) noexcept {
  // nullptr (a case on a null channel, which never becomes ready) sorts
  // first and is skipped.
  std::sort(channels, channels + n, std::less<>());
  channel_base* previous = nullptr;
  for (std::size_t i = 0; i < n; ++i) {
    if (channels[i] != previous) {
      channels[i]->lock();
      previous = channels[i];
    }
  }
}

void unlock_channels(channel_base** channels, std::size_t n) noexcept {
  channel_base* previous = nullptr;
  for (std::size_t i = 0; i < n; ++i) {
    if (channels[i] != previous) {
      channels[i]->unlock();
      previous = channels[i];
    }
  }
}

namespace {

// xorshift64* (Vigna 2016): fairness needs uniformity, not secrecy.
std::uint64_t next_random() noexcept {
  constinit thread_local std::uint64_t state = 0;
  if (state == 0) {
    state = reinterpret_cast<std::uintptr_t>(&state) * 0x9E3779B97F4A7C15ULL | 1;
  }
  state ^= state >> 12;
  state ^= state << 25;
  state ^= state >> 27;
  return state * 0x2545F4914F6CDD1DULL;
}

}  // namespace

void random_order(int* order, int n) noexcept {
  // Fisher-Yates; the bias of the multiply-shift reduction is below 2^-32
  // for the handful of cases a select has.
  for (int i = 0; i < n; ++i) {
    order[i] = i;
  }
  for (int i = n - 1; i > 0; --i) {
    const auto j =
        static_cast<int>(((next_random() >> 32) * static_cast<std::uint64_t>(i + 1)) >> 32);
    std::swap(order[i], order[j]);
  }
}

}  // namespace fjord::detail
