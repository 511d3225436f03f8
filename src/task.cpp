#include <stdexcept>

#include "fjord/detail/task_promise.hpp"

namespace fjord::detail {

void throw_empty_task() {
  throw std::logic_error(
      "fjord::task: co_await on an empty task (default-constructed or moved-from)");
}

}  // namespace fjord::detail
