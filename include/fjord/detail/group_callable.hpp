#pragma once

#include <concepts>
#include <stop_token>

#include "fjord/detail/callable.hpp"

namespace fjord::detail {

// A task_group child: called with no arguments or with the group's token.
template <class F>
concept group_callable = storable_callable<F> || std::invocable<stored_ref_t<F>, std::stop_token>;

}  // namespace fjord::detail
