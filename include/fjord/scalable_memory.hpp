#pragma once

#include <chrono>
#include <cstddef>

namespace fjord {

// fjord's scalable allocator, the functions beneath scalable_allocator<T>
// and scalable_resource(). Each thread, worker or not, allocates from a
// heap of its own without locks; a block may be freed by any thread (a
// block freed by another thread goes back to its heap through one atomic
// operation). Blocks up to 512 KiB come from size classes; larger ones get
// a mapping of their own, returned to the OS when freed, and start at a
// page boundary so that two large buffers never sit at different offsets
// within a 4 KiB page. See docs/allocator.md.

/// At least `bytes` bytes aligned as operator new aligns (16 bytes); any
/// size, 0 included, gives a distinct block. Throws std::bad_alloc when the
/// OS has no memory or the size cannot be met.
[[nodiscard]] void* scalable_allocate(std::size_t bytes);
/// The same, aligned to `alignment`, which must be a power of two: any other
/// value throws std::invalid_argument naming it.
[[nodiscard]] void* scalable_allocate(std::size_t bytes, std::size_t alignment);

/// Frees a block from scalable_allocate, from any thread; nullptr is ignored.
void scalable_deallocate(void* p) noexcept;

/// The bytes the block at p may use (at least what was asked for).
[[nodiscard]] std::size_t scalable_usable_size(const void* p) noexcept;

/// What the scalable allocator holds, process-wide (scalable_memory_statistics()).
/// fjord's coroutine frames come from it too (past per-thread caches that
/// keep freed frames for reuse), so these figures include them.
struct scalable_memory_stats {
  /// Usable bytes of the blocks in use. A block freed by another thread
  /// than the one whose heap it came from counts until that heap takes it
  /// back: when it next runs short of blocks of that size, before it parks
  /// (a pool worker), when its thread calls scalable_memory_release() or
  /// exits, or (for a heap whose thread has exited) at once.
  std::size_t bytes_in_use = 0;
  /// Address space the allocator has mapped from the OS (segments and large
  /// blocks, with the padding an over-aligned large block needs); pages given
  /// back with MADV_DONTNEED inside a kept mapping still count.
  std::size_t bytes_mapped = 0;
  /// Heaps ever made. A heap outlives its thread and the next thread that
  /// allocates adopts it, so threads that come one after another share one.
  std::size_t heaps = 0;
  /// Of bytes_mapped: empty segments (4 MiB each) kept committed by heaps
  /// for reuse until the purge delay passes (scalable_memory_set_purge_delay).
  /// Each figure is read on its own, so under concurrent frees the set is
  /// not one instant's.
  std::size_t bytes_cached = 0;
};

/// What the scalable allocator holds right now, process-wide.
[[nodiscard]] scalable_memory_stats scalable_memory_statistics() noexcept;

/// Gives back to the OS what the calling thread's heap holds but does not
/// use: spans with no live block, its cached and spare segments, and the
/// free pages of its segments. A thread gives everything back on its own
/// when it exits, and a pool worker gives back its cached segments when it
/// goes idle.
void scalable_memory_release() noexcept;

/// How long a segment whose blocks have all been freed stays committed in
/// its heap for reuse before it goes back to the OS: one second unless set.
/// A heap gives back its expired segments when its thread next needs a
/// fresh span or empties a segment, so a thread that stops doing either
/// keeps them until it does, calls scalable_memory_release(), or exits; a
/// pool worker gives them all back when it goes idle. All heaps together
/// keep at most 1 GiB so. Zero gives each segment back as soon as it is
/// empty (a heap still keeps one spare, decommitted). A
/// negative delay throws std::invalid_argument naming it; one too long for
/// a count of nanoseconds is kept as the longest that fits (about 292 years).
/// Process-wide; heaps see a change on their next slow path.
void scalable_memory_set_purge_delay(std::chrono::milliseconds delay);
/// The purge delay in effect.
[[nodiscard]] std::chrono::milliseconds scalable_memory_purge_delay() noexcept;

}  // namespace fjord
