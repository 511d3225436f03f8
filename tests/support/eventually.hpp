#pragma once

#include <chrono>
#include <functional>
#include <thread>

namespace fjord_test {

// Polls cond every millisecond for up to 10 s (generous for sanitizers);
// whether it became true.
inline bool eventually(const std::function<bool()>& cond) {
  using namespace std::chrono_literals;
  const auto end = std::chrono::steady_clock::now() + 10s;
  while (std::chrono::steady_clock::now() < end) {
    if (cond()) {
      return true;
    }
    std::this_thread::sleep_for(1ms);
  }
  return cond();
}

}  // namespace fjord_test
