#pragma once

#include <cstddef>
#include <memory_resource>

#include "fjord/scalable_memory.hpp"

namespace fjord {

/// fjord's scalable allocator as a polymorphic memory resource. Every
/// instance can free what any other allocated, so all compare equal.
class scalable_memory_resource final : public std::pmr::memory_resource {
 private:
  void* do_allocate(std::size_t bytes, std::size_t alignment) override {
    return scalable_allocate(bytes, alignment);
  }
  void do_deallocate(void* p, std::size_t /*bytes*/, std::size_t /*alignment*/) override {
    scalable_deallocate(p);
  }
  [[nodiscard]] bool do_is_equal(const std::pmr::memory_resource& other) const noexcept override {
    return dynamic_cast<const scalable_memory_resource*>(&other) != nullptr;
  }
};

/// The process's instance; never destroyed, so usable during static
/// destruction.
[[nodiscard]] std::pmr::memory_resource* scalable_resource() noexcept;

}  // namespace fjord
