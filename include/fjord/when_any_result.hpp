#pragma once

#include <cstddef>

namespace fjord {

/// The outcome of when_any over a range: which task finished first, and its
/// result.
template <class T>
struct when_any_result {
  /// Which task finished first (its position in the range).
  std::size_t index;
  /// Its result.
  T value;
};
/// when_any over tasks of void: only the index.
template <>
struct when_any_result<void> {
  /// Which task finished first (its position in the range).
  std::size_t index;
};

}  // namespace fjord
