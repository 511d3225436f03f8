#pragma once

#include <array>
#include <concepts>
#include <coroutine>
#include <cstddef>
#include <iterator>
#include <limits>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>

#include "fjord/channel_status.hpp"
#include "fjord/detail/blocking_section.hpp"
#include "fjord/detail/channel_state.hpp"
#include "fjord/detail/config.hpp"
#include "fjord/task.hpp"

namespace fjord {

/// channel<T>(fjord::unbounded): a channel whose sends never wait.
struct unbounded_t {
  explicit unbounded_t() = default;
};
/// The tag that makes an unbounded channel.
inline constexpr unbounded_t unbounded{};

template <class T>
class channel;

namespace detail {
// Where the batch forms take values from (moving them out) and put them.
template <class It, class T>
concept iterator_to = std::forward_iterator<It> && std::same_as<std::iter_reference_t<It>, T&>;
template <class Out, class T>
concept output_iterator_for = std::output_iterator<Out, T>;

// What select's cases need of a channel handle.
struct channel_access {
  template <class T>
  static channel_state<T>* state(const channel<T>& c) noexcept {
    return c.state_;
  }
};
}  // namespace detail

/// A CSP channel with Go's semantics, for coroutines and threads alike.
///
/// A channel<T> is a handle: copies share one channel (pass it to processes
/// by value, as in Go), and the channel lives until its last handle is gone;
/// values still buffered then are destroyed. A default-constructed handle is
/// null: operations on it throw std::logic_error, except in a select, where
/// a case on a null channel is never ready (Go's nil channel idiom).
///
/// Capacity 0 is a rendezvous (a send waits for its receiver), N buffers up
/// to N values, fjord::unbounded never makes a send wait. close() ends it:
/// receives drain what is buffered, then report closed (an empty optional);
/// sends fail with fjord::channel_closed. Each value sent is received exactly
/// once, or destroyed with the channel, or (a failed send) with the sender's
/// operation. Waiters are served first come, first served, and a coroutine
/// that waits costs no thread: it is resumed where it ran (its pool, or the
/// thread in its sync_wait).
///
/// T must be nothrow move-constructible (values move under the channel's
/// lock).
template <class T>
class channel {
  static_assert(std::is_object_v<T> && !std::is_const_v<T> && !std::is_array_v<T>,
                "fjord::channel<T>: T must be a non-const object type");
  static_assert(std::is_nothrow_move_constructible_v<T>,
                "fjord::channel<T>: T must be nothrow move-constructible");
  using state = detail::channel_state<T>;

 public:
  /// The type of the values the channel carries.
  using value_type = T;

  // Operations are const: constness is the handle's, as for a pointer; the
  // channel is shared.

  /// A null handle.
  channel() noexcept = default;
  /// capacity 0: rendezvous; N: buffers up to N values (memory grows with
  /// what is buffered, not with N).
  explicit channel(std::size_t capacity) : state_(new state(capacity)) {}
  /// An unbounded channel: sends never wait (memory is the only limit).
  explicit channel(unbounded_t) : state_(new state(std::numeric_limits<std::size_t>::max())) {}

  /// Copies share one channel (a handle, as in Go).
  channel(const channel& o) noexcept : state_(o.state_) {
    if (state_ != nullptr) {
      state_->retain();
    }
  }
  /// Moves the handle; `o` becomes a null channel.
  channel(channel&& o) noexcept : state_(std::exchange(o.state_, nullptr)) {}
  /// Makes this a handle to `o`'s channel.
  channel& operator=(channel o) noexcept {
    std::swap(state_, o.state_);
    return *this;
  }
  ~channel() { state::release(state_); }

  /// True unless null.
  explicit operator bool() const noexcept { return state_ != nullptr; }
  /// Same channel.
  friend bool operator==(const channel& a, const channel& b) noexcept {
    return a.state_ == b.state_;
  }

  /// The capacity given at construction (SIZE_MAX for unbounded).
  std::size_t capacity() const { return checked("capacity").capacity; }
  /// Values buffered now (a snapshot).
  std::size_t size() const {
    state& s = checked("size");
    std::lock_guard guard(s);
    return s.buffered();
  }
  /// Whether close() has been called (values may still be buffered). A null channel throws
  /// std::logic_error.
  bool is_closed() const {
    state& s = checked("is_closed");
    std::lock_guard guard(s);
    return s.closed;
  }

  /// Closes the channel; returns false if it was already closed (closing
  /// twice is harmless, unlike in Go). Waiting receivers get an empty
  /// optional, waiting senders channel_closed.
  bool close() const { return checked("close").close(); }

  class send_awaiter;
  class receive_awaiter;

  /// co_await ch.send(v): delivers v to a receiver or the buffer, waiting
  /// (suspended) while there is no room. Throws fjord::channel_closed if the
  /// channel is or becomes closed first (v is then destroyed).
  [[nodiscard]] send_awaiter send(T v) const {
    checked("send");
    return send_awaiter(*this, std::move(v));
  }

  /// co_await ch.receive(): the next value, waiting (suspended) for one;
  /// an empty optional once the channel is closed and drained.
  [[nodiscard]] receive_awaiter receive() const {
    checked("receive");
    return receive_awaiter(*this);
  }

  /// The same for a plain thread, which blocks (on a worker, with a stand-in
  /// thread running in its place meanwhile).
  void blocking_send(T v) const {
    state& s = checked("blocking_send");
    detail::channel_parker parker(true, detail::channel_parker::claimants::single);
    detail::channel_waiter w;
    w.parker = &parker;
    channel_status status = s.send_or_queue(v, &w);
    if (status == channel_status::full) {
      const detail::blocking_section blocked;
      parker.park();
      status = w.closed ? channel_status::closed : channel_status::ok;
    }
    if (status == channel_status::closed) {
      throw_closed("blocking_send");
    }
  }
  /// Receives from a plain thread, blocking it until a value comes (std::nullopt once closed and
  /// drained).
  std::optional<T> blocking_receive() const {
    state& s = checked("blocking_receive");
    detail::channel_parker parker(true, detail::channel_parker::claimants::single);
    detail::channel_waiter w;
    w.parker = &parker;
    std::optional<T> out;
    if (s.receive_or_queue(out, &w) == channel_status::empty) {
      const detail::blocking_section blocked;
      parker.park();
    }
    return out;
  }

  /// Never wait. try_send moves from v only when it returns ok.
  channel_status try_send(T&& v) const { return try_send_value(v); }
  /// Sends a copy of v if that needs no waiting; otherwise reports why not (full or closed).
  channel_status try_send(const T& v) const {
    T copy(v);
    return try_send_value(copy);
  }
  /// The value, or nothing when none is ready (see the other form to tell
  /// an empty channel from a closed one).
  std::optional<T> try_receive() const {
    std::optional<T> out;
    try_receive_into(out, "try_receive");
    return out;
  }
  /// ok (out assigned), empty or closed.
  channel_status try_receive(T& out) const {
    std::optional<T> got;
    const channel_status s = try_receive_into(got, "try_receive");
    if (got) {
      out = std::move(*got);
    }
    return s;
  }

  /// Batch forms (libcsp's pushm / popm), each under one acquisition of the
  /// lock. try_send_n moves values from first, first + 1, ... while they can
  /// be sent now, and returns how many were (fewer than n when the channel
  /// fills up or is closed).
  template <detail::iterator_to<T> It>
  std::size_t try_send_n(It first, std::size_t n) const {
    state& s = checked("try_send_n");
    std::size_t sent = 0;
    detail::wake_list woken;  // also when a later value throws: those served must wake
    std::lock_guard guard(s);
    for (; sent < n; ++sent, ++first) {
      detail::channel_waiter* to_wake = nullptr;
      if (s.try_send_locked(*first, to_wake) != channel_status::ok) {
        break;  // *first was not moved from
      }
      woken.add(to_wake);
    }
    return sent;
  }
  /// Receives up to max values that are ready now into out; returns how many.
  template <detail::output_iterator_for<T> Out>
  std::size_t try_receive_n(Out out, std::size_t max) const {
    state& s = checked("try_receive_n");
    std::size_t received = 0;
    // Values are taken under the lock a batch at a time, and written to
    // out (user code, which may throw) after it is released and the
    // senders served are woken. If writing throws, the values of that batch
    // not yet written are destroyed.
    constexpr std::size_t batch = 32;
    std::array<std::optional<T>, batch> taken;
    bool more = true;
    while (more && received < max) {
      std::size_t n = 0;
      {
        detail::wake_list woken;
        std::lock_guard guard(s);
        for (; n < batch && received + n < max; ++n) {
          detail::channel_waiter* to_wake = nullptr;
          if (s.try_receive_locked(taken[n], to_wake) != channel_status::ok) {
            more = false;
            break;
          }
          woken.add(to_wake);
        }
      }
      for (std::size_t i = 0; i < n; ++i) {
        *out = std::move(*taken[i]);
        ++out;
        taken[i].reset();
        ++received;
      }
    }
    return received;
  }

  /// co_await ch.send_n(first, n): sends all n values, batching what fits
  /// and waiting when the channel is full. Throws channel_closed (having sent
  /// a prefix) if it is closed first.
  template <detail::iterator_to<T> It>
  [[nodiscard]] task<> send_n(It first, std::size_t n) const {
    checked("send_n");
    return send_n_in(*this, first, n);  // the frame keeps its own handle
  }
  /// co_await ch.receive_n(out, max): waits for at least one value, then
  /// takes what else is ready, up to max; returns how many (0 once the
  /// channel is closed and drained, or for max == 0).
  template <detail::output_iterator_for<T> Out>
  [[nodiscard]] task<std::size_t> receive_n(Out out, std::size_t max) const {
    checked("receive_n");
    return receive_n_from(*this, out, max);
  }

 private:
  friend detail::channel_access;

  state& checked(const char* operation) const {
    if (state_ == nullptr) [[unlikely]] {
      throw_null(operation);
    }
    return *state_;
  }

  [[noreturn]] FJORD_COLD static void throw_null(const char* operation) {
    throw std::logic_error(std::string("fjord::channel::") + operation +
                           ": the channel handle is null (default-constructed or moved-from)");
  }

  [[noreturn]] static void throw_closed(const char* operation) {
    throw channel_closed(std::string("fjord::channel::") + operation +
                         ": the channel is closed; the value was not sent");
  }

  channel_status try_send_value(T& v) const {
    return checked("try_send").send_or_queue(v, nullptr);
  }

  channel_status try_receive_into(std::optional<T>& out, const char* operation) const {
    return checked(operation).receive_or_queue(out, nullptr);
  }

  template <class It>
  static task<> send_n_in(channel self, It first, std::size_t n) {
    while (n != 0) {
      const std::size_t k = self.try_send_n(first, n);
      std::advance(first, k);
      n -= k;
      if (n != 0) {
        co_await self.send(std::move(*first));
        ++first;
        --n;
      }
    }
  }

  template <class Out>
  static task<std::size_t> receive_n_from(channel self, Out out, std::size_t max) {
    if (max == 0) {
      co_return 0;
    }
    std::optional<T> first = co_await self.receive();
    if (!first) {
      co_return 0;
    }
    *out = std::move(*first);
    ++out;
    co_return 1 + self.try_receive_n(out, max - 1);
  }

  state* state_ = nullptr;
};

/// What send(v) returns: co_await it to send.
template <class T>
class [[nodiscard]] channel<T>::send_awaiter {
 public:
  /// Coroutine protocol: made by send().
  send_awaiter(const channel& c, T v) noexcept : state_(*c.state_), value_(std::move(v)) {}
  send_awaiter(const send_awaiter&) = delete;
  send_awaiter& operator=(const send_awaiter&) = delete;

  /// Coroutine protocol: true when the value went straight into the channel's lock-free buffer.
  bool await_ready() noexcept { return state_.try_send_fast(value_); }
  /// Coroutine protocol: sends, or queues the coroutine until a receiver takes the value.
  bool await_suspend(std::coroutine_handle<> h) {
    detail::channel_wait& wait = wait_.start();
    // Once queued (begin_single_wait() runs first, under the lock), a
    // receiver may resume us on another thread as soon as the lock is
    // released: nothing after that may touch the frame, so status_ is set
    // beforehand.
    status_ = channel_status::full;
    const channel_status s = state_.send_or_queue_locked(value_, &wait.waiter, h);
    if (s == channel_status::full) {
      return true;  // queued; the frame may be running elsewhere already
    }
    status_ = s;
    return false;
  }
  /// Coroutine protocol: throws fjord::channel_closed if the channel was closed before the value
  /// was taken.
  void await_resume() const {
    if (status_ == channel_status::closed ||
        (status_ == channel_status::full && wait_.get().waiter.closed)) {
      throw_closed("send");
    }
  }

 private:
  state& state_;
  T value_;
  channel_status status_ = channel_status::ok;
  detail::lazy_channel_wait wait_;
};

/// What receive() returns: co_await it for a value, or std::nullopt once the channel is closed and
/// drained.
template <class T>
class [[nodiscard]] channel<T>::receive_awaiter {
 public:
  /// Coroutine protocol: made by receive().
  explicit receive_awaiter(const channel& c) noexcept : state_(*c.state_) {}
  receive_awaiter(const receive_awaiter&) = delete;
  receive_awaiter& operator=(const receive_awaiter&) = delete;

  /// Coroutine protocol: true when a value came straight from the channel's lock-free buffer.
  bool await_ready() noexcept { return state_.try_receive_fast(value_); }
  /// Coroutine protocol: receives, or queues the coroutine until a sender or close() comes.
  bool await_suspend(std::coroutine_handle<> h) noexcept {
    detail::channel_wait& wait = wait_.start();
    // As in send_awaiter: resumable from the moment it is queued.
    return state_.receive_or_queue_locked(value_, &wait.waiter, h) == channel_status::empty;
  }
  /// Coroutine protocol: the value received, or std::nullopt once closed and drained.
  std::optional<T> await_resume() noexcept {
    // Field by field, not a copy of the whole optional: the value and its
    // flag were just stored separately (emplace), and a wider load of both
    // would wait for those stores to reach the cache instead of taking
    // them from the store buffer (about 15 cycles a receive).
    if (!value_.has_value()) {
      return std::nullopt;
    }
    return std::optional<T>(std::move(*value_));
  }

 private:
  state& state_;
  std::optional<T> value_;
  detail::lazy_channel_wait wait_;
};

}  // namespace fjord
