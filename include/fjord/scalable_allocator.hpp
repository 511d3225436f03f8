#pragma once

#include <cstddef>
#include <limits>
#include <new>
#include <type_traits>

#include "fjord/scalable_memory.hpp"

namespace fjord {

// A standard allocator over fjord's scalable allocator: every instance can
// free what any other allocated, from any thread.
template <class T>
class scalable_allocator {
 public:
  using value_type = T;
  using is_always_equal = std::true_type;
  using propagate_on_container_move_assignment = std::true_type;

  constexpr scalable_allocator() noexcept = default;
  template <class U>
  constexpr explicit(false) scalable_allocator(const scalable_allocator<U>& /*other*/) noexcept {}

  // Throws std::bad_array_new_length if n objects of T do not fit in
  // size_t, std::bad_alloc when memory runs out.
  [[nodiscard]] T* allocate(std::size_t n) {
    if (n > std::numeric_limits<std::size_t>::max() / sizeof(T)) {
      throw std::bad_array_new_length();
    }
    if constexpr (alignof(T) <= __STDCPP_DEFAULT_NEW_ALIGNMENT__) {
      return static_cast<T*>(scalable_allocate(n * sizeof(T)));
    } else {
      return static_cast<T*>(scalable_allocate(n * sizeof(T), alignof(T)));
    }
  }

  void deallocate(T* p, std::size_t /*n*/) noexcept { scalable_deallocate(p); }

  template <class U>
  constexpr bool operator==(const scalable_allocator<U>& /*other*/) const noexcept {
    return true;
  }
};

}  // namespace fjord
