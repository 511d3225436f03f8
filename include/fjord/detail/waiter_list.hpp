#pragma once

#include <atomic>

#include "fjord/detail/resume_job.hpp"

namespace fjord::detail {

// A FIFO of waiting coroutines, linked through their jobs (no allocation).
// Not synchronised: each async primitive guards its list with its own mutex,
// and takes a waiter out before waking it (the wake reuses the link).
class waiter_list {
 public:
  bool empty() const noexcept { return head_ == nullptr; }

  void push_back(waiting_coroutine& w) noexcept {
    w.next().store(nullptr, std::memory_order_relaxed);
    if (tail_ == nullptr) {
      head_ = &w;
    } else {
      tail_->next().store(&w, std::memory_order_relaxed);
    }
    tail_ = &w;
  }

  waiting_coroutine* pop_front() noexcept {
    waiting_coroutine* w = head_;
    if (w != nullptr) {
      head_ = static_cast<waiting_coroutine*>(w->next().load(std::memory_order_relaxed));
      if (head_ == nullptr) {
        tail_ = nullptr;
      }
    }
    return w;
  }

  // Takes w out of the list if it is there (a canceled waiter); O(n).
  bool remove(waiting_coroutine& w) noexcept {
    waiting_coroutine* prev = nullptr;
    for (waiting_coroutine* c = head_; c != nullptr;
         c = static_cast<waiting_coroutine*>(c->next().load(std::memory_order_relaxed))) {
      if (c == &w) {
        auto* after = static_cast<waiting_coroutine*>(c->next().load(std::memory_order_relaxed));
        if (prev == nullptr) {
          head_ = after;
        } else {
          prev->next().store(after, std::memory_order_relaxed);
        }
        if (tail_ == c) {
          tail_ = prev;
        }
        return true;
      }
      prev = c;
    }
    return false;
  }

  // Takes the whole list; wake them with wake_all() once the lock is released.
  waiter_list take_all() noexcept {
    waiter_list all = *this;
    head_ = tail_ = nullptr;
    return all;
  }

  void wake_all() noexcept {
    while (waiting_coroutine* w = pop_front()) {
      w->wake();  // w may be gone after this
    }
  }

 private:
  waiting_coroutine* head_ = nullptr;
  waiting_coroutine* tail_ = nullptr;
};

}  // namespace fjord::detail
