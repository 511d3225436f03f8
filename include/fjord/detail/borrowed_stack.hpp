#pragma once

#include <cstddef>
#include <cstdint>

namespace fjord::detail {

// A stack that threads take turns to run one function on (one at a time):
// a caller that joins a pool for one call (pool_core::call_as_guest) runs
// the call here, so it has the pool's stack_size, with a guard region
// below, whatever its own thread's stack is. The switch is a call on
// another stack pointer and back (no context is saved: the function
// returns normally), so it costs a few instructions; exceptions must not
// leave the function (it is noexcept), and unwinders see through the switch
// by its CFI. Only where fjord has the switch (x86-64 ELF); elsewhere
// `supported` is false and callers keep to their own stacks.
class borrowed_stack {
 public:
#if defined(__x86_64__) && defined(__ELF__)
  static constexpr bool supported = true;
#else
  static constexpr bool supported = false;
#endif

  explicit borrowed_stack(std::size_t size) noexcept : size_(size) {}
  ~borrowed_stack();
  borrowed_stack(const borrowed_stack&) = delete;
  borrowed_stack& operator=(const borrowed_stack&) = delete;

  // Maps the stack on first use (by the thread that holds it); false when
  // the system refuses the mapping, or the switch is not supported.
  bool ready() noexcept;

  // Runs fn(arg) on this stack, on the calling thread. After ready().
  void run(void (*fn)(void*) noexcept, void* arg) noexcept;

  // The usable range: [low(), high()).
  std::uintptr_t low() const noexcept {
    return reinterpret_cast<std::uintptr_t>(base_) + guard_;
  }
  std::uintptr_t high() const noexcept {
    return low() + size_;
  }

 private:
  std::size_t size_;
  std::size_t guard_ = 0;
  void* base_ = nullptr;  // the mapping: guard, then the stack
};

}  // namespace fjord::detail
