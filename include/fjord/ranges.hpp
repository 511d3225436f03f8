#pragma once

#include <functional>
#include <iterator>
#include <ranges>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>

#include "fjord/copy_if.hpp"
#include "fjord/count.hpp"
#include "fjord/execution.hpp"
#include "fjord/fill.hpp"
#include "fjord/find.hpp"
#include "fjord/for_each.hpp"
#include "fjord/minmax_element.hpp"
#include "fjord/reduce.hpp"
#include "fjord/scan.hpp"
#include "fjord/sort.hpp"
#include "fjord/transform.hpp"

/// The parallel algorithms over ranges, as std::ranges gives the sequential
/// ones: fjord::ranges::sort(fjord::par, v) for fjord::sort(fjord::par,
/// v.begin(), v.end()). A range must be random-access and sized (a vector,
/// an array, a span, a deque, a views::transform of one, ...). Algorithms that
/// compare or test elements take a projection, as std::ranges' do. An
/// algorithm that returns a position returns std::ranges::dangling when r
/// is a temporary that is not a borrowed range (a position in it would
/// outlive it), as std::ranges' do.
namespace fjord::ranges {

/// What the range algorithms accept.
template <class R>
concept parallel_range = std::ranges::random_access_range<R> && std::ranges::sized_range<R>;

namespace detail {

// [first, last) as iterators of one type (the range's end may be a
// sentinel of another type).
template <parallel_range R>
auto bounds(R& r) {
  auto first = std::ranges::begin(r);
  return std::pair{first, first + std::ranges::distance(r)};
}

// Throws std::invalid_argument naming both lengths when r2 is shorter than
// r1 (the two-range reductions read r2 as far as r1 goes).
template <class R1, class R2>
void check_second_length(R1& r1, R2& r2, const char* algorithm) {
  const auto n1 = static_cast<long long>(std::ranges::distance(r1));
  const auto n2 = static_cast<long long>(std::ranges::distance(r2));
  if (n2 < n1) {
    throw std::invalid_argument(std::string(algorithm) + ": the second range has " +
                                std::to_string(n2) + " elements, fewer than the first's " +
                                std::to_string(n1));
  }
}

// pred(proj(x)), through std::invoke (so pred may be a pointer to member,
// as std::ranges allows).
template <class Pred, class Proj>
auto projected_test(Pred& pred, Proj& proj) {
  if constexpr (std::is_same_v<Proj, std::identity>) {
    return std::ref(pred);
  } else {
    return [&pred, &proj](auto&& x) -> bool {
      return std::invoke(pred, std::invoke(proj, std::forward<decltype(x)>(x)));
    };
  }
}

// std::ranges::less and greater as std's, so the integer and string radix
// sorts see a comparison they know.
template <class Compare>
auto plain_comparison(Compare& comp) {
  if constexpr (std::is_same_v<Compare, std::ranges::less>) {
    return std::less<>();
  } else if constexpr (std::is_same_v<Compare, std::ranges::greater>) {
    return std::greater<>();
  } else if constexpr (std::is_member_pointer_v<Compare>) {
    return std::ref(comp);  // called through std::invoke
  } else {
    return comp;  // by type, so std::less<> and friends still pick the radix sorts
  }
}

// comp(proj(a), proj(b)); a plain comparison when proj is the identity.
template <class Compare, class Proj>
auto projected_comparison(Compare& comp, Proj& proj) {
  if constexpr (std::is_same_v<Proj, std::identity>) {
    return plain_comparison(comp);
  } else {
    return [&comp, &proj](auto&& a, auto&& b) -> bool {
      return std::invoke(comp, std::invoke(proj, std::forward<decltype(a)>(a)),
                         std::invoke(proj, std::forward<decltype(b)>(b)));
    };
  }
}

}  // namespace detail

/// fjord::for_each over r, calling f(proj(x)) for each element x.
template <execution_policy Policy, parallel_range R, class F, class Proj = std::identity>
void for_each(Policy&& policy, R&& r, F f, Proj proj = {}) {
  const auto [first, last] = detail::bounds(r);
  if constexpr (std::is_same_v<Proj, std::identity>) {
    fjord::for_each(policy, first, last, std::ref(f));
  } else {
    fjord::for_each(policy, first, last, [&](auto&& x) {
      std::invoke(f, std::invoke(proj, std::forward<decltype(x)>(x)));
    });
  }
}

/// fjord::sort over r by comp(proj(a), proj(b)); returns r's end.
template <execution_policy Policy, parallel_range R, class Compare = std::ranges::less,
          class Proj = std::identity>
std::ranges::borrowed_iterator_t<R> sort(Policy&& policy, R&& r, Compare comp = {},
                                         Proj proj = {}) {
  const auto [first, last] = detail::bounds(r);
  fjord::sort(policy, first, last, detail::projected_comparison(comp, proj));
  return std::ranges::borrowed_iterator_t<R>{last};
}

/// fjord::stable_sort over r by comp(proj(a), proj(b)); returns r's end.
template <execution_policy Policy, parallel_range R, class Compare = std::ranges::less,
          class Proj = std::identity>
std::ranges::borrowed_iterator_t<R> stable_sort(Policy&& policy, R&& r, Compare comp = {},
                                                Proj proj = {}) {
  const auto [first, last] = detail::bounds(r);
  fjord::stable_sort(policy, first, last, detail::projected_comparison(comp, proj));
  return std::ranges::borrowed_iterator_t<R>{last};
}

/// The first element x of r with pred(proj(x)), or r's end.
template <execution_policy Policy, parallel_range R, class Pred, class Proj = std::identity>
std::ranges::borrowed_iterator_t<R> find_if(Policy&& policy, R&& r, Pred pred, Proj proj = {}) {
  const auto [first, last] = detail::bounds(r);
  return std::ranges::borrowed_iterator_t<R>{
      fjord::find_if(policy, first, last, detail::projected_test(pred, proj))};
}

/// The first element x of r without pred(proj(x)), or r's end.
template <execution_policy Policy, parallel_range R, class Pred, class Proj = std::identity>
std::ranges::borrowed_iterator_t<R> find_if_not(Policy&& policy, R&& r, Pred pred, Proj proj = {}) {
  auto fails = [&](auto&& x) -> bool { return !std::invoke(pred, std::forward<decltype(x)>(x)); };
  return ranges::find_if(policy, std::forward<R>(r), fails, std::move(proj));
}

/// The first element x of r with proj(x) == value, or r's end.
template <execution_policy Policy, parallel_range R, class T, class Proj = std::identity>
std::ranges::borrowed_iterator_t<R> find(Policy&& policy, R&& r, const T& value, Proj proj = {}) {
  auto equal = [&](auto&& x) -> bool { return x == value; };
  return ranges::find_if(policy, std::forward<R>(r), equal, std::move(proj));
}

/// Whether pred(proj(x)) holds for some element x of r; stops early.
template <execution_policy Policy, parallel_range R, class Pred, class Proj = std::identity>
bool any_of(Policy&& policy, R&& r, Pred pred, Proj proj = {}) {
  const auto [first, last] = detail::bounds(r);
  return fjord::any_of(policy, first, last, detail::projected_test(pred, proj));
}

/// Whether pred(proj(x)) holds for every element x of r; stops early.
template <execution_policy Policy, parallel_range R, class Pred, class Proj = std::identity>
bool all_of(Policy&& policy, R&& r, Pred pred, Proj proj = {}) {
  const auto [first, last] = detail::bounds(r);
  return fjord::all_of(policy, first, last, detail::projected_test(pred, proj));
}

/// Whether pred(proj(x)) holds for no element x of r; stops early.
template <execution_policy Policy, parallel_range R, class Pred, class Proj = std::identity>
bool none_of(Policy&& policy, R&& r, Pred pred, Proj proj = {}) {
  const auto [first, last] = detail::bounds(r);
  return fjord::none_of(policy, first, last, detail::projected_test(pred, proj));
}

/// How many elements x of r have pred(proj(x)).
template <execution_policy Policy, parallel_range R, class Pred, class Proj = std::identity>
std::ranges::range_difference_t<R> count_if(Policy&& policy, R&& r, Pred pred, Proj proj = {}) {
  const auto [first, last] = detail::bounds(r);
  return fjord::count_if(policy, first, last, detail::projected_test(pred, proj));
}

/// How many elements x of r have proj(x) == value.
template <execution_policy Policy, parallel_range R, class T, class Proj = std::identity>
std::ranges::range_difference_t<R> count(Policy&& policy, R&& r, const T& value, Proj proj = {}) {
  auto equal = [&](auto&& x) -> bool { return x == value; };
  return ranges::count_if(policy, std::forward<R>(r), equal, std::move(proj));
}

/// The first smallest element by comp(proj(a), proj(b)), or r's end if r is empty.
template <execution_policy Policy, parallel_range R, class Compare = std::ranges::less,
          class Proj = std::identity>
std::ranges::borrowed_iterator_t<R> min_element(Policy&& policy, R&& r, Compare comp = {},
                                                Proj proj = {}) {
  const auto [first, last] = detail::bounds(r);
  return std::ranges::borrowed_iterator_t<R>{
      fjord::min_element(policy, first, last, detail::projected_comparison(comp, proj))};
}

/// The first largest element by comp(proj(a), proj(b)), or r's end if r is empty.
template <execution_policy Policy, parallel_range R, class Compare = std::ranges::less,
          class Proj = std::identity>
std::ranges::borrowed_iterator_t<R> max_element(Policy&& policy, R&& r, Compare comp = {},
                                                Proj proj = {}) {
  const auto [first, last] = detail::bounds(r);
  return std::ranges::borrowed_iterator_t<R>{
      fjord::max_element(policy, first, last, detail::projected_comparison(comp, proj))};
}

/// Assigns value to every element of r; returns r's end.
template <execution_policy Policy, parallel_range R, class T>
std::ranges::borrowed_iterator_t<R> fill(Policy&& policy, R&& r, const T& value) {
  const auto [first, last] = detail::bounds(r);
  fjord::fill(policy, first, last, value);
  return std::ranges::borrowed_iterator_t<R>{last};
}

/// Assigns gen() to every element of r (gen is called concurrently); returns r's end.
template <execution_policy Policy, parallel_range R, class Generator>
std::ranges::borrowed_iterator_t<R> generate(Policy&& policy, R&& r, Generator gen) {
  const auto [first, last] = detail::bounds(r);
  fjord::generate(policy, first, last, std::ref(gen));
  return std::ranges::borrowed_iterator_t<R>{last};
}

/// out[i] = op(proj(r[i])); returns the end of the output.
template <execution_policy Policy, parallel_range R, std::random_access_iterator Out, class UnaryOp,
          class Proj = std::identity>
Out transform(Policy&& policy, R&& r, Out out, UnaryOp op, Proj proj = {}) {
  const auto [first, last] = detail::bounds(r);
  if constexpr (std::is_same_v<Proj, std::identity>) {
    return fjord::transform(policy, first, last, out, std::ref(op));
  } else {
    return fjord::transform(policy, first, last, out, [&](auto&& x) {
      return std::invoke(op, std::invoke(proj, std::forward<decltype(x)>(x)));
    });
  }
}

/// out[i] = op(proj1(r1[i]), proj2(r2[i])) over the shorter of the two
/// ranges; returns the end of the output.
template <execution_policy Policy, parallel_range R1, parallel_range R2,
          std::random_access_iterator Out, class BinaryOp, class Proj1 = std::identity,
          class Proj2 = std::identity>
Out transform(Policy&& policy, R1&& r1, R2&& r2, Out out, BinaryOp op, Proj1 proj1 = {},
              Proj2 proj2 = {}) {
  auto [first1, last1] = detail::bounds(r1);
  const auto first2 = std::ranges::begin(r2);
  if (std::ranges::distance(r2) < last1 - first1) {
    last1 = first1 + std::ranges::distance(r2);
  }
  return fjord::transform(policy, first1, last1, first2, out, [&](auto&& a, auto&& b) {
    return std::invoke(op, std::invoke(proj1, std::forward<decltype(a)>(a)),
                       std::invoke(proj2, std::forward<decltype(b)>(b)));
  });
}

/// Copies the elements x of r with pred(proj(x)) to out, in order; returns
/// the end of what was written.
template <execution_policy Policy, parallel_range R, std::random_access_iterator Out, class Pred,
          class Proj = std::identity>
Out copy_if(Policy&& policy, R&& r, Out out, Pred pred, Proj proj = {}) {
  const auto [first, last] = detail::bounds(r);
  return fjord::copy_if(policy, first, last, out, detail::projected_test(pred, proj));
}

/// fjord::reduce over r: init op r[0] op ... (op associative; std::plus by default).
template <execution_policy Policy, parallel_range R, class T = std::ranges::range_value_t<R>,
          class Op = std::plus<>>
T reduce(Policy&& policy, R&& r, T init = T{}, Op op = {}) {
  const auto [first, last] = detail::bounds(r);
  return fjord::reduce(policy, first, last, std::move(init), std::move(op));
}

/// fjord::transform_reduce over r: init reduce transform(r[0]) reduce ...
template <execution_policy Policy, parallel_range R, class T, class Reduce, class Transform>
T transform_reduce(Policy&& policy, R&& r, T init, Reduce reduce, Transform transform) {
  const auto [first, last] = detail::bounds(r);
  return fjord::transform_reduce(policy, first, last, std::move(init), std::move(reduce),
                                 std::move(transform));
}

/// fjord::transform_reduce over two ranges (the length of r1; r2 must be at
/// least as long, or std::invalid_argument names both lengths):
/// init reduce transform(r1[0], r2[0]) reduce ...
template <execution_policy Policy, parallel_range R1, parallel_range R2, class T, class Reduce,
          class Transform>
T transform_reduce(Policy&& policy, R1&& r1, R2&& r2, T init, Reduce reduce, Transform transform) {
  const auto [first1, last1] = detail::bounds(r1);
  detail::check_second_length(r1, r2, "fjord::ranges::transform_reduce");
  return fjord::transform_reduce(policy, first1, last1, std::ranges::begin(r2), std::move(init),
                                 std::move(reduce), std::move(transform));
}

/// The inner product of two ranges: init + r1[0] * r2[0] + ... (r2 at least
/// as long as r1).
template <execution_policy Policy, parallel_range R1, parallel_range R2, class T>
T transform_reduce(Policy&& policy, R1&& r1, R2&& r2, T init) {
  return fjord::ranges::transform_reduce(policy, r1, r2, std::move(init), std::plus<>(),
                                         std::multiplies<>());
}

/// fjord::inclusive_scan of r into out (std::plus by default); returns the end of the output.
template <execution_policy Policy, parallel_range R, std::random_access_iterator Out,
          class Op = std::plus<>>
Out inclusive_scan(Policy&& policy, R&& r, Out out, Op op = {}) {
  const auto [first, last] = detail::bounds(r);
  return fjord::inclusive_scan(policy, first, last, out, std::move(op));
}

/// fjord::inclusive_scan of r into out, starting from init; returns the end of the output.
template <execution_policy Policy, parallel_range R, std::random_access_iterator Out, class Op,
          class T>
Out inclusive_scan(Policy&& policy, R&& r, Out out, Op op, T init) {
  const auto [first, last] = detail::bounds(r);
  return fjord::inclusive_scan(policy, first, last, out, std::move(op), std::move(init));
}

/// fjord::exclusive_scan of r into out, starting from init; returns the end of the output.
template <execution_policy Policy, parallel_range R, std::random_access_iterator Out, class T,
          class Op = std::plus<>>
Out exclusive_scan(Policy&& policy, R&& r, Out out, T init, Op op = {}) {
  const auto [first, last] = detail::bounds(r);
  return fjord::exclusive_scan(policy, first, last, out, std::move(init), std::move(op));
}

/// fjord::transform_inclusive_scan of r into out: the running op of
/// transform(r[i]); returns the end of the output.
template <execution_policy Policy, parallel_range R, std::random_access_iterator Out, class Op,
          class Transform>
Out transform_inclusive_scan(Policy&& policy, R&& r, Out out, Op op, Transform transform) {
  const auto [first, last] = detail::bounds(r);
  return fjord::transform_inclusive_scan(policy, first, last, out, std::move(op),
                                         std::move(transform));
}

/// The same, starting from init.
template <execution_policy Policy, parallel_range R, std::random_access_iterator Out, class Op,
          class Transform, class T>
Out transform_inclusive_scan(Policy&& policy, R&& r, Out out, Op op, Transform transform, T init) {
  const auto [first, last] = detail::bounds(r);
  return fjord::transform_inclusive_scan(policy, first, last, out, std::move(op),
                                         std::move(transform), std::move(init));
}

/// fjord::transform_exclusive_scan of r into out, starting from init;
/// returns the end of the output.
template <execution_policy Policy, parallel_range R, std::random_access_iterator Out, class T,
          class Op, class Transform>
Out transform_exclusive_scan(Policy&& policy, R&& r, Out out, T init, Op op, Transform transform) {
  const auto [first, last] = detail::bounds(r);
  return fjord::transform_exclusive_scan(policy, first, last, out, std::move(init), std::move(op),
                                         std::move(transform));
}

}  // namespace fjord::ranges
