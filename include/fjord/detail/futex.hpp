#pragma once

#include <cstdint>

#include "fjord/detail/chrono.hpp"

namespace fjord::detail {

// Thin wrappers over the Linux futex on a 32-bit atomic word. wake may be
// called after the word's owner has been freed: the kernel only hashes the
// address, so at worst an unrelated waiter wakes spuriously, which every
// waiter in fjord tolerates.

// word is the address of a 32-bit atomic (or the low half of a 64-bit one).
// Sleeps while *word == expected (returns at once otherwise, or spuriously).
void futex_wait(const void* word, std::uint32_t expected) noexcept;

// As futex_wait, but gives up after timeout. Returns false on timeout.
bool futex_wait_for(const void* word, std::uint32_t expected,
                    std::chrono::nanoseconds timeout) noexcept;

void futex_wake_one(const void* word) noexcept;
void futex_wake_all(const void* word) noexcept;

}  // namespace fjord::detail
