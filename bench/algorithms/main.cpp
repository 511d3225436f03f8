// The data-parallel seeds: scalable_allocators' rmsd / norm2 /
// generate_randoms (the seed's code shape: std::transform_reduce of double
// squared differences over n floats, d = 3), and parallel algorithms peers
// run on the same data: sort, scan and a tiny reduce.
//
// bench_algorithms --bench NAME --impl seq|std-par|onetbb|fjord --threads N --size K
//   (scan also takes --impl halves: two threads scanning their own halves, the
//   2-worker ceiling, and seq-on-worker: std::inclusive_scan run by a 1-worker
//   pool's worker while the caller waits, as every fjord row runs)
//   rmsd, rmsd_tbbsa       time of one rmsd() call, ms (buffers: std::allocator
//                          or tbb::scalable_allocator, as the seed's RMSD / SA_RMSD)
//   rmsd_fjordsa           the same with fjord::scalable_allocator buffers
//   norm2                  sqrt of the sum of squares (a correct reduction), ms
//   generate_randoms       the seed's for_each over indices with a thread_local engine, ms
//   sort_ints              10^7 random 64-bit integers, ms
//   sort_strings           10^6 random strings of 8-32 letters, ms
//   sort_urls              10^6 such strings behind one 32-byte prefix, ms
//   scan                   inclusive_scan of 10^8 ints, ms
//   tiny_reduce            reduce of --size ints (1,000) from the main thread, ns a call
//   tiny_costly            transform_reduce of --size (1,000) elements of --grain
//                          rounds of work each, from the main thread, us a call
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <iterator>
#include <memory>
#include <numeric>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "common/harness.hpp"
#include "fjord/for_each.hpp"
#include "fjord/pool.hpp"
#include "fjord/reduce.hpp"
#include "fjord/scalable_allocator.hpp"
#include "fjord/scan.hpp"
#include "fjord/sort.hpp"

#ifdef BENCH_HAVE_TBB
#include <execution>

#include <tbb/blocked_range.h>
#include <tbb/global_control.h>
#include <tbb/parallel_reduce.h>
#include <tbb/parallel_scan.h>
#include <tbb/parallel_sort.h>
#include <tbb/scalable_allocator.h>
#include <tbb/task_arena.h>
#endif

namespace {

// Indices as a random-access iterator with a value reference, like the
// tbb::counting_iterator the seed used (gone from oneTBB 2021).
struct counting_iterator {
  using iterator_category = std::random_access_iterator_tag;
  using value_type = std::size_t;
  using difference_type = std::ptrdiff_t;
  using pointer = void;
  using reference = std::size_t;
  std::size_t i = 0;
  std::size_t operator*() const { return i; }
  std::size_t operator[](difference_type k) const { return i + static_cast<std::size_t>(k); }
  counting_iterator& operator++() {
    ++i;
    return *this;
  }
  counting_iterator operator++(int) {
    auto c = *this;
    ++i;
    return c;
  }
  counting_iterator& operator--() {
    --i;
    return *this;
  }
  counting_iterator operator--(int) {
    auto c = *this;
    --i;
    return c;
  }
  counting_iterator& operator+=(difference_type k) {
    i += static_cast<std::size_t>(k);
    return *this;
  }
  counting_iterator& operator-=(difference_type k) {
    i -= static_cast<std::size_t>(k);
    return *this;
  }
  friend counting_iterator operator+(counting_iterator a, difference_type k) { return a += k; }
  friend counting_iterator operator+(difference_type k, counting_iterator a) { return a += k; }
  friend counting_iterator operator-(counting_iterator a, difference_type k) { return a -= k; }
  friend difference_type operator-(counting_iterator a, counting_iterator b) {
    return static_cast<difference_type>(a.i) - static_cast<difference_type>(b.i);
  }
  friend auto operator<=>(counting_iterator, counting_iterator) = default;
};

// One policy-generic body per kernel, as the seed writes them; `run`
// calls it with the chosen policy.
template <class T = double, class Policy, class It1, class It2>
T rmsd(Policy&& policy, It1 first1, It2 first2, std::size_t n) {
  const T r = [&] {
    auto add = [](T lhs, T rhs) -> T { return lhs + rhs; };
    auto square_diff = [](T lhs, T rhs) -> T { return (lhs - rhs) * (lhs - rhs); };
    if constexpr (fjord::is_execution_policy_v<Policy>) {
      return fjord::transform_reduce(policy, first1, first1 + static_cast<std::ptrdiff_t>(n),
                                     first2, T(0), add, square_diff);
    } else {
      return std::transform_reduce(policy, first1, first1 + static_cast<std::ptrdiff_t>(n), first2,
                                   T(0), add, square_diff);
    }
  }();
  return std::sqrt(r / static_cast<T>(n));
}

template <class T = double, class Policy, class It>
T norm2(Policy&& policy, It first, It last) {
  // The seed's op (lhs + rhs * rhs) is not a reduction; square, then add.
  auto add = [](T lhs, T rhs) -> T { return lhs + rhs; };
  auto square = [](T x) -> T { return x * x; };
  if constexpr (fjord::is_execution_policy_v<Policy>) {
    return std::sqrt(fjord::transform_reduce(policy, first, last, T(0), add, square));
  } else {
    return std::sqrt(std::transform_reduce(policy, first, last, T(0), add, square));
  }
}

// The seed's two-buffer generate_randoms: A ~ U(-50, 50), B = A + U(-0.1, 0.1).
template <class Policy, class It>
void generate_randoms(Policy&& policy, It a, It b, std::size_t n, std::size_t d) {
  using T = std::iter_value_t<It>;
  auto body = [&](std::size_t i) {
    thread_local std::default_random_engine rng(
        static_cast<unsigned>(std::hash<std::thread::id>()(std::this_thread::get_id())));
    std::uniform_real_distribution<T> base(T(-50), T(50));
    std::uniform_real_distribution<T> noise(T(-0.1), T(0.1));
    a[static_cast<std::ptrdiff_t>(i)] = base(rng);
    b[static_cast<std::ptrdiff_t>(i)] = a[static_cast<std::ptrdiff_t>(i)] + noise(rng);
  };
  if constexpr (fjord::is_execution_policy_v<Policy>) {
    fjord::for_each(policy, counting_iterator{0}, counting_iterator{n * d}, body);
  } else {
    std::for_each(policy, counting_iterator{0}, counting_iterator{n * d}, body);
  }
}

[[noreturn]] void wrong(const char* what, double got, double want) {
  std::fprintf(stderr, "wrong result in %s: %.17g, expected %.17g\n", what, got, want);
  std::exit(3);
}

void check_close(const char* what, double got, double want) {
  if (!(std::abs(got - want) <= 1e-6 * std::max(1.0, std::abs(want)))) {
    wrong(what, got, want);
  }
}

// Calls f with the policy the implementation names (and keeps the pool or
// TBB's limit alive around it). fjord's pool has `threads` workers and the
// caller waits; with caller_joins, as TBB's arena, the caller takes one of
// the pool's `threads` places (threads - 1 workers run beside it).
template <class F>
void with_policy(const bench::args& a, F&& f, bool caller_joins = false) {
  if (a.impl == "fjord") {
    const auto threads = static_cast<std::size_t>(a.threads);
    fjord::pool pool(fjord::pool_options{.workers = threads, .callers_join = caller_joins});
    f(fjord::par.on(pool));
#ifdef BENCH_HAVE_TBB
  } else if (a.impl == "seq") {
    f(std::execution::seq);
  } else if (a.impl == "std-par") {
    tbb::global_control gc(tbb::global_control::max_allowed_parallelism,
                           static_cast<std::size_t>(a.threads));
    f(std::execution::par);
#endif
  } else {
    bench::unknown_impl(a.impl);
  }
}

template <class Vector>
void run_rmsd(const bench::args& a, const char* name) {
  const auto n = static_cast<std::size_t>(a.size > 0 ? a.size : 1 << 20);
  constexpr std::size_t d = 3;
  Vector va(n * d);
  Vector vb(n * d);
  generate_randoms(fjord::par, va.begin(), vb.begin(), n, d);
  const double want = rmsd(fjord::seq, va.begin(), vb.begin(), n);
  with_policy(a, [&](auto&& policy) {
    bench::run_rounds(a, "ms", 1, [&] {
      const auto start = bench::clock::now();
      const double r = rmsd(policy, va.begin(), vb.begin(), n);
      const double ms = bench::since_ms(start);
      check_close(name, r, want);
      return ms;
    });
  });
}

void run_norm2(const bench::args& a) {
  const auto n = static_cast<std::size_t>(a.size > 0 ? a.size : 1 << 20);
  std::vector<float> va(n * 3);
  std::vector<float> vb(n * 3);
  generate_randoms(fjord::par, va.begin(), vb.begin(), n, 3);
  const double want = norm2(fjord::seq, va.begin(), va.end());
  with_policy(a, [&](auto&& policy) {
    bench::run_rounds(a, "ms", 1, [&] {
      const auto start = bench::clock::now();
      const double r = norm2(policy, va.begin(), va.end());
      const double ms = bench::since_ms(start);
      check_close("norm2", r, want);
      return ms;
    });
  });
}

void run_generate_randoms(const bench::args& a) {
  const auto n = static_cast<std::size_t>(a.size > 0 ? a.size : 1 << 20);
  std::vector<float> va(n * 3);
  std::vector<float> vb(n * 3);
  auto round = [&](auto&& generate) {
    return [&, generate] {
      va[n] = 1000;
      const auto start = bench::clock::now();
      generate();
      const double ms = bench::since_ms(start);
      if (!(va[n] >= -50 && va[n] <= 50) || std::abs(vb[n] - va[n]) > 0.11F) {
        wrong("generate_randoms", va[n], 0);
      }
      return ms;
    };
  };
  if (a.impl == "seq-on-worker") {
    // The sequential loop where a 1-worker pool runs its work, while the
    // caller waits (std::execution::par on TBB runs on the caller itself).
    fjord::pool pool(fjord::pool_options{.workers = 1});
    bench::run_rounds(
        a, "ms", 1, round([&] {
          pool.call([&] { generate_randoms(fjord::seq, va.begin(), vb.begin(), n, 3); });
        }));
    return;
  }
  with_policy(a, [&](auto&& policy) {
    bench::run_rounds(a, "ms", 1,
                      round([&] { generate_randoms(policy, va.begin(), vb.begin(), n, 3); }));
  });
}

template <class T, class Make>
void run_sort(const bench::args& a, const char* name, std::size_t default_n, Make make) {
  const auto n = static_cast<std::size_t>(a.size > 0 ? a.size : static_cast<long>(default_n));
  std::mt19937_64 rng(42);
  std::vector<T> input(n);
  for (auto& x : input) {
    x = make(rng);
  }
  std::vector<T> want = input;
  std::sort(want.begin(), want.end());
  std::vector<T> work;
  auto round = [&](auto&& sort) {
    return [&, sort] {
      work = input;
      const auto start = bench::clock::now();
      sort(work);
      const double ms = bench::since_ms(start);
      if (work != want) {
        wrong(name, 0, 1);
      }
      return ms;
    };
  };
#ifdef BENCH_HAVE_TBB
  if (a.impl == "onetbb") {
    tbb::global_control gc(tbb::global_control::max_allowed_parallelism,
                           static_cast<std::size_t>(a.threads));
    bench::run_rounds(a, "ms", 1,
                      round([](std::vector<T>& v) { tbb::parallel_sort(v.begin(), v.end()); }));
    return;
  }
#endif
  with_policy(a, [&](auto&& policy) {
    bench::run_rounds(a, "ms", 1, round([policy](std::vector<T>& v) {
                        if constexpr (fjord::is_execution_policy_v<decltype(policy)>) {
                          fjord::sort(policy, v.begin(), v.end());
                        } else {
                          std::sort(policy, v.begin(), v.end());
                        }
                      }));
  });
}

void run_scan(const bench::args& a) {
  const auto n = static_cast<std::size_t>(a.size > 0 ? a.size : 100'000'000);
  std::vector<int> input(n);
  std::mt19937 rng(7);
  for (auto& x : input) {
    x = static_cast<int>(rng() & 3);
  }
  std::vector<int> want(n);
  std::inclusive_scan(input.begin(), input.end(), want.begin());
  std::vector<int> out(n);
  auto round = [&](auto&& scan) {
    return [&, scan] {
      out.back() = -1;
      const auto start = bench::clock::now();
      scan();
      const double ms = bench::since_ms(start);
      for (std::size_t i = 0; i < n; i += n / 97 + 1) {
        if (out[i] != want[i]) {
          wrong("scan", out[i], want[i]);
        }
      }
      if (out.back() != want.back()) {
        wrong("scan", out.back(), want.back());
      }
      return ms;
    };
  };
#ifdef BENCH_HAVE_TBB
  if (a.impl == "onetbb") {
    tbb::global_control gc(tbb::global_control::max_allowed_parallelism,
                           static_cast<std::size_t>(a.threads));
    bench::run_rounds(a, "ms", 1, round([&] {
                        tbb::parallel_scan(
                            tbb::blocked_range<std::size_t>(0, n), 0,
                            [&](const tbb::blocked_range<std::size_t>& r, int sum, bool final) {
                              for (std::size_t i = r.begin(); i < r.end(); ++i) {
                                sum += input[i];
                                if (final) {
                                  out[i] = sum;
                                }
                              }
                              return sum;
                            },
                            std::plus<>());
                      }));
    return;
  }
#endif
  if (a.impl == "halves") {
    // The ceiling: two threads each scan their own half in one pass, with
    // nothing carried between them (the second half's offset is added
    // after the clock stops, for the check). No parallel scan reads and
    // writes less memory or waits less.
    const std::size_t half = n / 2;
    bench::run_rounds(a, "ms", 1, [&] {
      out.back() = -1;
      const auto start = bench::clock::now();
      std::thread second([&] {
        std::inclusive_scan(input.begin() + static_cast<std::ptrdiff_t>(half), input.end(),
                            out.begin() + static_cast<std::ptrdiff_t>(half));
      });
      std::inclusive_scan(input.begin(), input.begin() + static_cast<std::ptrdiff_t>(half),
                          out.begin());
      second.join();
      const double ms = bench::since_ms(start);
      const int carry = half > 0 ? out[half - 1] : 0;
      for (std::size_t i = half; i < n; ++i) {
        out[i] += carry;
      }
      if (out.back() != want.back() || (half > 0 && out[half] != want[half])) {
        wrong("scan", out.back(), want.back());
      }
      return ms;
    });
    return;
  }
  if (a.impl == "seq-on-worker") {
    fjord::pool pool(fjord::pool_options{.workers = 1});
    bench::run_rounds(
        a, "ms", 1, round([&] {
          pool.call([&] { std::inclusive_scan(input.begin(), input.end(), out.begin()); });
        }));
    return;
  }
  with_policy(a, [&](auto&& policy) {
    bench::run_rounds(a, "ms", 1, round([&] {
                        if constexpr (fjord::is_execution_policy_v<decltype(policy)>) {
                          fjord::inclusive_scan(policy, input.begin(), input.end(), out.begin());
                        } else {
                          std::inclusive_scan(policy, input.begin(), input.end(), out.begin());
                        }
                      }));
  });
}

// A reduction too small to be worth parallelism, called from the main
// thread: what a parallel call costs when it should cost nothing.
void run_tiny_reduce(const bench::args& a) {
  const auto n = static_cast<std::size_t>(a.size > 0 ? a.size : 1000);
  std::vector<int> v(n);
  std::iota(v.begin(), v.end(), 0);
  const long long want = static_cast<long long>(n) * static_cast<long long>(n - 1) / 2;
  constexpr int calls = 20000;
  auto round = [&](auto&& reduce) {
    return [&, reduce] {
      long long sum = 0;
      const auto start = bench::clock::now();
      for (int c = 0; c < calls; ++c) {
        sum += reduce();
        asm volatile("" : : "r"(v.data()) : "memory");  // keep the calls apart
      }
      const double ns = bench::since_ms(start) * 1e6 / calls;
      bench::check("tiny_reduce", sum, want * calls);
      return ns;
    };
  };
  if (a.impl == "loop") {
    bench::run_rounds(a, "ns/call", calls, round([&] {
                        long long s = 0;
                        for (const int x : v) {
                          s += x;
                        }
                        return s;
                      }));
    return;
  }
  with_policy(
      a,
      [&](auto&& policy) {
        bench::run_rounds(a, "ns/call", calls, round([&] {
                            if constexpr (fjord::is_execution_policy_v<decltype(policy)>) {
                              return fjord::reduce(policy, v.begin(), v.end(), 0LL);
                            } else {
                              return std::reduce(policy, v.begin(), v.end(), 0LL);
                            }
                          }));
      },
      /*caller_joins=*/true);
}

// The same from the main thread, with elements that cost something: each
// runs --grain rounds of a 64-bit mix (about 2 ns a round here), so 1,000
// elements cost from a few to a few hundred microseconds, across the range
// where entering the pool from outside (a wake-up) does or does not pay.
void run_tiny_costly(const bench::args& a) {
  const auto n = static_cast<std::size_t>(a.size > 0 ? a.size : 1000);
  const int rounds = a.grain > 0 ? static_cast<int>(a.grain) : 16;
  std::vector<std::uint64_t> v(n);
  std::iota(v.begin(), v.end(), std::uint64_t{1});
  auto cost = [rounds](std::uint64_t x) {
    for (int r = 0; r < rounds; ++r) {
      x ^= x >> 29;
      x *= 0xbf58476d1ce4e5b9ULL;
    }
    return x & 0xffff;
  };
  std::uint64_t want = 0;
  for (const std::uint64_t x : v) {
    want += cost(x);
  }
  constexpr int calls = 2000;
  auto round = [&](auto&& reduce) {
    return [&, reduce] {
      std::uint64_t sum = 0;
      const auto start = bench::clock::now();
      for (int c = 0; c < calls; ++c) {
        sum += reduce();
        asm volatile("" : : "r"(v.data()) : "memory");
      }
      const double us = bench::since_ms(start) * 1e3 / calls;
      bench::check("tiny_costly", sum, want * calls);
      return us;
    };
  };
  if (a.impl == "loop") {
    bench::run_rounds(a, "us/call", calls, round([&] {
                        std::uint64_t s = 0;
                        for (const std::uint64_t x : v) {
                          s += cost(x);
                        }
                        return s;
                      }));
    return;
  }
  with_policy(
      a,
      [&](auto&& policy) {
        bench::run_rounds(a, "us/call", calls, round([&] {
                            if constexpr (fjord::is_execution_policy_v<decltype(policy)>) {
                              return fjord::transform_reduce(policy, v.begin(), v.end(),
                                                             std::uint64_t{0}, std::plus<>(), cost);
                            } else {
                              return std::transform_reduce(policy, v.begin(), v.end(),
                                                           std::uint64_t{0}, std::plus<>(), cost);
                            }
                          }));
      },
      /*caller_joins=*/true);
}

}  // namespace

int main(int argc, char** argv) {
  const bench::named_args named = bench::parse_named(argc, argv);
  const std::string& name = named.name;
  const bench::args& a = named.a;
  if (name == "rmsd") {
    run_rmsd<std::vector<float>>(a, "rmsd");
#ifdef BENCH_HAVE_TBB
  } else if (name == "rmsd_tbbsa") {
    run_rmsd<std::vector<float, tbb::scalable_allocator<float>>>(a, "rmsd_tbbsa");
#endif
  } else if (name == "rmsd_fjordsa") {
    run_rmsd<std::vector<float, fjord::scalable_allocator<float>>>(a, "rmsd_fjordsa");
  } else if (name == "norm2") {
    run_norm2(a);
  } else if (name == "generate_randoms") {
    run_generate_randoms(a);
  } else if (name == "sort_ints") {
    run_sort<std::uint64_t>(a, "sort_ints", 10'000'000, [](std::mt19937_64& rng) { return rng(); });
  } else if (name == "sort_strings") {
    run_sort<std::string>(a, "sort_strings", 1'000'000, [](std::mt19937_64& rng) {
      std::string s(8 + rng() % 25, 'a');
      for (char& c : s) {
        c = static_cast<char>('a' + rng() % 26);
      }
      return s;
    });
  } else if (name == "sort_urls") {
    // Every string ties on its first 32 bytes: what sorting by cached
    // prefixes pays when prefixes do not tell strings apart.
    run_sort<std::string>(a, "sort_urls", 1'000'000, [](std::mt19937_64& rng) {
      std::string s = "https://fjord.example.org/items/";
      const std::size_t letters = 8 + rng() % 25;
      for (std::size_t i = 0; i < letters; ++i) {
        s += static_cast<char>('a' + rng() % 26);
      }
      return s;
    });
  } else if (name == "scan") {
    run_scan(a);
  } else if (name == "tiny_reduce") {
    run_tiny_reduce(a);
  } else if (name == "tiny_costly") {
    run_tiny_costly(a);
  } else {
    std::fprintf(stderr, "unknown --bench %s\n", name.c_str());
    return 2;
  }
}
