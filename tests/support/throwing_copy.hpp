#pragma once

#include <atomic>
#include <stdexcept>

namespace fjord_test {

// A small callable that counts its calls and, when armed, throws from its
// copy constructor: what a pool or group does when building a job from an
// lvalue fails halfway.
struct throwing_copy {
  std::atomic<int>* ran;
  bool armed;
  throwing_copy(std::atomic<int>* r, bool a) : ran(r), armed(a) {}
  throwing_copy(const throwing_copy& o) : ran(o.ran), armed(o.armed) {
    if (armed) {
      throw std::runtime_error("copy failed");
    }
  }
  throwing_copy& operator=(const throwing_copy&) = delete;
  ~throwing_copy() = default;
  void operator()() const { ran->fetch_add(1); }
};

}  // namespace fjord_test
