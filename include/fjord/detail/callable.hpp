#pragma once

#include <concepts>
#include <type_traits>

namespace fjord::detail {

// Named constraints for the submission APIs. Named concepts also keep
// clang-format 14, which mangles `requires` clauses, out of the way. The two
// that need <ranges> or <stop_token> live beside their one user
// (callable_range.hpp, group_callable.hpp), so that join.hpp, which includes
// this header, pays for neither.

// A callable invoked in place, as an lvalue (join, invoke).
template <class F>
concept lvalue_callable = std::invocable<F&>;

// How a pool holds a submitted callable: decayed, called as an lvalue.
template <class F>
using stored_ref_t = std::decay_t<F>&;

// A callable a pool can store (decayed) and call with no arguments.
template <class F>
concept storable_callable = std::invocable<stored_ref_t<F>>;

// What fjord::go runs: f and its arguments, decayed (the process owns
// copies), called as rvalues.
template <class F, class... Args>
concept process_callable = std::invocable<std::decay_t<F>, std::decay_t<Args>...>;

// A value that a T can be made from (a select's send_to case).
template <class U, class T>
concept value_for = std::constructible_from<T, U&&>;

// parallel_for's body: called with each index.
template <class F, class I>
concept index_function = std::invocable<F&, I>;

// parallel_reduce's piece: (piece_first, piece_last, identity) -> T.
template <class F, class I, class T>
concept piece_function = std::invocable<F&, I, I, T>;

// parallel_reduce's combine: (left, right) -> T.
template <class F, class T>
concept combine_function = std::invocable<F&, T, T>;

}  // namespace fjord::detail
