#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <new>

#include "fjord/detail/job_heap.hpp"
#include "fjord/detail/job_recycler.hpp"
#include "fjord/detail/treiber_stack.hpp"

namespace fjord::detail {

namespace {

constexpr std::size_t slab_size = std::size_t{64} * 1024;

}  // namespace

job_heap::~job_heap() {
  for (void* s : slabs_) {
    ::operator delete (s, std::align_val_t{64});
  }
}

void* job_heap::allocate_slow(job_heap* heap, std::size_t size, std::size_t align) {
  if (align > header_size) {
    // Room for the header in front of the first aligned address.
    char* raw = static_cast<char*>(::operator new(size + header_size + align));
    const auto base = reinterpret_cast<std::uintptr_t>(raw);
    const std::uintptr_t payload = (base + header_size + align - 1) / align * align;
    auto* h = reinterpret_cast<header*>(raw + (payload - base) - header_size);
    h->owner = raw;
    h->block_kind = kind::aligned;
    return raw + (payload - base);
  }
  const std::size_t total = size + header_size;
  const std::size_t cls = class_for(total);
  if (heap == nullptr || cls == class_count) {
    // Plain operator new: malloc's fast path, already 16-byte aligned
    // (aligned new takes glibc's much slower memalign path).
    static_assert(alignof(std::max_align_t) >= header_size);
    auto* h = static_cast<header*>(::operator new(total));
    h->owner = nullptr;
    h->block_kind = kind::plain;
    return reinterpret_cast<char*>(h) + header_size;
  }
  return heap->allocate_from_class(cls);
}

void* job_heap::allocate_from_class(std::size_t cls) {
  if (local_[cls] == nullptr) {
    // Reclaim what other threads freed before cutting a new slab.
    local_[cls] = remote_[cls].exchange(nullptr, std::memory_order_acquire);
    if (local_[cls] == nullptr) {
      refill(cls);
    }
  }
  block* b = local_[cls];
  local_[cls] = b->next;
  return hand_out(b, cls);
}

void job_heap::refill(std::size_t cls) {
  const std::size_t bs = class_block_size(cls);
  char* slab = static_cast<char*>(::operator new (slab_size, std::align_val_t{64}));
  slabs_.push_back(slab);
  block* list = nullptr;
  for (std::size_t off = slab_size; off >= bs; off -= bs) {
    auto* b = reinterpret_cast<block*>(slab + off - bs);
    b->next = list;
    list = b;
  }
  local_[cls] = list;
}

void job_heap::deallocate_slow(void* p) noexcept {
  auto* h = reinterpret_cast<header*>(static_cast<char*>(p) - header_size);
  switch (h->block_kind) {
    case kind::plain:
      ::operator delete(h);
      return;
    case kind::aligned:
      ::operator delete(h->owner);
      return;
    case kind::recycled:
      static_cast<job_recycler*>(h->owner)->give_back(h, h->size_class);
      return;
    case kind::heap:
      break;
  }
  auto* owner = static_cast<job_heap*>(h->owner);
  const std::size_t cls = h->size_class;
  auto* b = reinterpret_cast<block*>(h);
  if (owner == current_job_heap()) {
    owner->free_local(b, cls);
  } else {
    owner->free_remote(b, cls);
  }
}

void job_heap::deallocate_unrun(void* p) noexcept {
  auto* h = reinterpret_cast<header*>(static_cast<char*>(p) - header_size);
  if (h->block_kind == kind::recycled) {
    ::operator delete(h);
    return;
  }
  deallocate(p);
}

void job_heap::free_remote(block* b, std::size_t cls) noexcept {
  // The owner takes the stack with an acquire exchange (allocate).
  push_to_treiber_stack(remote_[cls], b);
  freed_remote_.fetch_add(1, std::memory_order_relaxed);
}

}  // namespace fjord::detail
