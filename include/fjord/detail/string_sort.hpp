#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <iterator>
#include <memory>
#include <new>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "fjord/detail/index_range.hpp"
#include "fjord/detail/radix_sort.hpp"
#include "fjord/detail/range_split.hpp"

namespace fjord::detail {

// Strings of char ordered by < or >: their order is their bytes' order read
// as unsigned char (char_traits<char>::lt), so a sort by cached prefixes
// gives exactly what the comparison sort would. It is a most-significant-
// digit string radix sort with 8-byte keys (Kärkkäinen and Rantala,
// "Engineering radix sort for strings", SPIRE 2008; the keys cached beside
// an index, as Ng and Kakehi's "Cache-efficient string sorting using
// copying", 2007): sort (key, index) pairs with the integer radix sort, then
// look again, 7 bytes deeper, only at groups whose keys tie. The strings
// are read for their keys and moved once, into place, at the end: random
// strings of 8-32 letters need one level, where a comparison sort makes
// about log2(n) passes of moves and compares through pointers.
//
// Only std::string and std::string_view: a string type with a program's own
// allocator may come with its own std::less specialization or operator<,
// which the keys would not follow. Their moves cannot throw, which matters:
// the result is moved into place after everything that can
// fail (allocations) has been done, so a failure leaves the range as it was.
template <class T, class Compare>
inline constexpr bool string_sortable =
    (std::is_same_v<T, std::string> ||
     std::is_same_v<T, std::string_view>)&&(std::is_same_v<Compare, std::less<>> ||
                                            std::is_same_v<Compare, std::less<T>> ||
                                            std::is_same_v<Compare, std::greater<>> ||
                                            std::is_same_v<Compare, std::greater<T>>);
static_assert(std::is_nothrow_move_constructible_v<std::string> &&
              std::is_nothrow_move_assignable_v<std::string>);

template <class T, class Compare>
inline constexpr bool string_descending =
    std::is_same_v<Compare, std::greater<>> || std::is_same_v<Compare, std::greater<T>>;

struct string_sort_entry {
  std::uint64_t key;
  std::size_t index;
};

// Bytes [depth, depth + 7) of s in the top 56 bits, big-endian, zeros past
// its end; in the low byte how many bytes s has from depth on, capped at 8.
// Keys order as the strings' suffixes from depth do, except that equal keys
// with a low byte of 8 need the next 7 bytes to tell them apart: a string
// that ends inside the 7 bytes has zeros after its end in both the content
// and a smaller length, so it orders before any string it is a prefix of,
// and before "the same bytes followed by a zero byte".
inline std::uint64_t string_key(std::string_view s, std::size_t depth) noexcept {
  const std::size_t rest = s.size() > depth ? s.size() - depth : 0;
  std::uint64_t key = 0;
  if (rest >= 8) {
    std::memcpy(&key, s.data() + depth, 8);
    key = __builtin_bswap64(key) & ~std::uint64_t{0xFF};
    return key | 8U;
  }
  for (std::size_t i = 0; i < rest; ++i) {
    key |= std::uint64_t{static_cast<unsigned char>(s[depth + i])} << (56 - 8 * i);
  }
  return key | rest;
}

template <std::random_access_iterator It, bool Descending>
class string_sort {
  using value_t = std::iter_value_t<It>;

 public:
  string_sort(It first, std::size_t n, std::size_t workers)
      : first_(first),
        n_(n),
        workers_(workers),
        entries_(std::make_unique_for_overwrite<string_sort_entry[]>(n)) {}

  void run() {
    for_chunks(0, n_, [&](std::size_t b, std::size_t e) {
      for (std::size_t i = b; i < e; ++i) {
        entries_[i] = {key_of(i, 0), i};
      }
    });
    sort_keys(0, n_);
    resolve_ties(0, n_, 0);
    move_into_place();
  }

 private:
  // Past this depth a tie group is sorted by comparing whole suffixes, so
  // the depth of recursion stays bounded whatever the strings' length.
  static constexpr std::size_t deepest_key = std::size_t{7} * 64;
  static constexpr std::size_t chunk_length = 4096;
  static constexpr std::size_t continues = Descending ? 0xF7U : 0x08U;

  std::string_view view(std::size_t index) const noexcept {
    const value_t& s = *index_at(first_, index);
    return {s.data(), s.size()};
  }

  std::uint64_t key_of(std::size_t index, std::size_t depth) const noexcept {
    const std::uint64_t key = string_key(view(index), depth);
    return Descending ? ~key : key;
  }

  // leaf(b, e) over [b, e) in chunks of about chunk_length, in parallel.
  template <class Leaf>
  void for_chunks(std::size_t b, std::size_t e, Leaf leaf) {
    const std::size_t chunks = std::clamp<std::size_t>((e - b) / chunk_length, 1, 4 * workers_);
    const std::size_t length = (e - b + chunks - 1) / chunks;
    auto run_chunks = [&](std::size_t cb, std::size_t ce) {
      for (std::size_t c = cb; c < ce; ++c) {
        leaf(b + c * length, std::min(e, b + (c + 1) * length));
      }
    };
    fixed_for(0, chunks, 1, run_chunks);
  }

  // Entries [b, e) by (key, index); they are in index order on entry, and
  // both sorts keep it among equal keys.
  void sort_keys(std::size_t b, std::size_t e) {
    string_sort_entry* const data = entries_.get() + b;
    if (e - b <= 256) {
      std::sort(data, data + (e - b), [](const string_sort_entry& x, const string_sort_entry& y) {
        return x.key != y.key ? x.key < y.key : x.index < y.index;
      });
    } else {
      radix_sort_by(data, e - b, workers_, [](const string_sort_entry& x) { return x.key; });
    }
  }

  // Entries [b, e) are sorted by their keys for depth; each run of equal
  // keys whose strings go on past depth + 7 is sorted again, deeper. Runs
  // are found first and sorted after, so that no run is re-keyed while
  // another chunk still reads its keys to find where runs start.
  void resolve_ties(std::size_t b, std::size_t e, std::size_t depth) {
    if (e - b <= chunk_length) {
      for_each_tie(b, e, b, e, [&](std::size_t rb, std::size_t re) { sort_deeper(rb, re, depth); });
      return;
    }
    const std::size_t chunks = std::clamp<std::size_t>((e - b) / chunk_length, 1, 4 * workers_);
    const std::size_t length = (e - b + chunks - 1) / chunks;
    std::vector<std::vector<std::pair<std::size_t, std::size_t>>> found(chunks);
    auto find = [&](std::size_t cb, std::size_t ce) {
      for (std::size_t c = cb; c < ce; ++c) {
        const std::size_t from = b + c * length;
        for_each_tie(from, std::min(e, from + length), b, e,
                     [&](std::size_t rb, std::size_t re) { found[c].emplace_back(rb, re); });
      }
    };
    fixed_for(0, chunks, 1, find);
    std::vector<std::pair<std::size_t, std::size_t>> ties;
    for (auto& f : found) {
      ties.insert(ties.end(), f.begin(), f.end());
    }
    auto sort_ties = [&](std::size_t tb, std::size_t te) {
      for (std::size_t t = tb; t < te; ++t) {
        sort_deeper(ties[t].first, ties[t].second, depth);
      }
    };
    fixed_for(0, ties.size(), std::max<std::size_t>(1, ties.size() / (8 * workers_)), sort_ties);
  }

  // found(rb, re) for every run of two or more equal keys that starts in
  // [from, to) (and may end past it, up to e) and whose strings go on.
  template <class Found>
  void for_each_tie(std::size_t from, std::size_t to, std::size_t b, std::size_t e,
                    Found found) const {
    std::size_t i = from;
    // A run that started before `from` belongs to the chunk it started in.
    while (i < to && i > b && entries_[i].key == entries_[i - 1].key) {
      ++i;
    }
    while (i < to) {
      std::size_t j = i + 1;
      while (j < e && entries_[j].key == entries_[i].key) {
        ++j;
      }
      if (j - i >= 2 && (entries_[i].key & 0xFFU) == continues) {
        found(i, j);
      }
      i = j;
    }
  }

  void sort_deeper(std::size_t b, std::size_t e, std::size_t depth) {
    const std::size_t next = depth + 7;
    if (next > deepest_key) {
      std::sort(entries_.get() + b, entries_.get() + e,
                [&](const string_sort_entry& x, const string_sort_entry& y) {
                  const std::string_view sx = view(x.index).substr(next);
                  const std::string_view sy = view(y.index).substr(next);
                  const int c = Descending ? sy.compare(sx) : sx.compare(sy);
                  return c != 0 ? c < 0 : x.index < y.index;
                });
      return;
    }
    for_chunks(b, e, [&](std::size_t cb, std::size_t ce) {
      for (std::size_t i = cb; i < ce; ++i) {
        entries_[i].key = key_of(entries_[i].index, next);
      }
    });
    sort_keys(b, e);
    resolve_ties(b, e, next);
  }

  // The one pass that moves strings: each to its place in a scratch array,
  // then back. Neither move throws (string_sortable).
  void move_into_place() {
    struct scratch_deleter {
      void operator()(value_t* p) const noexcept {
        ::operator delete (p, std::align_val_t{alignof(value_t)});
      }
    };
    const std::unique_ptr<value_t, scratch_deleter> scratch(static_cast<value_t*>(
        ::operator new (n_ * sizeof(value_t), std::align_val_t{alignof(value_t)})));
    value_t* const out = scratch.get();
    for_chunks(0, n_, [&](std::size_t b, std::size_t e) {
      for (std::size_t i = b; i < e; ++i) {
        ::new (static_cast<void*>(out + i))
            value_t(std::move(*index_at(first_, entries_[i].index)));
      }
    });
    for_chunks(0, n_, [&](std::size_t b, std::size_t e) {
      for (std::size_t i = b; i < e; ++i) {
        *index_at(first_, i) = std::move(out[i]);
        std::destroy_at(out + i);
      }
    });
  }

  const It first_;
  const std::size_t n_;
  const std::size_t workers_;
  const std::unique_ptr<string_sort_entry[]> entries_;
};

}  // namespace fjord::detail
