#pragma once

#include <coroutine>
#include <cstddef>
#include <exception>
#include <iterator>
#include <memory>
#include <type_traits>
#include <utility>

#include "fjord/detail/frame_allocator.hpp"

namespace fjord {

/// A synchronous, lazy sequence: the body runs on the consuming thread, up to
/// each co_yield, as the range is iterated. An input range (iterate it once);
/// an exception from the body is rethrown from begin() or ++. Frames come
/// from fjord's frame allocator.
///
///   fjord::generator<int> iota(int n) { for (int i = 0; i < n; ++i) co_yield i; }
///   for (int i : iota(10)) { ... }
template <class T>
class [[nodiscard]] generator {
 public:
  /// The type of the values produced.
  using value_type = std::remove_cvref_t<T>;
  /// What dereferencing an iterator gives.
  using reference = std::conditional_t<std::is_reference_v<T>, T, const T&>;

  /// Coroutine protocol: the generator's promise.
  class promise_type {
   public:
    /// Coroutine protocol: frames come from fjord's frame allocator.
    static void* operator new(std::size_t size) { return detail::frame_allocator::allocate(size); }
    /// Coroutine protocol: frames go back to fjord's frame allocator.
    static void operator delete(void* p, std::size_t size) noexcept {
      detail::frame_allocator::deallocate(p, size);
    }

    /// Coroutine protocol.
    generator get_return_object() noexcept {
      return generator(std::coroutine_handle<promise_type>::from_promise(*this));
    }
    /// Coroutine protocol: lazy, starts at the first begin().
    std::suspend_always initial_suspend() const noexcept { return {}; }
    /// Coroutine protocol: the frame stays until the generator is destroyed.
    std::suspend_always final_suspend() const noexcept { return {}; }

    /// The yielded object lives in the suspended body until the next resume.
    std::suspend_always yield_value(std::remove_reference_t<reference>& v) noexcept {
      value_ = std::addressof(v);
      return {};
    }
    /// A temporary (or a value of another type) is kept in the frame.
    template <class U = value_type>
    auto yield_value(U&& v) noexcept(std::is_nothrow_constructible_v<value_type, U&&>) {
      struct holder {
        value_type copy;
        promise_type* self;
        bool await_ready() const noexcept { return false; }
        void await_suspend(std::coroutine_handle<>) noexcept {
          self->value_ = std::addressof(copy);
        }
        void await_resume() const noexcept {}
      };
      return holder{value_type(std::forward<U>(v)), this};
    }
    /// Coroutine protocol.
    void return_void() noexcept {}
    /// Coroutine protocol: the exception is rethrown by the iterator that resumed the body.
    void unhandled_exception() noexcept { error_ = std::current_exception(); }
    template <class U>
    void await_transform(U&&) = delete;  ///< no co_await inside a generator

    /// The value last yielded.
    reference value() const noexcept { return static_cast<reference>(*value_); }
    /// Rethrows an exception the body let escape.
    void rethrow_if_error() {
      if (error_) {
        std::rethrow_exception(std::exchange(error_, nullptr));
      }
    }

   private:
    std::add_pointer_t<std::remove_reference_t<reference>> value_ = nullptr;
    std::exception_ptr error_;
  };

  /// An input iterator over the values; compares equal to std::default_sentinel at the end.
  class iterator {
   public:
    /// Single pass.
    using iterator_concept = std::input_iterator_tag;
    /// The type of the values produced.
    using value_type = generator::value_type;
    /// Required of iterators; generators are never subtracted.
    using difference_type = std::ptrdiff_t;

    iterator() noexcept = default;
    /// Made by begin().
    explicit iterator(std::coroutine_handle<promise_type> h) noexcept : handle_(h) {}

    /// The current value.
    reference operator*() const noexcept { return handle_.promise().value(); }
    /// Resumes the body up to its next co_yield (rethrowing what it throws).
    iterator& operator++() {
      handle_.resume();
      handle_.promise().rethrow_if_error();
      return *this;
    }
    /// As ++it.
    void operator++(int) { ++*this; }
    /// True at the end (the body has returned).
    friend bool operator==(const iterator& it, std::default_sentinel_t) noexcept {
      return !it.handle_ || it.handle_.done();
    }

   private:
    std::coroutine_handle<promise_type> handle_;
  };

  /// Moves the generator; `o` becomes empty.
  generator(generator&& o) noexcept : handle_(std::exchange(o.handle_, {})) {}
  /// Destroys this generator's frame and takes over `o`'s.
  generator& operator=(generator&& o) noexcept {
    std::swap(handle_, o.handle_);
    return *this;
  }
  generator(const generator&) = delete;
  generator& operator=(const generator&) = delete;
  ~generator() {
    if (handle_) {
      handle_.destroy();
    }
  }

  /// Starts the body (runs it to its first co_yield).
  iterator begin() {
    if (handle_) {
      handle_.resume();
      handle_.promise().rethrow_if_error();
    }
    return iterator(handle_);
  }
  /// The end sentinel.
  std::default_sentinel_t end() const noexcept { return {}; }

 private:
  explicit generator(std::coroutine_handle<promise_type> h) noexcept : handle_(h) {}
  std::coroutine_handle<promise_type> handle_;
};

}  // namespace fjord
