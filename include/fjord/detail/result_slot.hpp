#pragma once

#include <exception>
#include <optional>
#include <type_traits>
#include <utility>
#include <variant>  // std::monostate

#include "fjord/detail/assert.hpp"
#include "fjord/detail/reference_wrapper.hpp"

namespace fjord::detail {

// A result in a form that can be stored and returned as a value: void
// becomes std::monostate and a reference a std::reference_wrapper (join's
// pairs, invoke's and when_all's tuples).
template <class T>
using storable_t =
    std::conditional_t<std::is_void_v<T>, std::monostate,
                       std::conditional_t<std::is_reference_v<T>,
                                          std::reference_wrapper<std::remove_reference_t<T>>, T>>;

// Holds either nothing, a value (void and references included) or an
// exception: the outcome of running one callable.
template <class T>
class result_slot {
 public:
  template <class F>
  void run(F& f) noexcept {
    try {
      // f() rather than std::invoke(f): the same with no arguments,
      // without <functional>.
      if constexpr (std::is_void_v<T>) {
        f();
        value_.emplace();
      } else {
        // A reference result binds its reference_wrapper here.
        value_.emplace(f());
      }
    } catch (...) {
      error_ = std::current_exception();
    }
  }

  // Instead of running the callable: the call ends with e.
  void set_error(std::exception_ptr e) noexcept { error_ = std::move(e); }

  bool has_error() const noexcept { return error_ != nullptr; }
  const std::exception_ptr& error() const noexcept { return error_; }

  // Precondition: !has_error() and the callable has run; once.
  T take() {
    FJORD_ASSERT(value_.has_value(), "result_slot: taken twice, or before its callable ran");
    [[maybe_unused]] const forget_when_checking forget{value_};
    if constexpr (std::is_void_v<T>) {
      return;
    } else if constexpr (std::is_reference_v<T>) {
      return value_->get();
    } else {
      return std::move(*value_);
    }
  }

  storable_t<T> take_storable() {
    FJORD_ASSERT(value_.has_value(), "result_slot: taken twice, or before its callable ran");
    [[maybe_unused]] const forget_when_checking forget{value_};
    return std::move(*value_);
  }

 private:
  // With assertions on, a taken value is forgotten (after the return value
  // is made), so a second take fails its assertion instead of reading a
  // moved-from value. Without, it does nothing and costs nothing.
  struct forget_when_checking {
    std::optional<storable_t<T>>& value;
#if FJORD_ASSERTIONS
    ~forget_when_checking() {
      value.reset();
    }
#endif
  };

  std::optional<storable_t<T>> value_;
  std::exception_ptr error_;
};

}  // namespace fjord::detail
