#include <stdexcept>

#include "fjord/detail/pool_core.hpp"
#include "fjord/detail/task_promise.hpp"

namespace fjord::detail {

void throw_empty_task() {
  throw std::logic_error(
      "fjord::task: co_await on an empty task (default-constructed or moved-from)");
}

void report_detached_error(pool_core* p, const std::exception_ptr& e) noexcept {
  p->report_unhandled(e);
}

}  // namespace fjord::detail
