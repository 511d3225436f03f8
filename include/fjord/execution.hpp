#pragma once

#include <cstddef>
#include <stdexcept>
#include <type_traits>

namespace fjord {

class pool;

// Execution policies for fjord's algorithms, in the places std's go:
// fjord::reduce(fjord::par, first, last) reads as std::reduce(std::execution::par, ...).

/// Runs the algorithm on the calling thread, in order (the std algorithm).
class sequenced_policy {};

/// Runs the algorithm on a pool. By default the range is split adaptively: the
/// caller first runs a short prefix alone (so a small input costs about what
/// the sequential loop costs), then the rest is split only as far as idle
/// workers take pieces. The builders below return modified copies.
class parallel_policy {
 public:
  constexpr parallel_policy() = default;

  /// Uses p instead of the current pool (or fjord::default_pool() off a
  /// pool): the parallel part runs on p's workers, while the prefix (and a
  /// small input entirely) still runs on the calling thread.
  [[nodiscard]] constexpr parallel_policy on(pool& p) const noexcept {
    parallel_policy copy = *this;
    copy.pool_ = &p;
    return copy;
  }

  /// Splits every range down to pieces of at most `elements` (TBB's
  /// simple_partitioner, cfsched's grain). Throws std::invalid_argument on 0.
  [[nodiscard]] constexpr parallel_policy with_grain(std::size_t elements) const {
    if (elements == 0) {
      throw std::invalid_argument(
          "fjord::parallel_policy::with_grain: the grain must be at least 1 "
          "element, got 0");
    }
    parallel_policy copy = *this;
    copy.grain_ = elements;
    return copy;
  }

  /// Reductions and scans combine in an order fixed by the input size (and the
  /// grain), never by timing or the worker count, so floating-point results
  /// are bit-identical on any pool.
  [[nodiscard]] constexpr parallel_policy deterministic() const noexcept {
    parallel_policy copy = *this;
    copy.deterministic_ = true;
    return copy;
  }

  /// The pool to run on (nullptr: the caller's pool, else the default pool).
  constexpr pool* target() const noexcept { return pool_; }
  /// Elements per piece (0: adaptive splitting).
  constexpr std::size_t grain() const noexcept { return grain_; }  // 0: adaptive
  /// Whether reductions combine in a fixed order (the same result on any number of workers).
  constexpr bool is_deterministic() const noexcept { return deterministic_; }

 private:
  pool* pool_ = nullptr;
  std::size_t grain_ = 0;
  bool deterministic_ = false;
};

/// Run on the calling thread, in order.
inline constexpr sequenced_policy seq{};
/// Run on a pool (the calling worker's, else the default pool), adaptively split.
inline constexpr parallel_policy par{};

template <class T>
struct is_execution_policy : std::false_type {};
template <>
struct is_execution_policy<sequenced_policy> : std::true_type {};
template <>
struct is_execution_policy<parallel_policy> : std::true_type {};

/// Whether T (cv and references removed) is one of fjord's execution policies.
template <class T>
inline constexpr bool is_execution_policy_v = is_execution_policy<std::remove_cvref_t<T>>::value;

template <class T>
concept execution_policy = is_execution_policy_v<T>;

namespace detail {

// The algorithms take either policy and call the std algorithm for seq.
template <class Policy>
inline constexpr bool is_sequenced_v =
    std::is_same_v<std::remove_cvref_t<Policy>, sequenced_policy>;

}  // namespace detail

}  // namespace fjord
