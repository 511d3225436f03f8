#pragma once

#include <cstddef>
#include <memory>
#include <new>
#include <utility>

#include "fjord/detail/frame_allocator.hpp"

namespace fjord::detail {

// A FIFO of T in a circular buffer that grows (doubling) on demand up to a
// limit, so a channel with a large capacity costs only what it holds. Not
// synchronised: the channel's lock guards it.
template <class T>
class value_ring {
 public:
  value_ring() noexcept = default;
  value_ring(const value_ring&) = delete;
  value_ring& operator=(const value_ring&) = delete;
  ~value_ring() {
    clear();
    release(data_, capacity_);
  }

  std::size_t size() const noexcept { return size_; }
  bool empty() const noexcept { return size_ == 0; }

  // Appends v (moved from only when it returns). Throws std::bad_alloc when
  // the buffer must grow and cannot.
  template <class U>
  void push_back(U&& v) {
    if (size_ == capacity_) {
      grow();
    }
    std::construct_at(data_ + index(size_), std::forward<U>(v));
    ++size_;
  }

  // Precondition: !empty().
  T pop_front() noexcept(std::is_nothrow_move_constructible_v<T>) {
    T* front = data_ + head_;
    T v(std::move(*front));
    std::destroy_at(front);
    head_ = index(1);
    --size_;
    return v;
  }

  void clear() noexcept {
    while (size_ != 0) {
      std::destroy_at(data_ + head_);
      head_ = index(1);
      --size_;
    }
  }

 private:
  std::size_t index(std::size_t offset) const noexcept {
    const std::size_t i = head_ + offset;
    return i >= capacity_ ? i - capacity_ : i;
  }

  void grow() {
    const std::size_t bigger = capacity_ == 0 ? 4 : capacity_ * 2;
    T* fresh = acquire(bigger);
    for (std::size_t i = 0; i < size_; ++i) {
      T* from = data_ + index(i);
      std::construct_at(fresh + i, std::move(*from));  // nothrow: required of T by channel
      std::destroy_at(from);
    }
    release(data_, capacity_);
    data_ = fresh;
    capacity_ = bigger;
    head_ = 0;
  }

  // Small buffers come from the per-thread frame caches (a channel per
  // process call is common), large ones from operator new.
  static T* acquire(std::size_t n) {
    if constexpr (alignof(T) <= alignof(std::max_align_t)) {
      if (n > static_cast<std::size_t>(-1) / sizeof(T)) {
        throw std::bad_alloc();
      }
      return static_cast<T*>(frame_allocator::allocate(n * sizeof(T)));
    } else {
      return std::allocator<T>().allocate(n);
    }
  }
  static void release(T* p, std::size_t n) noexcept {
    if (p == nullptr) {
      return;
    }
    if constexpr (alignof(T) <= alignof(std::max_align_t)) {
      frame_allocator::deallocate(p, n * sizeof(T));
    } else {
      std::allocator<T>().deallocate(p, n);
    }
  }
  T* data_ = nullptr;
  std::size_t capacity_ = 0;
  std::size_t head_ = 0;
  std::size_t size_ = 0;
};

}  // namespace fjord::detail
