#pragma once

#include <cstddef>
#include <optional>
#include <stop_token>
#include <utility>

#include "fjord/channel.hpp"
#include "fjord/channel_status.hpp"
#include "fjord/detail/channel_state.hpp"
#include "fjord/detail/channel_waiter.hpp"
#include "fjord/detail/chrono.hpp"
#include "fjord/detail/timer_service.hpp"

namespace fjord::detail {

// One case of a select. The select locks the channels of all its cases,
// polls them in random order (try_complete), and if none is ready arms
// them all (queues a waiter on each channel, arms the timer, registers the
// stop callback) and waits; afterwards it disarms them (under the locks
// again) and calls finish() on the case that won. See docs/channels.md.
class select_case {
 public:
  // The channel whose lock the case needs; nullptr for a case that is not
  // on a channel (or on a null one).
  channel_base* channel = nullptr;

  // The default case: taken when no other case is ready at once.
  virtual bool is_default() const noexcept { return false; }
  // Under the locks: completes the case now if it can (a waiter it served
  // goes to *to_wake, to be woken after unlocking).
  virtual bool try_complete(channel_waiter*& to_wake) = 0;
  // Under the locks, nothing being ready: wait on p as case `index`.
  virtual void arm(channel_parker& p, int index) = 0;
  // Under the locks, once the wait is over: stop waiting (harmless for the
  // case that won, and for one never armed).
  virtual void disarm() noexcept = 0;
  // After the select, on the case that won.
  virtual void finish() {}

 protected:
  select_case() = default;
  select_case(const select_case&) = default;
  select_case& operator=(const select_case&) = default;
  ~select_case() = default;
};

// Runs a select's first half (cases: n pointers; locks and order: scratch
// arrays of n). Returns false when a case completed at once (its index in
// *result), true when the caller must wait on the parker.
bool select_begin(select_case* const* cases, int n, channel_base** locks, int* order,
                  channel_parker& parker, int* result);
// The second half: after the wait (result < 0) disarms every case; then
// finishes the winner, and returns its index.
std::size_t select_end(select_case* const* cases, int n, channel_base** locks,
                       const channel_parker& parker, int result);

// What the two channel cases share: a handle of their channel (it lives
// while the select waits, even if every other handle goes meanwhile), and
// the waiter they queue in its senders or receivers.
template <class T>
class channel_case : public select_case {
 public:
  void disarm() noexcept override {
    if (state_ != nullptr) {
      (state_->*queue_).remove(waiter_);
    }
  }

 protected:
  channel_case(const fjord::channel<T>& c, channel_waiter_queue channel_base::*queue) noexcept
      : handle_(c), state_(channel_access::state(c)), queue_(queue) {
    channel = state_;
  }
  channel_case(channel_case&& o) noexcept
      : select_case(o), handle_(std::move(o.handle_)), state_(o.state_), queue_(o.queue_) {}
  channel_case& operator=(channel_case&&) = delete;
  ~channel_case() = default;

  // Under the lock: wait as case `index`, `slot` being the value to send or
  // the optional to receive into.
  void queue(channel_parker& p, int index, void* slot) noexcept {
    if (state_ != nullptr) {
      waiter_.parker = &p;
      waiter_.index = index;
      waiter_.slot = slot;
      waiter_.of_select = true;
      (state_->*queue_).push_back(waiter_);
    }
  }

  fjord::channel<T> handle_;
  channel_state<T>* state_;
  channel_waiter_queue channel_base::*queue_;
  channel_waiter waiter_;
};

template <class T>
class receive_case final : public channel_case<T> {
 public:
  // out is emptied here, outside any lock: after the select it holds a value
  // only if this case won and the channel was not closed.
  receive_case(const fjord::channel<T>& c, std::optional<T>& out) noexcept
      : channel_case<T>(c, &channel_base::receivers), out_(&out) {
    out.reset();
  }
  receive_case(receive_case&& o) noexcept : channel_case<T>(std::move(o)), out_(o.out_) {}
  receive_case& operator=(receive_case&&) = delete;
  ~receive_case() = default;

  bool try_complete(channel_waiter*& to_wake) override {
    if (this->state_ == nullptr) {
      return false;
    }
    switch (this->state_->try_receive_locked(*out_, to_wake)) {
      case channel_status::ok:
        return true;
      case channel_status::closed:
        out_->reset();
        return true;
      default:
        return false;
    }
  }
  void arm(channel_parker& p, int index) override { this->queue(p, index, out_); }
  void finish() override {
    if (this->waiter_.closed) {
      out_->reset();
    }
  }

 private:
  std::optional<T>* out_;
};

template <class T>
class send_case final : public channel_case<T> {
 public:
  send_case(const fjord::channel<T>& c, T v) noexcept
      : channel_case<T>(c, &channel_base::senders), value_(std::move(v)) {}
  send_case(send_case&& o) noexcept : channel_case<T>(std::move(o)), value_(std::move(o.value_)) {}
  send_case& operator=(send_case&&) = delete;
  ~send_case() = default;

  bool try_complete(channel_waiter*& to_wake) override {
    if (this->state_ == nullptr) {
      return false;
    }
    switch (this->state_->try_send_locked(value_, to_wake)) {
      case channel_status::ok:
        return true;
      case channel_status::closed:
        closed_ = true;
        return true;
      default:
        return false;
    }
  }
  void arm(channel_parker& p, int index) override { this->queue(p, index, &value_); }
  void finish() override {
    if (closed_ || this->waiter_.closed) {
      throw channel_closed(
          "fjord::select: send_to case on a closed channel; the value was not sent");
    }
  }

 private:
  T value_;
  bool closed_ = false;
};

// Ready once its time has come; waits on the timer service.
class timeout_case final : public select_case {
 public:
  explicit timeout_case(timer_service::clock::time_point deadline) noexcept {
    timer_.deadline = deadline;
  }
  timeout_case(timeout_case&& o) noexcept : select_case(o) { timer_.deadline = o.timer_.deadline; }
  timeout_case& operator=(timeout_case&&) = delete;
  ~timeout_case() = default;

  bool try_complete(channel_waiter*&) noexcept override {
    return timer_.deadline <= timer_service::clock::now();
  }
  void arm(channel_parker& p, int index) override;
  void disarm() noexcept override;

 private:
  struct timer : timer_service::entry {
    // Set once armed: disarm() touches the service only then.
    channel_parker* parker = nullptr;
    int index = 0;
  };
  static bool due(timer_service::entry& e) noexcept;
  static void fire(timer_service::entry& e) noexcept;

  timer timer_;
};

// Ready once a stop is requested on its token.
class stop_case final : public select_case {
 public:
  explicit stop_case(std::stop_token token) noexcept : token_(std::move(token)) {}
  stop_case(stop_case&& o) noexcept : select_case(o), token_(std::move(o.token_)) {}
  stop_case& operator=(stop_case&&) = delete;
  ~stop_case() = default;

  bool try_complete(channel_waiter*&) noexcept override { return token_.stop_requested(); }
  void arm(channel_parker& p, int index) override {
    parker_ = &p;
    index_ = index;
    on_stop_.emplace(token_, callback{this});  // may claim at once: wake() then only marks
  }
  void disarm() noexcept override {
    on_stop_.reset();  // waits for a callback running on another thread
  }

 private:
  struct callback {
    stop_case* self;
    void operator()() const noexcept {
      if (self->parker_->claim(self->index_)) {
        self->parker_->wake();
      }
    }
  };

  std::stop_token token_;
  channel_parker* parker_ = nullptr;
  int index_ = 0;
  std::optional<std::stop_callback<callback>> on_stop_;
};

class default_case final : public select_case {
 public:
  bool is_default() const noexcept override { return true; }
  bool try_complete(channel_waiter*&) noexcept override { return false; }
  void arm(channel_parker&, int) noexcept override {}
  void disarm() noexcept override {}
};

}  // namespace fjord::detail
