#pragma once

#include <ranges>

#include "fjord/detail/callable.hpp"

namespace fjord::detail {

// A range whose elements are storable callables (pool::post_bulk).
template <class R>
concept callable_range =
    std::ranges::input_range<R> && storable_callable<std::ranges::range_reference_t<R>>;

}  // namespace fjord::detail
