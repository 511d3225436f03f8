#include "fjord/detail/futex.hpp"

#include <cerrno>
#include <climits>
#include <ctime>

#if defined(__linux__)
#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif

namespace fjord::detail {

#if defined(__linux__)

namespace {

long futex_call(const void* addr, int op, std::uint32_t val, const timespec* timeout) noexcept {
  return syscall(SYS_futex, addr, op, val, timeout, nullptr, 0);
}

}  // namespace

void futex_wait(const void* word, std::uint32_t expected) noexcept {
  futex_call(word, FUTEX_WAIT_PRIVATE, expected, nullptr);
}

bool futex_wait_for(const void* word, std::uint32_t expected,
                    std::chrono::nanoseconds timeout) noexcept {
  if (timeout.count() <= 0) {
    return false;
  }
  timespec ts{};
  ts.tv_sec = static_cast<time_t>(timeout.count() / 1'000'000'000);
  ts.tv_nsec = static_cast<long>(timeout.count() % 1'000'000'000);
  long rc = futex_call(word, FUTEX_WAIT_PRIVATE, expected, &ts);
  return !(rc == -1 && errno == ETIMEDOUT);
}

void futex_wake_one(const void* word) noexcept {
  futex_call(word, FUTEX_WAKE_PRIVATE, 1, nullptr);
}

void futex_wake_all(const void* word) noexcept {
  futex_call(word, FUTEX_WAKE_PRIVATE, INT_MAX, nullptr);
}

#else
#error "fjord currently supports Linux only (futex); a port needs a waiter here"
#endif

}  // namespace fjord::detail
