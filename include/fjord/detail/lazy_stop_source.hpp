#pragma once

#include <atomic>
#include <stop_token>

namespace fjord::detail {

// A stop flag that becomes a std::stop_source only when someone asks for a
// token. Most task_groups never hand one out, and a std::stop_source
// allocates its shared state: that allocation was the largest single cost of
// a small group.
//
// request_stop and get_token meet in a Dekker handshake on seq_cst
// operations: request_stop writes the flag, then reads the source pointer;
// get_token publishes the source, then reads the flag. In the single total
// order of seq_cst operations one of the two writes comes first, so the
// other side's read sees it, and the source is stopped by at least one side
// (std::stop_source::request_stop is idempotent and thread-safe).
class lazy_stop_source {
 public:
  lazy_stop_source() noexcept = default;
  lazy_stop_source(const lazy_stop_source&) = delete;
  lazy_stop_source& operator=(const lazy_stop_source&) = delete;
  ~lazy_stop_source() { delete source_.load(std::memory_order_acquire); }

  // Acquire: whoever sees the flag also sees what the stopper wrote before.
  bool stop_requested() const noexcept { return stopped_.load(std::memory_order_acquire); }

  void request_stop() noexcept {
    if (stopped_.exchange(true, std::memory_order_seq_cst)) {
      return;  // the first request told the source, if there was one
    }
    if (std::stop_source* s = source_.load(std::memory_order_seq_cst)) {
      s->request_stop();
    }
  }

  // A token that sees every stop request, before or after this call. The
  // first call allocates (and may throw std::bad_alloc); later ones do not.
  std::stop_token get_token() {
    std::stop_source* s = source_.load(std::memory_order_acquire);
    if (s == nullptr) {
      auto* fresh = new std::stop_source();
      if (source_.compare_exchange_strong(s, fresh, std::memory_order_seq_cst,
                                          std::memory_order_acquire)) {
        s = fresh;
      } else {
        delete fresh;  // another thread published one first; s is it now
      }
    }
    // Whichever thread published the source, a stop request that read no
    // source has set the flag first: carry it over (see above).
    if (stopped_.load(std::memory_order_seq_cst)) {
      s->request_stop();
    }
    return s->get_token();
  }

 private:
  std::atomic<bool> stopped_{false};
  std::atomic<std::stop_source*> source_{nullptr};
};

}  // namespace fjord::detail
