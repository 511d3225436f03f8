#pragma once

#include <cstddef>
#include <limits>
#include <new>
#include <type_traits>

#include "fjord/scalable_memory.hpp"

namespace fjord {

/// A standard allocator over fjord's scalable allocator: every instance can
/// free what any other allocated, from any thread.
template <class T>
class scalable_allocator {
 public:
  /// The type allocated.
  using value_type = T;
  /// Every instance can free what any other allocated.
  using is_always_equal = std::true_type;
  /// Containers move their allocator with their contents.
  using propagate_on_container_move_assignment = std::true_type;

  constexpr scalable_allocator() noexcept = default;
  /// Rebinding: made from an allocator of another type.
  template <class U>
  constexpr explicit(false) scalable_allocator(const scalable_allocator<U>& /*other*/) noexcept {}

  /// Throws std::bad_array_new_length if n objects of T do not fit in
  /// size_t, std::bad_alloc when memory runs out.
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

  /// Frees memory from allocate(), on any thread.
  void deallocate(T* p, std::size_t /*n*/) noexcept { scalable_deallocate(p); }

  /// Always true: any instance frees what another allocated.
  template <class U>
  constexpr bool operator==(const scalable_allocator<U>& /*other*/) const noexcept {
    return true;
  }
};

}  // namespace fjord
