#pragma once

#include "fjord/detail/pool_core.hpp"
#include "fjord/detail/worker.hpp"

namespace fjord::detail {

// While one lives on a worker thread, the worker counts as blocked and, as
// soon as there is work, a spare thread runs in its place
// (pool_core::begin_blocking). On any other thread it does nothing.
class blocking_section {
 public:
  blocking_section() noexcept : worker_(current_worker) {
    if (worker_ != nullptr) {
      worker_->pool->begin_blocking(*worker_);
    }
  }
  ~blocking_section() {
    if (worker_ != nullptr) {
      worker_->pool->end_blocking(*worker_);
    }
  }
  blocking_section(const blocking_section&) = delete;
  blocking_section& operator=(const blocking_section&) = delete;

 private:
  worker* worker_;
};

}  // namespace fjord::detail
