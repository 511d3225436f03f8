#include "fjord/detail/job_recycler.hpp"

#include <new>

#include "fjord/detail/per_thread.hpp"
#include "fjord/detail/treiber_stack.hpp"

namespace fjord::detail {

namespace {

std::atomic<std::uint64_t> next_recycler_id{1};

// The blocks one thread holds for one recycler.
struct thread_cache {
  std::uint64_t owner = 0;
  std::array<job_heap::block*, job_heap::class_count> lists{};

  void drop() noexcept {
    for (auto& list : lists) {
      while (list != nullptr) {
        job_heap::block* next = list->next;
        ::operator delete(list);
        list = next;
      }
    }
  }
  thread_cache() = default;
  thread_cache(const thread_cache&) = delete;
  thread_cache& operator=(const thread_cache&) = delete;
  ~thread_cache() { drop(); }
};

// Gone at thread exit: a late post from another thread_local's destructor
// then gets a block of its own.
using cache_of_this_thread = per_thread<thread_cache>;

}  // namespace

job_recycler::job_recycler() noexcept
    : id_(next_recycler_id.fetch_add(1, std::memory_order_relaxed)) {}

job_recycler::~job_recycler() {
  for (auto& stack : returned_) {
    job_heap::block* b = stack.exchange(nullptr, std::memory_order_acquire);
    while (b != nullptr) {
      job_heap::block* next = b->next;
      ::operator delete(b);
      b = next;
    }
  }
}

void* job_recycler::allocate(std::size_t size, std::size_t align) {
  const std::size_t cls = job_heap::class_for(size + job_heap::header_size);
  thread_cache* cache = nullptr;
  if (align > job_heap::header_size || cls == job_heap::class_count ||
      (cache = cache_of_this_thread::get()) == nullptr) {
    return job_heap::allocate(nullptr, size, align);
  }
  if (cache->owner != id_) {
    cache->drop();
    cache->owner = id_;
  }
  job_heap::block*& list = cache->lists[cls];
  if (list == nullptr) {
    // acquire pairs with the release push in give_back (the blocks' links).
    list = returned_[cls].exchange(nullptr, std::memory_order_acquire);
  }
  void* mem = nullptr;
  if (list != nullptr) {
    mem = list;
    list = list->next;
  } else {
    mem = ::operator new(job_heap::class_block_size(cls));
  }
  auto* h = static_cast<job_heap::header*>(mem);
  h->owner = this;
  h->size_class = static_cast<std::uint32_t>(cls);
  h->block_kind = job_heap::kind::recycled;
  return static_cast<char*>(mem) + job_heap::header_size;
}

void job_recycler::give_back(void* header, std::size_t cls) noexcept {
  auto* b = static_cast<job_heap::block*>(header);
  // allocate() takes the stack with an acquire exchange.
  push_to_treiber_stack(returned_[cls], b);
}

}  // namespace fjord::detail
