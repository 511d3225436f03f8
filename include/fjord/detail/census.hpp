#pragma once

#include <atomic>
#include <cstdint>

#include "fjord/detail/assert.hpp"

namespace fjord::detail {

// How many of a pool's workers are in each state of the sleep protocol
// (src/sleep.cpp; argued in docs/scheduler.md): a value read from a census.
class census_count {
 public:
  explicit census_count(std::uint64_t word) noexcept : word_(word) {}

  // Workers registered to take private jobs: deque owners fence while any
  // exist.
  std::uint32_t thieves() const noexcept { return static_cast<std::uint32_t>(word_ & 0xFFFFu); }
  // Workers looking for work: a pusher wakes nobody while any exist, since
  // one of them will find its job.
  std::uint32_t searchers() const noexcept {
    return static_cast<std::uint32_t>((word_ >> 16) & 0xFFFFu);
  }
  // Parked workers, and the phantoms of blocked ones (docs/scheduler.md,
  // "Blocking").
  std::uint32_t sleepers() const noexcept { return static_cast<std::uint32_t>(word_ >> 32); }
  // What a pusher asks: is there a sleeper and nobody searching to take
  // new work instead?
  // (On the bits directly: one test instruction each on the push path.)
  bool should_wake() const noexcept { return (word_ & searcher_bits) == 0 && (word_ >> 32) != 0; }
  // Is any worker searching or asleep, so that a job pushed now may be
  // taken by another (the pusher shares it)?
  bool anyone_idle() const noexcept { return (word_ & ~std::uint64_t{0xFFFFu}) != 0; }
  // Nobody searches and one worker sleeps (or is a phantom).
  bool one_sleeper_alone() const noexcept {
    return (word_ & ~std::uint64_t{0xFFFFu}) == (std::uint64_t{1} << 32);
  }

 private:
  static constexpr std::uint64_t searcher_bits = std::uint64_t{0xFFFFu} << 16;
  std::uint64_t word_;
};

// The census of a pool: one word, so that moving between two states (a
// sleeper woken as a searcher) is one read-modify-write and no reader sees
// a worker in neither. Bits 0-15 count thieves, 16-31 searchers, 32-63
// sleepers, so up to 65,535 threads per pool (max_threads is checked
// against that). Each update returns nothing but asserts on the count it
// changed: an underflow or overflow would silently corrupt a neighbour.
//
// The memory orderings are the protocol's, argued where each update is
// made; the updates themselves are seq_cst read-modify-writes (they are one
// half of Dekker-style handshakes with pushers) except where a caller
// passes a weaker order with its reason.
class census {
 public:
  static constexpr std::uint32_t max_threads = 0xFFFFu;

  census_count load(std::memory_order order) const noexcept {
    return census_count(word_.load(order));
  }

  void add_searcher() noexcept {
    const census_count old(word_.fetch_add(searcher_one, std::memory_order_seq_cst));
    FJORD_ASSERT(old.searchers() < max_threads, "census: searcher count overflows");
  }

  // A thief registers (then fences heavily) before it takes a stalled
  // owner's private job and deregisters right after (docs/scheduler.md,
  // "Stalled owners").
  void add_thief() noexcept {
    const census_count old(word_.fetch_add(thief_one, std::memory_order_seq_cst));
    FJORD_ASSERT(old.thieves() < max_threads, "census: thief count overflows");
  }
  void remove_thief() noexcept {
    const census_count old(word_.fetch_sub(thief_one, std::memory_order_seq_cst));
    FJORD_ASSERT(old.thieves() != 0, "census: thief count underflows");
  }
  // A searcher stops searching; returns the census as it was just before.
  census_count remove_searcher() noexcept {
    const census_count old(word_.fetch_sub(searcher_one, std::memory_order_seq_cst));
    FJORD_ASSERT(old.searchers() != 0, "census: searcher count underflows");
    return old;
  }
  void add_sleeper() noexcept {
    const census_count old(word_.fetch_add(sleeper_one, std::memory_order_seq_cst));
    FJORD_ASSERT(old.sleepers() < max_threads, "census: sleeper count overflows");
  }

  void remove_sleeper(std::memory_order order = std::memory_order_seq_cst) noexcept {
    const census_count old(word_.fetch_sub(sleeper_one, order));
    FJORD_ASSERT(old.sleepers() != 0, "census: sleeper count underflows");
  }

  // A sleeper (or phantom) becomes a searcher in one step (mod 2^64: the
  // sleeper bits lose one, the searcher bits gain one).
  void sleeper_to_searcher() noexcept {
    const census_count old(word_.fetch_add(searcher_one - sleeper_one, std::memory_order_seq_cst));
    FJORD_ASSERT(old.sleepers() != 0, "census: waking a sleeper the census does not count");
    FJORD_ASSERT(old.searchers() < max_threads, "census: searcher count overflows");
  }

 private:
  static constexpr std::uint64_t thief_one = 1;
  static constexpr std::uint64_t searcher_one = std::uint64_t{1} << 16;
  static constexpr std::uint64_t sleeper_one = std::uint64_t{1} << 32;

  std::atomic<std::uint64_t> word_{0};
};

}  // namespace fjord::detail
