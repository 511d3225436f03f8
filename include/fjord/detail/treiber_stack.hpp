#pragma once

#include <atomic>

namespace fjord::detail {

// Pushes node on a lock-free stack (Treiber, "Systems Programming: Coping
// with Parallelism", IBM RJ 5118, 1986) whose consumer takes the whole stack
// at once with an acquire exchange, never one node at a time, so there is no
// ABA problem. Release: the consumer's acquire exchange then sees node->next
// and everything the pusher wrote to the node before. Any thread.
template <class Node>
void push_to_treiber_stack(std::atomic<Node*>& head, Node* node) noexcept {
  Node* top = head.load(std::memory_order_relaxed);
  do {
    node->next = top;
  } while (
      !head.compare_exchange_weak(top, node, std::memory_order_release, std::memory_order_relaxed));
}

}  // namespace fjord::detail
