#pragma once

#include <array>
#include <coroutine>
#include <cstddef>
#include <optional>
#include <stop_token>
#include <tuple>
#include <type_traits>
#include <utility>

#include "fjord/detail/blocking_section.hpp"
#include "fjord/detail/callable.hpp"
#include "fjord/detail/chrono.hpp"
#include "fjord/detail/deadline.hpp"
#include "fjord/detail/select_case.hpp"

namespace fjord::detail {

template <class... Cases>
class select_operation {
 public:
  static constexpr int size = static_cast<int>(sizeof...(Cases));
  static_assert(size > 0, "fjord::select needs at least one case");
  static_assert((std::is_base_of_v<select_case, Cases> && ...),
                "fjord::select: every argument must be a case (receive_from, send_to, timeout, "
                "timeout_at, when_stopped, no_wait)");

  explicit select_operation(Cases&&... cases) : cases_(std::move(cases)...) {}

  // false: done at once.
  bool begin(channel_parker& parker) {
    all_ = std::apply([](auto&... c) { return std::array<select_case*, size>{&c...}; }, cases_);
    return select_begin(all_.data(), size, locks_.data(), order_.data(), parker, &result_);
  }
  std::size_t end(const channel_parker& parker) {
    return select_end(all_.data(), size, locks_.data(), parker, result_);
  }

 private:
  std::tuple<Cases...> cases_;
  std::array<select_case*, size> all_{};
  std::array<channel_base*, size> locks_{};
  std::array<int, size> order_{};
  int result_ = -1;
};

template <class... Cases>
class [[nodiscard]] select_awaiter {
 public:
  explicit select_awaiter(Cases&&... cases) : operation_(std::move(cases)...) {}
  select_awaiter(const select_awaiter&) = delete;
  select_awaiter& operator=(const select_awaiter&) = delete;

  bool await_ready() const noexcept { return false; }
  bool await_suspend(std::coroutine_handle<> h) {
    if (!operation_.begin(parker_)) {
      return false;
    }
    parker_.prepare(h);
    return parker_.finish_suspend();
  }
  std::size_t await_resume() { return operation_.end(parker_); }

 private:
  select_operation<Cases...> operation_;
  channel_parker parker_{false, channel_parker::claimants::several};
};

}  // namespace fjord::detail
