#pragma once

#include <cstddef>

#include "fjord/detail/worker.hpp"
#include "fjord/execution.hpp"
#include "fjord/pool.hpp"

namespace fjord::detail {

// Runs the parallel part of an algorithm on the policy's pool: the current
// pool when the policy names none and the caller is a worker, else
// fjord::default_pool(). on_pool(workers) runs on one of that pool's workers
// (at once when the caller is one); sequential() runs on the caller instead
// once the default pool is shut down (static destruction), as join does.
template <class OnPool, class Sequential>
decltype(auto) enter_pool(const parallel_policy& policy, OnPool&& on_pool,
                          Sequential&& sequential) {
  pool* p = policy.target();
  if (p == nullptr) {
    if (const worker* w = current_worker; w != nullptr) {
      return on_pool(w->pool->size());
    }
    p = &default_pool();
    if (pool_access::core(*p).is_shut_down()) [[unlikely]] {
      return sequential();
    }
  }
  const std::size_t workers = p->size();
  return p->call([&] { return on_pool(workers); });
}

}  // namespace fjord::detail
