#pragma once

#include <concepts>
#include <coroutine>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <new>
#include <type_traits>
#include <utility>

#include "fjord/detail/config.hpp"
#include "fjord/detail/frame_allocator.hpp"
#include "fjord/detail/job.hpp"
#include "fjord/detail/transfer.hpp"

namespace fjord {
template <class T>
class task;
}  // namespace fjord

namespace fjord::detail {

// Whether T is a fjord::task (when_all's ranges, go's processes).
template <class T>
inline constexpr bool is_task_v = false;
template <class T>
inline constexpr bool is_task_v<task<T>> = true;

// co_await on an empty task: throws std::logic_error (out of line, so that
// task.hpp needs no <stdexcept>).
[[noreturn]] void throw_empty_task();

class pool_core;

// A detached task (spawn, go) has no coroutine to resume when it ends: its
// continuation holds the pool it reports to, tagged in the low bit, which
// no coroutine frame's address has (frames are at least 8-byte aligned).
// It is compared and decoded, never resumed. So a detached task needs no
// root coroutine around it, which would cost a second frame per process.
inline std::coroutine_handle<> detached_mark(pool_core* p) noexcept {
  return std::coroutine_handle<>::from_address(static_cast<char*>(static_cast<void*>(p)) + 1);
}
inline bool is_detached_mark(std::coroutine_handle<> h) noexcept {
  return (reinterpret_cast<std::uintptr_t>(h.address()) & 1) != 0;
}
inline pool_core* detached_pool(std::coroutine_handle<> mark) noexcept {
  return static_cast<pool_core*>(static_cast<void*>(static_cast<char*>(mark.address()) - 1));
}
// Sends the exception that ended a detached task to p's
// unhandled_exception_handler (out of line: pool_core is not complete here).
void report_detached_error(pool_core* p, const std::exception_ptr& e) noexcept;

// The end of a detached task: its exception (if any) to its pool, then its
// frame freed. Out of line: the co_await chain's completion stays a test
// and a tail call.
template <class Promise>
FJORD_NOINLINE void end_detached(std::coroutine_handle<Promise> h) noexcept {
  Promise& promise = h.promise();
  if (promise.has_error()) {
    try {
      static_cast<void>(promise.result());
    } catch (...) {
      report_detached_error(detached_pool(promise.links.continuation), std::current_exception());
    }
  }
  h.destroy();
}

// What every fjord coroutine promise shares: frames from the frame
// allocator, the coroutine to resume when this one ends, and the stop token
// it runs under (inherited from whoever awaits it).
class promise_base {
 public:
  static void* operator new(std::size_t size) { return frame_allocator::allocate(size); }
  static void operator delete(void* p, std::size_t size) noexcept {
    frame_allocator::deallocate(p, size);
  }

  // Lazy: nothing runs until the task is awaited.
  std::suspend_always initial_suspend() const noexcept { return {}; }

  // Symmetric transfer to the awaiting coroutine: a chain of completions is a
  // chain of tail calls, so the stack does not grow.
  struct final_awaiter {
    bool await_ready() const noexcept { return false; }
    template <class Promise>
    std::coroutine_handle<> await_suspend(std::coroutine_handle<Promise> h) const noexcept {
      const std::coroutine_handle<> next = h.promise().links.continuation;
      if (is_detached_mark(next)) [[unlikely]] {
        end_detached(h);  // h is gone after this
        return std::noop_coroutine();
      }
      return transfer_to(h, next);
    }
    void await_resume() const noexcept {}
  };
  final_awaiter final_suspend() const noexcept { return {}; }

  // Started by nobody's co_await (spawn, go): ends by reporting to p and
  // freeing its own frame (see detached_mark). After make_start_job(), the
  // two fields take the job's place again.
  void detach(pool_core* p) noexcept {
    links.continuation = detached_mark(p);
    links.stop_token_address = nullptr;  // nobody can ask it to stop
  }

  // A detached task queued to start on a worker of its pool: until it first
  // runs, the job that starts it takes the place of the two fields (nothing
  // reads them before the task runs), so go() allocates no job. `start`
  // must call detach() before it resumes the task.
  job* make_start_job(job::execute_fn start) noexcept {
    return ::new (static_cast<void*>(&start_job)) job(start);
  }
  // The promise whose make_start_job() made j: the union is the first
  // member of a standard-layout class, so all three share one address.
  static promise_base& of_start_job(job* j) noexcept { return *reinterpret_cast<promise_base*>(j); }

  // Called when `parent` awaits this coroutine.
  template <class Parent>
  void attach(std::coroutine_handle<Parent> parent) noexcept {
    links.continuation = parent;
    if constexpr (std::is_base_of_v<promise_base, Parent>) {
      links.stop_token_address = parent.promise().links.stop_token_address;
    } else {
      links.stop_token_address = nullptr;
    }
  }

  // Where the coroutine goes on when it ends, and the stop token it runs
  // under.
  struct link_fields {
    std::coroutine_handle<> continuation;
    // Not owned: it lives in whoever set it (when_any, with_stop_token) and
    // outlives this coroutine. nullptr: no stop can be requested. Untyped
    // so that task.hpp needs no <stop_token>, which alone costs more to
    // compile than the rest of it (#11); detail/promise_stop_token.hpp
    // reads it back.
    const void* stop_token_address;
  };
  // Left unset here: both fields are written by attach() before a task
  // first runs (the co_await chain path saves two stores a call), or by
  // detach(); promises that are never attached (the roots of sync_wait,
  // spawn and when_all) set them themselves.
  promise_base() noexcept {}  // NOLINT(modernize-use-equals-default): leaves the union unset
  union {
    link_fields links;  // from attach() or detach() on
    job start_job;      // make_start_job(), until the task first runs
  };
};

static_assert(std::is_standard_layout_v<job> && std::is_standard_layout_v<promise_base> &&
              sizeof(promise_base) == sizeof(promise_base::link_fields) &&
              sizeof(job) <= sizeof(promise_base::link_fields));

// What the promises of fjord's own root coroutines share (sync_wait's,
// spawn's, and when_all's and when_any's runners): they start a task rather
// than being awaited, so they have no parent to inherit a stop token from;
// they return nothing; and the handle is the return object. Root is the
// coroutine's type, Promise its promise type (which derives from this).
template <class Root, class Promise>
struct root_promise : promise_base {
  root_promise() noexcept { links.stop_token_address = nullptr; }
  Root get_return_object() noexcept {
    return Root(std::coroutine_handle<Promise>::from_promise(static_cast<Promise&>(*this)));
  }
  void return_void() noexcept {}
  // A root that awaits its task's completion, not its result, cannot see
  // an exception (spawn's root, which can, replaces this).
  [[noreturn]] void unhandled_exception() noexcept { std::terminate(); }
};

// The outcome of a task: a value, an exception, or (before it ran) nothing.
// A hand-made union rather than std::variant keeps the hot path to a byte
// test and a move; this is the path the co_await chain benchmark measures.
template <class T>
class task_promise final : public promise_base {
 public:
  task_promise() noexcept {}  // NOLINT(cppcoreguidelines-pro-type-member-init): see attach()
  ~task_promise() {
    if constexpr (!std::is_trivially_destructible_v<T>) {
      if (state_ == state::value) {
        stored_value.~T();
        return;
      }
    }
    if (state_ == state::error) {
      stored_error.~exception_ptr();
    }
  }
  task_promise(const task_promise&) = delete;
  task_promise& operator=(const task_promise&) = delete;

  task<T> get_return_object() noexcept;

  template <std::convertible_to<T> U>
  void return_value(U&& v) noexcept(std::is_nothrow_constructible_v<T, U&&>) {
    // Placement new on the member's own address (__builtin_addressof, which
    // is what std::addressof is, without <memory>'s compile time); the casts
    // drop a const T's const, as std::construct_at does.
    ::new (const_cast<void*>(static_cast<const volatile void*>(__builtin_addressof(stored_value))))
        T(std::forward<U>(v));
    state_ = state::value;
  }
  void unhandled_exception() noexcept {
    ::new (static_cast<void*>(&stored_error)) std::exception_ptr(std::current_exception());
    state_ = state::error;
  }

  T& result() & {
    if (state_ == state::error) [[unlikely]] {
      std::rethrow_exception(stored_error);
    }
    return stored_value;
  }
  T result() && {
    if (state_ == state::error) [[unlikely]] {
      std::rethrow_exception(stored_error);
    }
    return std::move(stored_value);
  }
  bool has_error() const noexcept { return state_ == state::error; }

 private:
  enum class state : unsigned char { empty, value, error };
  union {
    T stored_value;
    std::exception_ptr stored_error;
  };
  state state_ = state::empty;
};

template <class T>
class task_promise<T&> final : public promise_base {
 public:
  task<T&> get_return_object() noexcept;

  void return_value(T& v) noexcept { value_ = __builtin_addressof(v); }
  void unhandled_exception() noexcept { error_ = std::current_exception(); }

  T& result() const {
    if (error_) [[unlikely]] {
      std::rethrow_exception(error_);
    }
    return *value_;
  }
  bool has_error() const noexcept { return error_ != nullptr; }

 private:
  T* value_ = nullptr;
  std::exception_ptr error_;
};

template <>
class task_promise<void> final : public promise_base {
 public:
  task<void> get_return_object() noexcept;

  void return_void() noexcept {}
  void unhandled_exception() noexcept { error_ = std::current_exception(); }

  void result() const {
    if (error_) [[unlikely]] {
      std::rethrow_exception(error_);
    }
  }
  bool has_error() const noexcept { return error_ != nullptr; }

 private:
  std::exception_ptr error_;
};

// Awaits a task's completion without taking its result: the result (or
// exception) stays in the promise. co_await on a task adds the result on top;
// fjord's roots and runners use it as is.
template <class T>
struct completion_awaiter {
  std::coroutine_handle<task_promise<T>> handle;

  bool await_ready() const noexcept { return handle.done(); }
  template <class Parent>
  std::coroutine_handle<> await_suspend(std::coroutine_handle<Parent> parent) const noexcept {
    handle.promise().attach(parent);
    return transfer_to(parent, handle);
  }
  void await_resume() const noexcept {}
};

// What fjord's own combinators need from a task beyond its public face
// (a friend of task; defined here so detail headers need not include the
// public task.hpp).
struct task_access {
  template <class T>
  static std::coroutine_handle<task_promise<T>> handle(const task<T>& t) noexcept {
    return t.handle_;
  }

  // Gives up t's frame without destroying it (a detached task frees itself).
  template <class T>
  static void release(task<T>& t) noexcept {
    t.handle_ = {};
  }

  // The result of a finished task: the value (moved out), or its exception.
  template <class T>
  static T take_result(task<T>& t) {
    if constexpr (std::is_reference_v<T> || std::is_void_v<T>) {
      return t.handle_.promise().result();
    } else {
      return std::move(t.handle_.promise()).result();
    }
  }
};

}  // namespace fjord::detail
