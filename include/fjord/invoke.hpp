#pragma once

#include <concepts>
#include <tuple>
#include <type_traits>
#include <utility>

#include "fjord/join.hpp"

namespace fjord {

namespace detail {

template <class... Fs>
inline constexpr bool all_void_v = (std::is_void_v<std::invoke_result_t<Fs&>> && ...);

template <class... Fs>
using invoke_tuple_t = std::tuple<storable_t<std::invoke_result_t<Fs&>>...>;

// Splits the closures in halves and joins the halves, so the fork tree is
// balanced (depth log2 n) and the first thief takes half of the work.
template <std::size_t Lo, std::size_t Hi, class Tuple>
auto invoke_range(Tuple& fs) {
  if constexpr (Hi - Lo == 1) {
    auto& f = std::get<Lo>(fs);
    if constexpr (std::is_void_v<std::invoke_result_t<decltype(f)>>) {
      f();
      return std::tuple<std::monostate>{};
    } else {
      return std::tuple<storable_t<std::invoke_result_t<decltype(f)>>>{f()};
    }
  } else {
    constexpr std::size_t mid = Lo + (Hi - Lo) / 2;
    auto halves =
        join([&] { return invoke_range<Lo, mid>(fs); }, [&] { return invoke_range<mid, Hi>(fs); });
    return std::tuple_cat(std::move(halves.first), std::move(halves.second));
  }
}

}  // namespace detail

/// Runs every closure, potentially in parallel, and returns when all have
/// finished: void if all return void, else a tuple of the results (void ones
/// as std::monostate). Exceptions follow join: the first in argument
/// order is rethrown, the others are counted as suppressed.
template <detail::lvalue_callable... Fs>
auto invoke(Fs&&... fs) {
  static_assert(sizeof...(Fs) >= 1, "fjord::invoke needs at least one callable");
  auto refs = std::forward_as_tuple(fs...);
  if constexpr (detail::all_void_v<Fs...>) {
    detail::invoke_range<0, sizeof...(Fs)>(refs);
  } else {
    return detail::invoke_range<0, sizeof...(Fs)>(refs);
  }
}

}  // namespace fjord
