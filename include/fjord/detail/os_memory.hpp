#pragma once

#include <cstddef>

namespace fjord::detail {

// Memory straight from the OS for the scalable allocator: mappings aligned
// to a power of two, given back whole, and pages of a live mapping given
// back while the mapping stays (MADV_DONTNEED). Under AddressSanitizer the
// mappings come from posix_memalign instead, so that LeakSanitizer scans
// them for pointers to other allocations. All three keep os_mapped_bytes.
void* os_map(std::size_t size, std::size_t alignment) noexcept;  // nullptr on failure
void os_unmap(void* p, std::size_t size) noexcept;
void os_decommit(void* p, std::size_t size) noexcept;
std::size_t os_mapped_bytes() noexcept;

}  // namespace fjord::detail
