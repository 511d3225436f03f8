#include "fjord/scalable_allocator.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <limits>
#include <list>
#include <map>
#include <memory_resource>
#include <new>
#include <string>
#include <vector>

#include "fjord/execution.hpp"
#include "fjord/parallel_for.hpp"
#include "fjord/pool.hpp"
#include "fjord/scalable_memory.hpp"
#include "fjord/scalable_memory_resource.hpp"

namespace {

// Constructed before any test runs and destroyed after main returns, when
// the main thread's heap has been given up: its destructor frees into the
// resource on the path every late free takes.
struct frees_during_static_destruction {
  frees_during_static_destruction() = default;
  frees_during_static_destruction(const frees_during_static_destruction&) = delete;
  frees_during_static_destruction& operator=(const frees_during_static_destruction&) = delete;
  ~frees_during_static_destruction() {
    for (void* p : blocks) {
      fjord::scalable_resource()->deallocate(p, 64);
    }
    if (fjord::scalable_memory_statistics().bytes_in_use != 0) {
      std::abort();  // every block of this program has been freed by now
    }
  }
  std::vector<void*> blocks;
};
frees_during_static_destruction at_exit;

TEST(scalable_memory_resource, frees_during_static_destruction) {
  for (int i = 0; i < 100; ++i) {
    at_exit.blocks.push_back(fjord::scalable_resource()->allocate(64));
  }
}

template <class T>
using scalable_vector = std::vector<T, fjord::scalable_allocator<T>>;

TEST(scalable_allocator, serves_standard_containers) {
  const std::size_t before = fjord::scalable_memory_statistics().bytes_in_use;
  {
    scalable_vector<int> v;
    for (int i = 0; i < 100000; ++i) {
      v.push_back(i);
    }
    std::map<int, std::string, std::less<>,
             fjord::scalable_allocator<std::pair<const int, std::string>>>
        m;
    std::list<double, fjord::scalable_allocator<double>> l;
    for (int i = 0; i < 1000; ++i) {
      m.emplace(i, std::to_string(i));
      l.push_back(i * 0.5);
    }
    long long sum = 0;
    for (int x : v) {
      sum += x;
    }
    EXPECT_EQ(sum, 99999LL * 100000 / 2);
    EXPECT_EQ(m.at(512), "512");
    EXPECT_EQ(l.back(), 999 * 0.5);
    EXPECT_GT(fjord::scalable_memory_statistics().bytes_in_use, before + 400000);
  }
  EXPECT_EQ(fjord::scalable_memory_statistics().bytes_in_use, before);
}

struct alignas(256) over_aligned {
  char bytes[256];
};

TEST(scalable_allocator, honours_over_aligned_types) {
  scalable_vector<over_aligned> v(37);
  for (const auto& x : v) {
    EXPECT_EQ(reinterpret_cast<std::uintptr_t>(&x) % 256, 0u);
  }
  fjord::scalable_allocator<over_aligned> a;
  over_aligned* one = a.allocate(1);
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(one) % 256, 0u);
  a.deallocate(one, 1);
}

TEST(scalable_allocator, a_count_past_size_t_throws_bad_array_new_length) {
  fjord::scalable_allocator<std::uint64_t> a;
  EXPECT_THROW((void)a.allocate(std::numeric_limits<std::size_t>::max() / 4),
               std::bad_array_new_length);
}

TEST(scalable_allocator, all_instances_are_equal_and_rebind) {
  const fjord::scalable_allocator<int> a;
  const fjord::scalable_allocator<double> b(a);
  EXPECT_TRUE(a == b);
  EXPECT_FALSE(a != b);
  static_assert(std::allocator_traits<fjord::scalable_allocator<int>>::is_always_equal::value);
}

TEST(scalable_allocator, works_on_pool_workers_and_across_them) {
  fjord::pool p(fjord::pool_options{.workers = 2});
  std::vector<scalable_vector<int>> made(10000);
  fjord::parallel_for(fjord::par.on(p), 0, 10000, [&](int i) {
    made[static_cast<std::size_t>(i)].assign(static_cast<std::size_t>(i % 100 + 1), i);
  });
  // Free them on other threads than made them.
  fjord::parallel_for(fjord::par.on(p), 0, 10000, [&](int i) {
    const auto& v = made[static_cast<std::size_t>(9999 - i)];
    EXPECT_EQ(v.front(), 9999 - i);
    made[static_cast<std::size_t>(9999 - i)] = scalable_vector<int>();
  });
}

TEST(scalable_memory_resource, serves_pmr_containers) {
  std::pmr::memory_resource* r = fjord::scalable_resource();
  EXPECT_EQ(r, fjord::scalable_resource());
  std::pmr::vector<std::pmr::string> v(r);
  for (int i = 0; i < 1000; ++i) {
    v.emplace_back(std::string(static_cast<std::size_t>(i % 97), 'x') + std::to_string(i));
  }
  EXPECT_EQ(v[999].size(), 999u % 97 + 3);
  EXPECT_EQ(v[5].get_allocator().resource(), r);
  void* big = r->allocate(std::size_t{8} << 20, 1 << 16);
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(big) % (1 << 16), 0u);
  r->deallocate(big, std::size_t{8} << 20, 1 << 16);
}

TEST(scalable_memory_resource, equals_every_instance_of_itself_only) {
  fjord::scalable_memory_resource other;
  EXPECT_TRUE(fjord::scalable_resource()->is_equal(other));
  EXPECT_FALSE(fjord::scalable_resource()->is_equal(*std::pmr::new_delete_resource()));
  void* p = other.allocate(24);
  fjord::scalable_resource()->deallocate(p, 24);
}

}  // namespace
