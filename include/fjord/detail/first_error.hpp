#pragma once

#include <atomic>
#include <exception>
#include <utility>

namespace fjord::detail {

// Stops an algorithm's pieces after the first exception from user code:
// pieces not yet started are skipped (they throw `skipped`), and the
// caller gets the first exception, not a skip, whatever join lets through.
class first_error {
 public:
  struct skipped {};

  // True once a piece failed (relaxed: a hint to stop taking work).
  bool failed() const noexcept { return failed_.load(std::memory_order_relaxed); }

  // Runs one piece: skipped once a piece failed, else f(), recording the
  // first exception.
  template <class F>
  decltype(auto) run(F&& f) {
    // Relaxed: a late skip costs a piece of work, never a wrong result;
    // error_ is published to the caller by the joins that end the call.
    if (failed()) {
      throw skipped{};
    }
    try {
      return std::forward<F>(f)();
    } catch (const skipped&) {
      throw;
    } catch (...) {
      if (!failed_.exchange(true, std::memory_order_relaxed)) {
        error_ = std::current_exception();
      }
      throw;
    }
  }

  // Call from a catch block around the whole call, after every piece
  // ended: throws the first recorded exception, else the one in flight.
  [[noreturn]] void rethrow() const {
    if (error_) {
      std::rethrow_exception(error_);
    }
    throw;
  }

 private:
  std::atomic<bool> failed_{false};
  std::exception_ptr error_;
};

}  // namespace fjord::detail
