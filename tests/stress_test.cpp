// Stress tests for the scheduler as a whole. Sizes are chosen to finish in a
// few seconds on 2 cores under TSan; set FJORD_STRESS_SCALE to go bigger.

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <functional>
#include <memory>
#include <random>
#include <stdexcept>
#include <thread>
#include <vector>

#include "fjord/block_in_place.hpp"
#include "fjord/join.hpp"
#include "fjord/pool.hpp"
#include "fjord/task_group.hpp"

namespace {

int scale() {
  // Read before any pool starts. NOLINTNEXTLINE(concurrency-mt-unsafe)
  const char* s = std::getenv("FJORD_STRESS_SCALE");
  return s != nullptr ? std::max(1, std::atoi(s)) : 1;
}

// A random tree whose shape is a function of its seed: each node forks two
// children by join, 0-4 by task_group, or one in a chain. Each node adds
// mix(seed) to its subtree's sum; run in parallel, the count and the sum
// must equal a plain sequential walk of the same tree, so a node skipped or
// run twice shows (unlike marking ids handed out as nodes run, which holds
// whatever happens).
struct subtree {
  long nodes = 0;
  std::uint64_t sum = 0;
  subtree& operator+=(const subtree& o) {
    nodes += o.nodes;
    sum += o.sum;
    return *this;
  }
};

std::uint64_t mix(std::uint64_t x) {  // splitmix64's finaliser
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ULL;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

// With a blocking context, a fourth shape: the node posts its one child and
// waits for it inside block_in_place, so another thread must take the child
// (at most one such node at a time: with no spare threads, every thread
// could otherwise be waiting for a child nobody is left to run; the others
// walk their child inline). Each wait is bounded: one that gives up marks
// the context stuck, and the test fails instead of hanging.
struct blocking_context {
  fjord::pool* pool = nullptr;
  std::atomic<bool> busy{false};
  std::atomic<bool> stuck{false};
  std::atomic<long> blocked_waits{0};
};

template <bool Parallel>
subtree walk_tree(std::uint64_t seed, int depth, blocking_context* blocking = nullptr);

template <bool Parallel>
subtree wait_for_posted_child(std::uint64_t seed, int depth, blocking_context& ctx) {
  if (ctx.busy.exchange(true)) {
    return walk_tree<Parallel>(seed, depth, &ctx);
  }
  struct posted {
    subtree result;
    std::atomic<bool> done{false};
  };
  auto child = std::make_shared<posted>();
  ctx.pool->post([child, seed, depth, &ctx] {
    child->result = walk_tree<Parallel>(seed, depth, &ctx);
    child->done.store(true, std::memory_order_release);
  });
  fjord::block_in_place([&] {
    const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (!child->done.load(std::memory_order_acquire)) {
      if (std::chrono::steady_clock::now() > give_up) {
        ctx.stuck = true;
        return;
      }
      std::this_thread::sleep_for(std::chrono::microseconds(20));
    }
  });
  ctx.blocked_waits.fetch_add(1);
  ctx.busy = false;
  return child->done.load(std::memory_order_acquire) ? child->result : subtree{};
}

template <bool Parallel>
subtree walk_tree(std::uint64_t seed, int depth, blocking_context* blocking) {
  subtree here{1, mix(seed)};
  if (depth == 0) {
    return here;
  }
  std::mt19937_64 rng(seed);
  const std::uint64_t shape = rng() % (blocking != nullptr ? 4 : 3);
  if (shape == 0) {
    const std::uint64_t a = rng();
    const std::uint64_t b = rng();
    if constexpr (Parallel) {
      auto [x, y] = fjord::join([=] { return walk_tree<true>(a, depth - 1, blocking); },
                                [=] { return walk_tree<true>(b, depth - 1, blocking); });
      here += x;
      here += y;
    } else {
      here += walk_tree<false>(a, depth - 1, blocking);
      here += walk_tree<false>(b, depth - 1, blocking);
    }
  } else if (shape == 1) {
    const std::size_t children = rng() % 5;
    std::vector<std::uint64_t> seeds(children);
    for (auto& c : seeds) {
      c = rng();
    }
    std::vector<subtree> results(children);
    if constexpr (Parallel) {
      fjord::task_group g;
      for (std::size_t c = 0; c < children; ++c) {
        g.run([&results, &seeds, c, depth, blocking] {
          results[c] = walk_tree<true>(seeds[c], depth - 1, blocking);
        });
      }
      g.wait();
    } else {
      for (std::size_t c = 0; c < children; ++c) {
        results[c] = walk_tree<false>(seeds[c], depth - 1, blocking);
      }
    }
    for (const auto& r : results) {
      here += r;
    }
  } else if (shape == 2 || !Parallel) {
    here += walk_tree<Parallel>(rng(), depth - 1, blocking);  // a chain: deep and narrow
  } else {
    here += wait_for_posted_child<Parallel>(rng(), depth - 1, *blocking);
  }
  return here;
}

TEST(stress, random_fork_trees_run_every_node_exactly_once) {
  for (std::size_t workers : {1u, 2u, 4u}) {
    fjord::pool p(fjord::pool_options{.workers = workers});
    for (int round = 0; round < 5 * scale(); ++round) {
      const std::uint64_t seed = static_cast<std::uint64_t>(round) * 7919 + workers;
      const subtree expected = walk_tree<false>(seed, 14);
      const subtree got = p.call([&] { return walk_tree<true>(seed, 14); });
      ASSERT_EQ(got.nodes, expected.nodes) << "seed " << seed;
      ASSERT_EQ(got.sum, expected.sum) << "seed " << seed;
    }
  }
}

TEST(stress, nodes_that_block_beside_a_caller_in_place_with_no_spare_threads) {
  // Every blocked node's place stays empty (no spare to stand in, or one):
  // its posted child must reach the other threads, whether the node runs on
  // a worker or on the caller, while the caller computes or waits in place.
  // An exactly-once hammer for the count of blocked workers; the hangs it guards
  // against need the caller to compute until the blocked node is done, which
  // pool_guest_test.cpp and pool_thread_start_test.cpp set up on purpose.
  for (std::size_t spares : {0u, 1u}) {
    fjord::pool p(fjord::pool_options{.workers = 2, .max_spare_threads = spares});
    blocking_context ctx;
    ctx.pool = &p;
    for (int round = 0; round < 40 * scale(); ++round) {
      const std::uint64_t seed = static_cast<std::uint64_t>(round) * 104729 + spares;
      const subtree expected = walk_tree<false>(seed, 20, &ctx);
      const subtree got = p.call([&] { return walk_tree<true>(seed, 20, &ctx); });
      ASSERT_FALSE(ctx.stuck.load()) << "a posted child was never run; seed " << seed;
      ASSERT_EQ(got.nodes, expected.nodes) << "seed " << seed;
      ASSERT_EQ(got.sum, expected.sum) << "seed " << seed;
    }
    EXPECT_GT(ctx.blocked_waits.load(), 0);
  }
}

long count_nodes(int depth) {
  if (depth == 0) {
    return 1;
  }
  auto [a, b] =
      fjord::join([=] { return count_nodes(depth - 1); }, [=] { return count_nodes(depth - 1); });
  return a + b + 1;
}

TEST(stress, deep_balanced_join_tree) {
  fjord::pool p(fjord::pool_options{.workers = 3});
  EXPECT_EQ(p.call([] { return count_nodes(17); }), (1L << 18) - 1);
}

TEST(stress, unbalanced_chain_of_joins_spreads) {
  // A left-deep chain whose right sides are leaves of real work: only
  // stealing gives the second worker anything to do.
  fjord::pool p(fjord::pool_options{.workers = 2});
  std::atomic<long> sum{0};
  std::function<void(int)> chain = [&](int n) {
    if (n == 0) {
      return;
    }
    fjord::join([&] { chain(n - 1); },
                [&] {
                  long local = 0;
                  for (int i = 0; i < 2000; ++i) {
                    local += i % 7;
                  }
                  sum.fetch_add(local);
                });
  };
  p.call([&] { chain(3000); });
  long per_leaf = 0;
  for (int i = 0; i < 2000; ++i) {
    per_leaf += i % 7;
  }
  EXPECT_EQ(sum.load(), per_leaf * 3000);
}

TEST(stress, exceptions_from_random_nodes) {
  fjord::pool p(fjord::pool_options{.workers = 2});
  for (int round = 0; round < 20 * scale(); ++round) {
    std::atomic<int> finished{0};
    std::function<long(int, unsigned)> walk = [&](int depth, unsigned seed) -> long {
      if (depth == 0) {
        finished.fetch_add(1);
        if (seed % 97 == 13) {
          throw std::runtime_error("leaf");
        }
        return 1;
      }
      auto [a, b] = fjord::join([&] { return walk(depth - 1, seed * 31 + 1); },
                                [&] { return walk(depth - 1, seed * 17 + 3); });
      return a + b;
    };
    // Whether some leaf throws is a function of the seeds: compute it.
    std::function<bool(int, unsigned)> any_throw = [&](int depth, unsigned seed) -> bool {
      if (depth == 0) {
        return seed % 97 == 13;
      }
      return any_throw(depth - 1, seed * 31 + 1) || any_throw(depth - 1, seed * 17 + 3);
    };
    bool threw = false;
    try {
      p.call([&] { return walk(10, static_cast<unsigned>(round)); });
    } catch (const std::runtime_error&) {
      threw = true;
    }
    // join runs both sides even when one throws: every leaf finished, and
    // the exception reached the caller exactly when some leaf threw.
    EXPECT_EQ(finished.load(), 1024);
    EXPECT_EQ(threw, any_throw(10, static_cast<unsigned>(round))) << "round " << round;
  }
}

TEST(stress, many_external_submitters_at_once) {
  fjord::pool p(fjord::pool_options{.workers = 2});
  constexpr int threads = 6;
  const int per_thread = 20000 * scale();
  std::atomic<long> ran{0};
  std::vector<std::thread> submitters;
  for (int t = 0; t < threads; ++t) {
    submitters.emplace_back([&, t] {
      std::vector<fjord::future<int>> futures;
      std::vector<int> submitted;
      for (int i = 0; i < per_thread; ++i) {
        if (i % 3 == 0) {
          futures.push_back(p.submit([i] { return i; }));
          submitted.push_back(i);
        } else if (i % 50 == 1) {
          std::vector<std::function<void()>> batch(10, [&] { ran.fetch_add(1); });
          p.post_bulk(batch);
          i += 9;  // the batch counts for ten submissions
        } else {
          p.post([&] { ran.fetch_add(1); });
        }
      }
      for (std::size_t k = 0; k < futures.size(); ++k) {
        ran.fetch_add(futures[k].get() == submitted[k] ? 1 : 0);  // its own result
      }
      static_cast<void>(t);
    });
  }
  for (auto& t : submitters) {
    t.join();
  }
  // Posts have no order to wait on: wait for the count, bounded, so a lost
  // job fails here with the counts instead of timing out the whole test.
  const long expected = static_cast<long>(threads) * per_thread;
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (ran.load() < expected && std::chrono::steady_clock::now() < give_up) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  ASSERT_EQ(ran.load(), expected) << "jobs lost (or run twice)";
}

TEST(stress, submit_racing_shutdown) {
  // A blocker job keeps the destructor draining until every submitter has
  // been refused, so no submitter touches the pool after it is gone.
  constexpr int submitters_count = 3;
  for (int round = 0; round < 30 * scale(); ++round) {
    std::atomic<int> accepted{0};
    std::atomic<int> ran{0};
    std::atomic<int> refused{0};
    auto p = std::make_unique<fjord::pool>(fjord::pool_options{.workers = 2});
    fjord::pool* raw = p.get();
    p->post([&] {
      while (refused.load() < submitters_count) {
        std::this_thread::sleep_for(std::chrono::microseconds(20));
      }
    });
    std::vector<std::thread> submitters;
    for (int t = 0; t < submitters_count; ++t) {
      submitters.emplace_back([&] {
        while (true) {
          try {
            raw->post([&] { ran.fetch_add(1); });
            accepted.fetch_add(1);
          } catch (const fjord::shutdown_error&) {
            refused.fetch_add(1);
            return;
          }
        }
      });
    }
    std::this_thread::sleep_for(std::chrono::microseconds(100 * (round % 5)));
    p.reset();  // returns only after every accepted job ran
    EXPECT_EQ(ran.load(), accepted.load());
    for (auto& t : submitters) {
      t.join();
    }
  }
}

TEST(stress, pools_created_and_destroyed_with_work_in_flight) {
  for (int round = 0; round < 40 * scale(); ++round) {
    std::atomic<int> ran{0};
    {
      fjord::pool p(fjord::pool_options{.workers = 1 + static_cast<std::size_t>(round % 4)});
      for (int i = 0; i < 100; ++i) {
        p.post([&] {
          fjord::task_group g;
          g.run([&] { ran.fetch_add(1); });
          g.wait();
        });
      }
    }
    EXPECT_EQ(ran.load(), 100);
  }
}

}  // namespace
