#pragma once

#include <algorithm>
#include <concepts>
#include <cstddef>
#include <iterator>
#include <memory>
#include <new>
#include <type_traits>
#include <utility>

#include "fjord/detail/first_error.hpp"
#include "fjord/detail/index_range.hpp"
#include "fjord/detail/pool_entry.hpp"
#include "fjord/detail/radix_sort.hpp"
#include "fjord/detail/string_sort.hpp"
#include "fjord/execution.hpp"
#include "fjord/join.hpp"

namespace fjord::detail {

// Scratch space of n constructed values for a merge sort: default-made
// where T allows (a no-op for trivial types), else each made by moving
// from its neighbour, the trick libstdc++'s stable_sort buffer uses.
template <class T>
class sort_buffer {
 public:
  template <std::random_access_iterator It>
  sort_buffer(std::size_t n, It seed)
      : data_(static_cast<T*>(::operator new (n * sizeof(T), std::align_val_t{alignof(T)}))) {
    try {
      if constexpr (std::is_default_constructible_v<T>) {
        std::uninitialized_default_construct_n(data_, n);
        made_ = n;
      } else {
        ::new (static_cast<void*>(data_)) T(std::move(*seed));
        made_ = 1;
        for (; made_ < n; ++made_) {
          ::new (static_cast<void*>(data_ + made_)) T(std::move(data_[made_ - 1]));
        }
        *seed = std::move(data_[n - 1]);
      }
    } catch (...) {
      std::destroy_n(data_, made_);
      ::operator delete (data_, std::align_val_t{alignof(T)});
      throw;
    }
  }
  ~sort_buffer() {
    std::destroy_n(data_, made_);
    ::operator delete (data_, std::align_val_t{alignof(T)});
  }
  sort_buffer(const sort_buffer&) = delete;
  sort_buffer& operator=(const sort_buffer&) = delete;

  T* data() const noexcept { return data_; }

 private:
  T* data_;
  std::size_t made_ = 0;
};

// A parallel merge sort: leaves sorted with std::sort (or std::stable_sort),
// merged level by level into a buffer and back, each merge split in two at
// the middle of its longer input and a binary search in the shorter. Both
// merges are stable, so with stable leaves the whole sort is.
template <std::random_access_iterator It, class Compare>
class merge_sort {
  using value_t = std::iter_value_t<It>;

 public:
  merge_sort(It first, std::size_t n, Compare& comp, bool stable, std::size_t leaf)
      : first_(first), n_(n), comp_(comp), stable_(stable), leaf_(leaf), buffer_(n, first) {}

  // After a comparison throws, leaves and merges not yet started are
  // skipped and the first exception is rethrown.
  void run() {
    try {
      sort_into(0, n_, false);
    } catch (...) {
      errors_.rethrow();
    }
  }

 private:
  // Sorts elements [b, e) into the range (to_buffer false) or into the
  // buffer's same positions.
  void sort_into(std::size_t b, std::size_t e, bool to_buffer) {
    if (e - b <= leaf_) {
      errors_.run([&] {
        if (to_buffer) {
          value_t* out = buffer_.data();
          std::move(index_at(first_, b), index_at(first_, e), out + b);
          sort_leaf(out + b, out + e);
        } else {
          sort_leaf(index_at(first_, b), index_at(first_, e));
        }
      });
      return;
    }
    const std::size_t mid = b + (e - b) / 2;
    fjord::join([&] { sort_into(b, mid, !to_buffer); }, [&] { sort_into(mid, e, !to_buffer); });
    if (to_buffer) {
      merge(index_at(first_, b), index_at(first_, mid), index_at(first_, mid), index_at(first_, e),
            buffer_.data() + b);
    } else {
      value_t* in = buffer_.data();
      merge(in + b, in + mid, in + mid, in + e, index_at(first_, b));
    }
  }

  template <class Iter>
  void sort_leaf(Iter b, Iter e) {
    if (stable_) {
      std::stable_sort(b, e, comp_);
    } else {
      std::sort(b, e, comp_);
    }
  }

  // Moves the merge of sorted [a, a_end) and [c, c_end) to out; elements of
  // the first input go before equal ones of the second.
  template <class In, class Out>
  void merge(In a, In a_end, In c, In c_end, Out out) {
    constexpr std::ptrdiff_t sequential = 8192;
    const auto na = a_end - a;
    const auto nc = c_end - c;
    if (na + nc <= sequential) {
      errors_.run([&] {
        std::merge(std::make_move_iterator(a), std::make_move_iterator(a_end),
                   std::make_move_iterator(c), std::make_move_iterator(c_end), out, comp_);
      });
      return;
    }
    In a_mid;
    In c_mid;
    if (na >= nc) {
      a_mid = a + na / 2;
      c_mid = std::lower_bound(c, c_end, *a_mid, comp_);  // equal ones of c follow *a_mid
    } else {
      c_mid = c + nc / 2;
      a_mid = std::upper_bound(a, a_end, *c_mid, comp_);  // equal ones of a precede *c_mid
    }
    const Out out_mid = out + ((a_mid - a) + (c_mid - c));
    fjord::join([&] { merge(a, a_mid, c, c_mid, out); },
                [&] { merge(a_mid, a_end, c_mid, c_end, out_mid); });
  }

  const It first_;
  const std::size_t n_;
  Compare& comp_;
  const bool stable_;
  const std::size_t leaf_;
  sort_buffer<value_t> buffer_;
  first_error errors_;
};

template <std::random_access_iterator It, class Compare>
void parallel_sort(const parallel_policy& policy, It first, std::size_t n, Compare& comp,
                   bool stable) {
  // Below this, splitting costs more than it gains, and a buffer is not
  // worth making.
  constexpr std::size_t sequential = 4096;
  const It last = index_at(first, n);
  auto sort_sequentially = [&] {
    if (stable) {
      std::stable_sort(first, last, comp);
    } else {
      std::sort(first, last, comp);
    }
  };
  using value_t = std::iter_value_t<It>;
  if constexpr (std::contiguous_iterator<It> && radix_sortable<value_t, Compare>) {
    // Integers by < or >: a radix sort, O(n) with about 17 passes over
    // memory for 64-bit keys instead of log n levels of comparisons.
    // Passes over the whole range, in chunks of its own: no grain applies.
    if (n > sequential) {
      enter_pool(
          policy,
          [&](std::size_t workers) {
            radix_sort<value_t, radix_descending<value_t, Compare>>(std::to_address(first), n,
                                                                    workers);
          },
          sort_sequentially);
      return;
    }
  }
  if constexpr (string_sortable<value_t, Compare>) {
    // Strings by < or >: keys of their first bytes radix-sorted, ties
    // looked at again deeper, and each string moved once. Stable either way.
    if (n > sequential) {
      enter_pool(
          policy,
          [&](std::size_t workers) {
            string_sort<It, string_descending<value_t, Compare>>(first, n, workers).run();
          },
          sort_sequentially);
      return;
    }
  }
  if (n <= std::max(sequential, policy.grain())) {
    sort_sequentially();
    return;
  }
  enter_pool(
      policy,
      [&](std::size_t workers) {
        // Four leaves a worker: enough to even out noise, few enough merge
        // levels (each a pass over memory).
        const std::size_t leaf = policy.grain() != 0
                                     ? policy.grain()
                                     : std::max(sequential, (n + 4 * workers - 1) / (4 * workers));
        merge_sort<It, Compare>(first, n, comp, stable, leaf).run();
      },
      sort_sequentially);
}

}  // namespace fjord::detail
