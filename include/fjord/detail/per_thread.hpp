#pragma once

#include <type_traits>

namespace fjord::detail {

// One T per thread, made on first use and destroyed at thread exit, with a
// flag that stays readable after that. thread_local destructors run in an
// unspecified order, so another one (a late post, a late free, a frame
// destroyed by a static's destructor) may reach an allocator whose
// per-thread cache is already gone: it must then take the allocator's
// thread-less path. The flag is a thread_local of its own and trivially
// destructible (reading a destroyed object would be undefined); it is set
// before T's destructor runs, so whatever T's own clean-up calls back into
// sees it as well. The frame allocator, the job recycler, the submission
// lanes and the scalable allocator keep their per-thread state this way.
template <class T>
class per_thread {
 public:
  // The calling thread's T, made on first use; nullptr once the thread's
  // exit has begun destroying it.
  static T* get() noexcept(std::is_nothrow_default_constructible_v<T>) {
    if (destroyed) [[unlikely]] {
      return nullptr;
    }
    return &instance.value;
  }

  // Whether the calling thread's T was destroyed (or is being destroyed).
  static bool gone() noexcept { return destroyed; }

 private:
  struct holder {
    T value;
    // Runs before value's destructor.
    ~holder() { destroyed = true; }
  };
  static inline constinit thread_local bool destroyed = false;
  static inline thread_local holder instance;
};

}  // namespace fjord::detail
