#include "fjord/channel.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <iterator>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "fjord/go.hpp"
#include "fjord/pool.hpp"
#include "fjord/spawn.hpp"
#include "fjord/sync_wait.hpp"
#include "fjord/task.hpp"
#include "fjord/when_all.hpp"
#include "fjord/yield.hpp"
#include "support/run_together.hpp"

namespace {

using namespace std::chrono_literals;

// Counts every instance alive, and every move-from of a live value, so a
// value lost (never destroyed) or doubled (destroyed twice) shows.
struct counted {
  static inline std::atomic<long> live{0};
  int value = 0;
  explicit counted(int v) noexcept : value(v) { live.fetch_add(1); }
  counted(counted&& o) noexcept : value(o.value) { live.fetch_add(1); }
  counted& operator=(counted&& o) noexcept {
    value = o.value;
    return *this;
  }
  ~counted() { live.fetch_sub(1); }
};

TEST(channel, buffered_values_come_out_in_order) {
  fjord::channel<int> ch(3);
  EXPECT_EQ(ch.capacity(), 3U);
  EXPECT_EQ(ch.try_send(1), fjord::channel_status::ok);
  EXPECT_EQ(ch.try_send(2), fjord::channel_status::ok);
  EXPECT_EQ(ch.try_send(3), fjord::channel_status::ok);
  EXPECT_EQ(ch.try_send(4), fjord::channel_status::full);
  EXPECT_EQ(ch.size(), 3U);
  EXPECT_EQ(ch.try_receive(), 1);
  int out = 0;
  EXPECT_EQ(ch.try_receive(out), fjord::channel_status::ok);
  EXPECT_EQ(out, 2);
  EXPECT_EQ(ch.try_receive(), 3);
  EXPECT_EQ(ch.try_receive(out), fjord::channel_status::empty);
  EXPECT_EQ(ch.try_receive(), std::nullopt);
}

// The same through the lock-free ring (capacity 16 and up): try_ forms
// answer full and empty without waiting, and closed once closed.
TEST(channel, a_ring_channel_answers_full_empty_and_closed) {
  fjord::channel<int> ch(16);
  for (int i = 0; i < 16; ++i) {
    ASSERT_EQ(ch.try_send(i), fjord::channel_status::ok);
  }
  EXPECT_EQ(ch.try_send(16), fjord::channel_status::full);
  EXPECT_EQ(ch.size(), 16U);
  for (int i = 0; i < 16; ++i) {
    ASSERT_EQ(ch.try_receive(), i);
  }
  int out = -1;
  EXPECT_EQ(ch.try_receive(out), fjord::channel_status::empty);
  EXPECT_EQ(ch.try_send(7), fjord::channel_status::ok);
  ch.close();
  EXPECT_EQ(ch.try_send(8), fjord::channel_status::closed);
  EXPECT_EQ(ch.try_receive(out), fjord::channel_status::ok);
  EXPECT_EQ(out, 7);
  EXPECT_EQ(ch.try_receive(out), fjord::channel_status::closed);
}

TEST(channel, a_rendezvous_channel_holds_nothing) {
  fjord::channel<int> ch(0);
  EXPECT_EQ(ch.try_send(1), fjord::channel_status::full);
  EXPECT_EQ(ch.try_receive(), std::nullopt);
  EXPECT_EQ(ch.size(), 0U);
}

TEST(channel, an_unbounded_channel_never_fills) {
  fjord::channel<int> ch(fjord::unbounded);
  for (int i = 0; i < 100000; ++i) {
    ASSERT_EQ(ch.try_send(i), fjord::channel_status::ok);
  }
  for (int i = 0; i < 100000; ++i) {
    ASSERT_EQ(ch.try_receive(), i);
  }
}

// docs/channels.md: the buffer grows with what it holds, not with the
// capacity (this one would need 8 EiB up front).
TEST(channel, a_huge_capacity_costs_nothing_until_used) {
  fjord::channel<long> ch(std::size_t{1} << 60);
  for (long i = 0; i < 1000; ++i) {
    ASSERT_EQ(ch.try_send(i), fjord::channel_status::ok);
  }
  EXPECT_EQ(ch.size(), 1000U);
  EXPECT_EQ(ch.try_receive(), 0);
}

TEST(channel, handles_share_one_channel) {
  fjord::channel<int> a(1);
  fjord::channel<int> b = a;
  EXPECT_TRUE(a == b);
  EXPECT_EQ(b.try_send(7), fjord::channel_status::ok);
  EXPECT_EQ(a.try_receive(), 7);
  fjord::channel<int> c = std::move(b);
  EXPECT_FALSE(static_cast<bool>(b));  // NOLINT(bugprone-use-after-move): moved-from is null
  EXPECT_TRUE(c == a);
}

TEST(channel, a_null_handle_names_the_operation) {
  fjord::channel<int> ch;
  EXPECT_FALSE(static_cast<bool>(ch));
  try {
    (void)ch.try_send(1);
    FAIL();
  } catch (const std::logic_error& e) {
    EXPECT_NE(std::string(e.what()).find("try_send"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("null"), std::string::npos);
  }
  EXPECT_THROW((void)ch.receive(), std::logic_error);
  EXPECT_THROW(ch.close(), std::logic_error);
}

// Go's semantics for close.
TEST(channel, receives_drain_the_buffer_after_close_then_report_closed) {
  fjord::channel<int> ch(4);
  ASSERT_EQ(ch.try_send(1), fjord::channel_status::ok);
  ASSERT_EQ(ch.try_send(2), fjord::channel_status::ok);
  EXPECT_TRUE(ch.close());
  EXPECT_FALSE(ch.close());  // closing twice is harmless
  EXPECT_TRUE(ch.is_closed());
  EXPECT_EQ(ch.try_send(3), fjord::channel_status::closed);
  EXPECT_EQ(ch.try_receive(), 1);
  EXPECT_EQ(fjord::sync_wait([](fjord::channel<int> c) -> fjord::task<std::optional<int>> {
              co_return co_await c.receive();
            }(ch)),
            2);
  int out = 0;
  EXPECT_EQ(ch.try_receive(out), fjord::channel_status::closed);
  EXPECT_EQ(ch.blocking_receive(), std::nullopt);
}

TEST(channel, a_send_on_a_closed_channel_throws_channel_closed) {
  fjord::channel<int> ch(4);
  ch.close();
  EXPECT_THROW(ch.blocking_send(1), fjord::channel_closed);
  auto send = [](fjord::channel<int> c) -> fjord::task<void> { co_await c.send(1); };
  EXPECT_THROW(fjord::sync_wait(send(ch)), fjord::channel_closed);
  try {
    ch.blocking_send(2);
  } catch (const fjord::channel_closed& e) {
    EXPECT_NE(std::string(e.what()).find("closed"), std::string::npos);
  }
}

TEST(channel, close_wakes_every_waiting_receiver_and_sender) {
  fjord::pool p(fjord::pool_options{.workers = 2});
  fjord::channel<int> empty(0);
  fjord::channel<int> full(1);
  ASSERT_EQ(full.try_send(0), fjord::channel_status::ok);
  std::atomic<int> closed_receives{0};
  std::atomic<int> failed_sends{0};
  auto receive = [&](fjord::channel<int> c) -> fjord::task<void> {
    if (!(co_await c.receive())) {
      closed_receives.fetch_add(1);
    }
  };
  auto send = [&](fjord::channel<int> c) -> fjord::task<void> {
    try {
      co_await c.send(1);
    } catch (const fjord::channel_closed&) {
      failed_sends.fetch_add(1);
    }
  };
  std::vector<fjord::task<void>> tasks;
  for (int i = 0; i < 20; ++i) {
    tasks.push_back(receive(empty));
    tasks.push_back(send(full));
  }
  std::thread closer([&] {
    // Most are waiting by now; the others find the channels closed.
    std::this_thread::sleep_for(20ms);
    empty.close();
    full.close();
  });
  fjord_test::run_together(p, std::move(tasks));
  closer.join();
  EXPECT_EQ(closed_receives.load(), 20);
  EXPECT_EQ(failed_sends.load(), 20);
  EXPECT_EQ(full.try_receive(), 0);  // the buffered value survives the close
}

TEST(channel, a_close_from_outside_resumes_each_waiter_on_its_own_pool) {
  // Waiters of two pools, queued in whatever order they come: close() hands
  // those of the first waiter's pool over as one chain and wakes the others
  // one by one, and each resumes on the pool it waited on.
  fjord::pool a(fjord::pool_options{.workers = 2, .name = "a"});
  fjord::pool b(fjord::pool_options{.workers = 1, .name = "b"});
  fjord::channel<int> gate(0);
  constexpr int per_pool = 700;
  std::atomic<int> waiting{0};
  std::atomic<int> on_home{0};
  std::atomic<int> elsewhere{0};
  auto process = [&](fjord::pool& home) -> fjord::task<void> {
    co_await home.schedule();
    waiting.fetch_add(1);
    const std::optional<int> v = co_await gate.receive();
    (v ? elsewhere : (fjord::current_pool() == &home ? on_home : elsewhere)).fetch_add(1);
  };
  std::vector<fjord::task<void>> tasks;
  for (int i = 0; i < per_pool; ++i) {
    tasks.push_back(process(i % 2 == 0 ? a : b));
    tasks.push_back(process(i % 2 == 0 ? b : a));
  }
  std::thread closer([&] {
    while (waiting.load() != 2 * per_pool) {
      std::this_thread::yield();
    }
    std::this_thread::sleep_for(5ms);  // the last ones have queued their waiters
    gate.close();
  });
  fjord::sync_wait(fjord::when_all(std::move(tasks)));
  closer.join();
  EXPECT_EQ(on_home.load(), 2 * per_pool);
  EXPECT_EQ(elsewhere.load(), 0);
}

TEST(channel, a_close_whose_waiter_drops_the_last_handle_at_once_is_safe) {
  // The closer reaches the channel through the waiter's own handle, the
  // only one: once woken, the waiter may end and free the channel while
  // close() is still on it (ASan sees a use after free if close() does not
  // keep the channel alive).
  fjord::pool p(fjord::pool_options{.workers = 2});
  for (int round = 0; round < 200; ++round) {
    std::atomic<const fjord::channel<int>*> shared{nullptr};
    std::atomic<bool> closed_it{false};
    auto waiter = [&]() -> fjord::task<bool> {
      co_await p.schedule();
      const fjord::channel<int> mine(0);
      shared.store(&mine);
      co_return !(co_await mine.receive()).has_value();
    };
    std::thread closer([&] {
      const fjord::channel<int>* c = nullptr;
      while ((c = shared.load()) == nullptr) {
        std::this_thread::yield();
      }
      closed_it.store(c->close());
    });
    EXPECT_TRUE(fjord::sync_wait(waiter()));
    closer.join();
    EXPECT_TRUE(closed_it.load());
  }
}

// More plain waiters than close() claims itself (256 per queue): the rest
// are completed by a walk on the workers, which may run them while close()
// is still returning.
constexpr int waiters_past_one_chain = 20000;

// Runs waiters_past_one_chain coroutines made by make(i), each of which
// counts itself in `waiting` just before it waits on a channel; once all
// do (and a little longer, so that they have queued their waiters), a
// thread outside the pool calls close(), which must return true. Returns
// when every coroutine has ended.
template <class Make, class Close>
void close_from_outside_while_all_wait(Make make, const std::atomic<int>& waiting, Close close) {
  std::vector<fjord::task<void>> tasks;
  for (int i = 0; i < waiters_past_one_chain; ++i) {
    tasks.push_back(make(i));
  }
  std::thread closer([&] {
    while (waiting.load() != waiters_past_one_chain) {
      std::this_thread::yield();
    }
    std::this_thread::sleep_for(5ms);
    EXPECT_TRUE(close());
  });
  fjord::sync_wait(fjord::when_all(std::move(tasks)));
  closer.join();
}

TEST(channel, coroutines_woken_during_a_long_close_may_use_the_channel_at_once) {
  // Each woken coroutine comes straight back to the channel, which is
  // closed with waiters still queued while the close goes on: nothing
  // deadlocks, and every one sees the channel closed.
  fjord::pool p(fjord::pool_options{.workers = 2});
  fjord::channel<int> gate(0);
  std::atomic<int> waiting{0};
  std::atomic<int> saw_closed{0};
  auto process = [&]() -> fjord::task<void> {
    co_await p.schedule();
    waiting.fetch_add(1);
    const std::optional<int> first = co_await gate.receive();
    const std::optional<int> second = co_await gate.receive();
    if (!first && !second && gate.is_closed() &&
        gate.try_send(1) == fjord::channel_status::closed) {
      saw_closed.fetch_add(1);
    }
  };
  close_from_outside_while_all_wait([&](int) { return process(); }, waiting,
                                    [&] { return gate.close(); });
  EXPECT_EQ(saw_closed.load(), waiters_past_one_chain);
}

TEST(channel, a_long_close_whose_first_woken_waiter_frees_the_last_handle_is_safe) {
  // The closer reaches the channel through a handle the first woken waiter
  // deletes (the only handle: the waiters hold none), while close() may
  // still be running. ASan sees a use after free if close() touches the
  // channel once it has woken anyone, or the walk touches it at all.
  fjord::pool p(fjord::pool_options{.workers = 2});
  for (int round = 0; round < 5; ++round) {
    auto* only = new fjord::channel<int>(0);
    std::atomic<int> waiting{0};
    std::atomic<int> woken{0};
    auto process = [&](fjord::channel<int>* ch) -> fjord::task<void> {
      co_await p.schedule();
      waiting.fetch_add(1);
      const std::optional<int> v = co_await ch->receive();
      EXPECT_FALSE(v.has_value());
      if (woken.fetch_add(1) == 0) {
        delete ch;  // the closer may be anywhere in its pass
      }
    };
    close_from_outside_while_all_wait([&](int) { return process(only); }, waiting,
                                      [&] { return only->close(); });
    EXPECT_EQ(woken.load(), waiters_past_one_chain);
  }
}

TEST(channel, senders_still_queued_during_a_long_close_give_no_value_to_a_receive) {
  // Senders blocked on a rendezvous channel, more than close() claims
  // itself: each one that close() or its walk has failed tries a receive at
  // once, while later senders may not have been reached yet. Their values
  // belong to close(), which fails them too, so every receive reports
  // closed and every send throws.
  fjord::pool p(fjord::pool_options{.workers = 2});
  fjord::channel<int> ch(0);
  std::atomic<int> waiting{0};
  std::atomic<int> failed{0};
  std::atomic<int> received{0};
  auto sender = [&](int v) -> fjord::task<void> {
    co_await p.schedule();
    waiting.fetch_add(1);
    try {
      co_await ch.send(v);
    } catch (const fjord::channel_closed&) {
      failed.fetch_add(1);
    }
    int out = 0;
    if (ch.try_receive(out) != fjord::channel_status::closed) {
      received.fetch_add(1);
    }
  };
  close_from_outside_while_all_wait(sender, waiting, [&] { return ch.close(); });
  EXPECT_EQ(failed.load(), waiters_past_one_chain);
  EXPECT_EQ(received.load(), 0);
}

// The receiver queued last on ch (nullptr: none).
const fjord::detail::channel_waiter* last_receiver(const fjord::channel<int>& ch) {
  auto* state = fjord::detail::channel_access::state(ch);
  std::lock_guard guard(*state);
  return state->receivers.back();
}

// Runs start(), which begins one receive on ch, and returns once it has
// queued: the queue's order is then the order of these calls.
template <class Start>
void queue_one_receiver(const fjord::channel<int>& ch, Start start) {
  const fjord::detail::channel_waiter* before = last_receiver(ch);
  start();
  while (last_receiver(ch) == before) {
    std::this_thread::yield();
  }
}

constexpr int own_chunk = static_cast<int>(fjord::detail::channel_state<int>::close_chunk);

// Receives on one rendezvous channel, queued in the order of the add_
// calls: coroutines of any pool and plain threads. Each counts itself when
// its receive ends with the channel closed.
struct queued_receivers {
  fjord::channel<int> ch{0};
  std::atomic<int> coroutines_ended{0};
  std::atomic<int> threads_ended{0};
  int coroutines = 0;
  std::vector<std::thread> threads;

  queued_receivers() = default;
  queued_receivers(const queued_receivers&) = delete;
  queued_receivers& operator=(const queued_receivers&) = delete;
  ~queued_receivers() { join_threads(); }

  static fjord::task<void> receive(fjord::channel<int> c, std::atomic<int>& ended) {
    // Not `if (!co_await ...)`: g++ 12 miscompiles a co_await in an if's
    // condition (GCC PR106188).
    const std::optional<int> v = co_await c.receive();
    if (!v) {
      ended.fetch_add(1);
    }
  }
  void add_coroutine(fjord::pool& p) {
    queue_one_receiver(ch, [&] { fjord::go(p, receive, ch, std::ref(coroutines_ended)); });
    ++coroutines;
  }
  void add_thread() {
    queue_one_receiver(ch, [this] {
      threads.emplace_back([this] {
        if (!ch.blocking_receive()) {
          threads_ended.fetch_add(1);
        }
      });
    });
  }
  void join_threads() {
    for (std::thread& t : threads) {
      if (t.joinable()) {
        t.join();
      }
    }
  }
  // After close(): returns once every receive has ended.
  void wait_for_all() {
    join_threads();
    EXPECT_EQ(threads_ended.load(), static_cast<int>(threads.size()));
    while (coroutines_ended.load() != coroutines) {
      std::this_thread::yield();
    }
  }
};

TEST(channel, a_long_close_ends_the_waits_of_other_pools_and_threads_past_its_first_chunk) {
  // Past the waiters close() claims itself, the queue holds receives of
  // two pools and of threads, in a known order. The walk runs on the pool
  // of the first of them, or, when that is a thread's, on the closing
  // thread; either way it wakes every kind where it belongs.
  for (const bool thread_first : {true, false}) {
    queued_receivers r;
    fjord::pool a(fjord::pool_options{.workers = 1});
    fjord::pool b(fjord::pool_options{.workers = 1});
    for (int i = 0; i < own_chunk; ++i) {
      r.add_coroutine(a);
    }
    // Past the chunk: a thread or a coroutine of b first, then a mix long
    // enough for the walk to be handed on several times.
    std::string kinds = thread_first ? "t" : "b";
    for (int i = 0; i < 100; ++i) {
      kinds += i % 40 == 20 ? "tab" : "ab";
    }
    for (const char kind : kinds) {
      if (kind == 't') {
        r.add_thread();
      } else {
        r.add_coroutine(kind == 'a' ? a : b);
      }
    }
    EXPECT_TRUE(r.ch.close());
    r.wait_for_all();
    EXPECT_FALSE(r.ch.close());
  }
}

TEST(channel, a_long_close_from_a_worker_of_the_waiters_pool_wakes_a_thread_behind_them_itself) {
  // The pool's one worker closes and then waits for the thread queued
  // behind the pool's coroutines: had close() left that thread to a walk
  // on this worker's deque, the walk would sit behind the waiting job.
  queued_receivers r;
  fjord::pool a(fjord::pool_options{.workers = 1});
  for (int i = 0; i <= own_chunk; ++i) {
    r.add_coroutine(a);
  }
  r.add_thread();
  std::atomic<bool> saw_thread{false};
  a.post([&] {
    EXPECT_TRUE(r.ch.close());
    const auto give_up = std::chrono::steady_clock::now() + 10s;
    while (r.threads_ended.load() == 0 && std::chrono::steady_clock::now() < give_up) {
      std::this_thread::yield();
    }
    saw_thread.store(r.threads_ended.load() == 1);
  });
  r.wait_for_all();
  a.wait_idle();
  EXPECT_TRUE(saw_thread.load());
  EXPECT_EQ(r.coroutines_ended.load(), own_chunk + 1);
}

TEST(channel, a_long_close_wakes_a_thread_behind_the_coroutines_of_a_paused_pool) {
  // The waiters' pool is paused: close() does not leave the thread behind
  // them to a walk that pool would run only after resume().
  queued_receivers r;
  fjord::pool a(fjord::pool_options{.workers = 1});
  for (int i = 0; i <= own_chunk; ++i) {
    r.add_coroutine(a);
  }
  r.add_thread();
  a.pause();
  EXPECT_TRUE(r.ch.close());
  r.join_threads();  // hangs if the thread waits for the paused pool
  EXPECT_EQ(r.threads_ended.load(), 1);
  a.resume();
  a.wait_idle();
  EXPECT_EQ(r.coroutines_ended.load(), own_chunk + 1);
}

// During static destruction, after the default pool has ended at exit
// (leaving behind the coroutines still waiting on it), closes a channel on
// which more of that pool's coroutines wait than close() claims itself,
// followed by a thread; exits 42 if the thread's receive ended.
struct closes_behind_an_ended_pool_at_exit {
  queued_receivers r;
  ~closes_behind_an_ended_pool_at_exit() {
    r.ch.close();
    const auto give_up = std::chrono::steady_clock::now() + 5s;
    while (r.threads_ended.load() == 0 && std::chrono::steady_clock::now() < give_up) {
      std::this_thread::yield();
    }
    std::_Exit(r.threads_ended.load() == 1 ? 42 : 1);
  }
};

TEST(channel, a_long_close_at_exit_wakes_a_thread_behind_the_coroutines_of_the_ended_default_pool) {
  // A walk handed to the ended pool would never run: the closer walks.
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        static closes_behind_an_ended_pool_at_exit closer;  // made before the pool: outlives it
        for (int i = 0; i <= own_chunk; ++i) {
          closer.r.add_coroutine(fjord::default_pool());
        }
        closer.r.add_thread();
        std::exit(0);  // NOLINT(concurrency-mt-unsafe): the test is what exit does
      },
      ::testing::ExitedWithCode(42), "");
}

TEST(channel, a_pool_destroyed_right_after_a_long_close_runs_every_woken_process_first) {
  // The walk is work the pool can see, so the pool does not end before
  // it: its destructor returns only after every process ran on.
  constexpr int processes = 5000;
  for (int round = 0; round < 3; ++round) {
    std::atomic<int> ended{0};
    {
      fjord::pool p(fjord::pool_options{.workers = 2});
      fjord::channel<int> gate(0);
      auto process = [&ended](fjord::channel<int> g) -> fjord::task<void> {
        (void)co_await g.receive();
        ended.fetch_add(1);
      };
      for (int i = 0; i < processes; ++i) {
        fjord::go(p, process, gate);
      }
      while (fjord::detail::pool_access::core(p).waiting_coroutines() != processes) {
        std::this_thread::yield();
      }
      EXPECT_TRUE(gate.close());
    }
    EXPECT_EQ(ended.load(), processes);
  }
}

// A worker that runs a closing walk resumes the processes of its chunk
// itself, one after another inside the walk's job (resume_chain), when no
// worker is idle to share them. Those not resumed yet must stay where the
// pool's other workers find them.
TEST(channel, a_process_woken_by_a_long_close_may_block_its_thread_until_the_next_one_runs) {
  // The first process the walk wakes blocks its thread until the one queued
  // right behind it, in the same chunk, has run: only the other worker can
  // run that one. While the walk starts, the other worker is kept busy, so
  // the walking worker resumes the chunk itself.
  fjord::pool p(fjord::pool_options{.workers = 2});
  std::atomic<bool> holding{false};
  std::atomic<bool> let_go{false};
  p.post([&] {
    holding.store(true);
    while (!let_go.load()) {
      std::this_thread::yield();
    }
  });
  while (!holding.load()) {
    std::this_thread::yield();
  }
  // The other worker queues the receives, alone, one at a time.
  fjord::channel<int> ch(0);
  std::atomic<int> ended{0};
  std::atomic<bool> second_ran{false};
  std::atomic<bool> first_saw_second{false};
  auto process = [&](fjord::channel<int> c, int i) -> fjord::task<void> {
    const std::optional<int> v = co_await c.receive();
    if (i == own_chunk) {
      let_go.store(true);
      const auto give_up = std::chrono::steady_clock::now() + 20s;
      while (!second_ran.load() && std::chrono::steady_clock::now() < give_up) {
        std::this_thread::yield();
      }
      first_saw_second.store(second_ran.load());
    } else if (i == own_chunk + 1) {
      second_ran.store(true);
    }
    if (!v) {
      ended.fetch_add(1);
    }
  };
  constexpr int total = own_chunk + 2 * static_cast<int>(fjord::detail::closing_walk::chunk);
  for (int i = 0; i < total; ++i) {
    queue_one_receiver(ch, [&] { fjord::go(p, process, ch, i); });
  }
  EXPECT_TRUE(ch.close());
  const auto give_up = std::chrono::steady_clock::now() + 60s;
  while (ended.load() != total && std::chrono::steady_clock::now() < give_up) {
    std::this_thread::yield();
  }
  let_go.store(true);  // had the first process never run
  p.wait_idle();
  EXPECT_TRUE(first_saw_second.load());
  EXPECT_EQ(ended.load(), total);
}

TEST(channel, processes_woken_by_a_long_close_run_once_whatever_they_do_next) {
  // On one worker and on two, the woken processes of a long close:
  // - end at once (the walking worker goes from one to the next);
  // - or first start a child process (which lands on the worker's deque,
  //   above what is left of the chunk, and goes first) and then wait again
  //   (yield: back through the pool's queues);
  // - or block on a second channel, closed once all have reached it.
  // Every process, and every child, runs on exactly once.
  enum class next_step { end, start_a_child_and_yield, wait_again };
  for (const next_step step :
       {next_step::end, next_step::start_a_child_and_yield, next_step::wait_again}) {
    for (const std::size_t workers : {1, 2}) {
      fjord::pool p(fjord::pool_options{.workers = workers});
      fjord::channel<int> gate(0);
      fjord::channel<int> second_gate(0);
      std::atomic<int> waiting{0};
      std::atomic<int> at_second_gate{0};
      std::atomic<int> children{0};
      std::atomic<int> ended{0};
      auto child = [&]() -> fjord::task<void> {
        children.fetch_add(1);
        co_return;
      };
      auto process = [&](int) -> fjord::task<void> {
        co_await p.schedule();
        waiting.fetch_add(1);
        (void)co_await gate.receive();
        if (step == next_step::start_a_child_and_yield) {
          fjord::go(p, child);
          co_await fjord::yield();
        } else if (step == next_step::wait_again) {
          at_second_gate.fetch_add(1);
          (void)co_await second_gate.receive();
        }
        ended.fetch_add(1);
      };
      std::thread second_closer;
      if (step == next_step::wait_again) {
        second_closer = std::thread([&] {
          while (at_second_gate.load() != waiters_past_one_chain) {
            std::this_thread::yield();
          }
          std::this_thread::sleep_for(5ms);
          EXPECT_TRUE(second_gate.close());
        });
      }
      close_from_outside_while_all_wait(process, waiting, [&] { return gate.close(); });
      if (second_closer.joinable()) {
        second_closer.join();
      }
      p.wait_idle();
      const int expected_children =
          step == next_step::start_a_child_and_yield ? waiters_past_one_chain : 0;
      EXPECT_EQ(ended.load(), waiters_past_one_chain) << workers << " workers";
      EXPECT_EQ(children.load(), expected_children) << workers << " workers";
    }
  }
}

TEST(channel, a_rendezvous_send_waits_for_its_receiver) {
  fjord::pool p(fjord::pool_options{.workers = 2});
  fjord::channel<int> ch(0);
  std::atomic<bool> sent{false};
  std::thread sender([&] {
    ch.blocking_send(42);
    sent = true;
  });
  std::this_thread::sleep_for(20ms);
  EXPECT_FALSE(sent.load());
  EXPECT_EQ(ch.blocking_receive(), 42);
  sender.join();
  EXPECT_TRUE(sent.load());
}

// Waiters are served first come, first served: senders queued on a full
// channel put their values in in the order they came, ahead of anyone who
// comes later (here on one thread, so the order of arrival is certain).
TEST(channel, waiting_senders_are_served_in_the_order_they_came) {
  // 1: a small buffer under the lock; 16: the lock-free ring; 100000: a
  // buffer that grows under the lock.
  for (std::size_t capacity : {1, 16, 100000}) {
    fjord::channel<int> ch(capacity);
    for (std::size_t i = 0; i < capacity; ++i) {
      ASSERT_EQ(ch.try_send(0), fjord::channel_status::ok);
    }
    std::vector<int> order;
    auto sender = [](fjord::channel<int> c, int v) -> fjord::task<void> { co_await c.send(v); };
    auto receiver = [&](fjord::channel<int> c) -> fjord::task<void> {
      EXPECT_EQ(c.try_send(9), fjord::channel_status::full);  // later: no room, no queue jump
      for (std::size_t i = 0; i < capacity + 3; ++i) {
        order.push_back(*co_await c.receive());
      }
    };
    fjord::sync_wait(fjord::when_all(sender(ch, 1), sender(ch, 2), sender(ch, 3), receiver(ch)));
    order.erase(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(capacity));
    EXPECT_EQ(order, (std::vector<int>{1, 2, 3})) << "capacity " << capacity;
  }
}

TEST(channel, coroutines_and_threads_pass_values_both_ways) {
  fjord::pool p(fjord::pool_options{.workers = 2});
  for (std::size_t capacity : {0, 1, 16}) {
    fjord::channel<int> to_coroutine(capacity);
    fjord::channel<int> to_thread(capacity);
    auto echo = [](fjord::channel<int> in, fjord::channel<int> out) -> fjord::task<void> {
      while (std::optional<int> v = co_await in.receive()) {
        co_await out.send(*v * 2);
      }
      out.close();
    };
    fjord::spawn(p, echo(to_coroutine, to_thread));
    std::thread feeder([&] {
      for (int i = 0; i < 1000; ++i) {
        to_coroutine.blocking_send(i);
      }
      to_coroutine.close();
    });
    int expected = 0;
    while (std::optional<int> v = to_thread.blocking_receive()) {
      ASSERT_EQ(*v, expected * 2);
      ++expected;
    }
    feeder.join();
    EXPECT_EQ(expected, 1000) << "capacity " << capacity;
  }
}

TEST(channel, move_only_values_travel_and_nothing_leaks) {
  {
    fjord::channel<std::unique_ptr<int>> ch(2);
    ASSERT_EQ(ch.try_send(std::make_unique<int>(5)), fjord::channel_status::ok);
    auto p = std::make_unique<int>(6);
    ASSERT_EQ(ch.try_send(std::move(p)), fjord::channel_status::ok);
    EXPECT_EQ(p, nullptr);  // NOLINT(bugprone-use-after-move): sent, so moved from
    auto q = std::make_unique<int>(7);
    ASSERT_EQ(ch.try_send(std::move(q)), fjord::channel_status::full);
    ASSERT_NE(q, nullptr);  // NOLINT(bugprone-use-after-move): not sent, so untouched
    EXPECT_EQ(**ch.try_receive(), 5);
  }
  ASSERT_EQ(counted::live.load(), 0);
  {
    fjord::channel<counted> ch(8);
    for (int i = 0; i < 8; ++i) {
      ASSERT_EQ(ch.try_send(counted(i)), fjord::channel_status::ok);
    }
    EXPECT_EQ(counted::live.load(), 8);
    EXPECT_EQ(ch.try_receive()->value, 0);
    EXPECT_EQ(counted::live.load(), 7);
    ch.close();
    auto failed = [](fjord::channel<counted> c) -> fjord::task<void> {
      co_await c.send(counted(99));
    };
    EXPECT_THROW(fjord::sync_wait(failed(ch)), fjord::channel_closed);
    EXPECT_EQ(counted::live.load(), 7);  // the failed send's value is gone
  }
  EXPECT_EQ(counted::live.load(), 0);  // buffered values die with the channel
}

TEST(channel, batch_forms_move_as_much_as_fits) {
  fjord::channel<int> ch(5);
  std::vector<int> in{1, 2, 3, 4, 5, 6, 7};
  EXPECT_EQ(ch.try_send_n(in.begin(), in.size()), 5U);
  std::vector<int> out;
  EXPECT_EQ(ch.try_receive_n(std::back_inserter(out), 3), 3U);
  EXPECT_EQ(out, (std::vector<int>{1, 2, 3}));
  EXPECT_EQ(ch.try_send_n(in.begin() + 5, 2), 2U);
  EXPECT_EQ(ch.try_receive_n(std::back_inserter(out), 100), 4U);
  EXPECT_EQ(out, (std::vector<int>{1, 2, 3, 4, 5, 6, 7}));

  fjord::pool p(fjord::pool_options{.workers = 2});
  fjord::channel<int> pipe(4);
  std::vector<int> many(1000);
  for (int i = 0; i < 1000; ++i) {
    many[static_cast<std::size_t>(i)] = i;
  }
  auto producer = [&]() -> fjord::task<void> {
    co_await pipe.send_n(many.begin(), many.size());
    pipe.close();
  };
  std::vector<int> got;
  auto consumer = [&]() -> fjord::task<void> {
    while (co_await pipe.receive_n(std::back_inserter(got), 64) != 0) {
    }
  };
  std::vector<fjord::task<void>> both;
  both.push_back(producer());
  both.push_back(consumer());
  fjord_test::run_together(p, std::move(both));
  EXPECT_EQ(got, many);
}

// Every value sent arrives exactly once, whatever the capacity, with
// coroutines on two workers and plain threads on both sides at once.
TEST(channel, many_producers_and_consumers_deliver_each_value_exactly_once) {
  constexpr int producers = 4;
  constexpr int per_producer = 20000;
  fjord::pool p(fjord::pool_options{.workers = 2});
  // 0: rendezvous; 1, 3: small, under the lock; 64, 1000: the lock-free
  // ring (1000: not a power of two); 100000: more than the ring takes, a
  // buffer that grows under the lock.
  for (std::size_t capacity : {0, 1, 3, 64, 1000, 100000}) {
    fjord::channel<int> ch(capacity);
    std::vector<std::atomic<int>> seen(std::size_t{producers} * per_producer);
    std::atomic<int> producers_left{producers};
    auto produce = [&](int id) -> fjord::task<void> {
      for (int i = 0; i < per_producer; ++i) {
        co_await ch.send(id * per_producer + i);
      }
      if (producers_left.fetch_sub(1) == 1) {
        ch.close();
      }
    };
    auto consume = [&]() -> fjord::task<void> {
      while (std::optional<int> v = co_await ch.receive()) {
        seen[static_cast<std::size_t>(*v)].fetch_add(1);
      }
    };
    std::vector<fjord::task<void>> tasks;
    for (int i = 0; i < producers - 1; ++i) {
      tasks.push_back(produce(i));
    }
    tasks.push_back(consume());
    tasks.push_back(consume());
    std::thread thread_producer([&] {
      for (int i = 0; i < per_producer; ++i) {
        ch.blocking_send((producers - 1) * per_producer + i);
      }
      if (producers_left.fetch_sub(1) == 1) {
        ch.close();
      }
    });
    std::thread thread_consumer([&] {
      while (std::optional<int> v = ch.blocking_receive()) {
        seen[static_cast<std::size_t>(*v)].fetch_add(1);
      }
    });
    fjord_test::run_together(p, std::move(tasks));
    thread_producer.join();
    thread_consumer.join();
    for (std::size_t i = 0; i < seen.size(); ++i) {
      ASSERT_EQ(seen[i].load(), 1) << "value " << i << ", capacity " << capacity;
    }
  }
}

// A single producer's values arrive in the order sent, even to several
// consumers (each sees an increasing sequence).
TEST(channel, one_producers_values_stay_in_order) {
  fjord::pool p(fjord::pool_options{.workers = 2});
  fjord::channel<int> ch(8);
  std::atomic<bool> ordered{true};
  auto produce = [&]() -> fjord::task<void> {
    for (int i = 0; i < 50000; ++i) {
      co_await ch.send(i);
    }
    ch.close();
  };
  auto consume = [&]() -> fjord::task<void> {
    int last = -1;
    while (std::optional<int> v = co_await ch.receive()) {
      if (*v <= last) {
        ordered = false;
      }
      last = *v;
    }
  };
  std::vector<fjord::task<void>> tasks;
  tasks.push_back(produce());
  tasks.push_back(consume());
  tasks.push_back(consume());
  fjord_test::run_together(p, std::move(tasks));
  EXPECT_TRUE(ordered.load());
}

// Many senders and receivers arriving at one rendezvous channel at once.
TEST(channel, a_stampede_on_a_rendezvous_channel_pairs_everyone) {
  fjord::pool p(fjord::pool_options{.workers = 2});
  fjord::channel<int> ch(0);
  constexpr int n = 2000;
  std::atomic<long> sum{0};
  auto send = [&](int i) -> fjord::task<void> { co_await ch.send(i); };
  auto receive = [&]() -> fjord::task<void> { sum.fetch_add(*co_await ch.receive()); };
  std::vector<fjord::task<void>> tasks;
  for (int i = 0; i < n; ++i) {
    tasks.push_back(receive());
    tasks.push_back(send(i));
  }
  fjord_test::run_together(p, std::move(tasks));
  EXPECT_EQ(sum.load(), static_cast<long>(n) * (n - 1) / 2);
}

// close() racing senders and receivers: what was sent successfully is
// received exactly once; nothing else arrives.
TEST(channel, close_racing_sends_and_receives_loses_nothing) {
  fjord::pool p(fjord::pool_options{.workers = 2});
  // Capacities 0, 1, 2 (under the lock) and 16 (the lock-free ring).
  for (int round = 0; round < 24; ++round) {
    const std::size_t capacities[] = {0, 1, 2, 16};
    fjord::channel<counted> ch(capacities[round % 4]);
    std::atomic<long> sent{0};
    std::atomic<long> received{0};
    auto produce = [&](int id) -> fjord::task<void> {
      try {
        for (int i = 0;; ++i) {
          co_await ch.send(counted(id + i));
          sent.fetch_add(1);
        }
      } catch (const fjord::channel_closed&) {
      }
    };
    auto consume = [&]() -> fjord::task<void> {
      while (co_await ch.receive()) {
        received.fetch_add(1);
      }
    };
    std::vector<fjord::task<void>> tasks;
    for (int i = 0; i < 3; ++i) {
      tasks.push_back(produce(i));
      tasks.push_back(consume());
    }
    std::thread closer([&] {
      std::this_thread::sleep_for(std::chrono::microseconds(100 * round));
      ch.close();
    });
    fjord_test::run_together(p, std::move(tasks));
    closer.join();
    EXPECT_EQ(sent.load(), received.load());
  }
  EXPECT_EQ(counted::live.load(), 0);
}

// An iterator over ints whose k-th dereference throws.
struct throwing_source {
  using value_type = int;
  using difference_type = std::ptrdiff_t;
  int* values = nullptr;
  int throw_at = 0;
  int* reads = nullptr;
  int& operator*() const {
    if ((*reads)++ == throw_at) {
      throw std::runtime_error("source failed");
    }
    return *values;
  }
  throwing_source& operator++() {
    ++values;
    return *this;
  }
  throwing_source operator++(int) {
    throwing_source old = *this;
    ++values;
    return old;
  }
  bool operator==(const throwing_source& o) const { return values == o.values; }
};

// Review defect: values handed to waiting receivers before a later one
// throws must still wake those receivers.
TEST(channel, a_batch_send_that_throws_still_wakes_the_receivers_it_served) {
  fjord::channel<int> ch(0);
  std::optional<int> got;
  std::thread receiver([&] { got = ch.blocking_receive(); });
  std::this_thread::sleep_for(20ms);  // the receiver waits by now (if not, nothing is sent)
  int values[2] = {7, 8};
  int reads = 0;
  EXPECT_THROW((void)ch.try_send_n(throwing_source{values, 1, &reads}, 2), std::runtime_error);
  if (reads == 1) {
    ch.close();  // the receiver was not waiting yet: release it
  }
  receiver.join();  // hangs without the fix
  if (got) {
    EXPECT_EQ(*got, 7);
  }
}

// Review defect: a batch receive whose output throws must wake the senders
// it served, and must not hold the lock while user code runs.
TEST(channel, a_batch_receive_whose_output_throws_still_wakes_the_senders_it_served) {
  fjord::channel<int> ch(1);
  ASSERT_EQ(ch.try_send(1), fjord::channel_status::ok);
  std::thread sender([&] { ch.blocking_send(2); });
  std::this_thread::sleep_for(20ms);  // the sender waits for room by now
  struct throwing_sink {
    using difference_type = std::ptrdiff_t;
    const fjord::channel<int>* ch;
    throwing_sink& operator*() { return *this; }
    throwing_sink& operator=(int) {
      EXPECT_LE(ch->size(), 1U);  // takes the channel's lock: not held here
      throw std::runtime_error("sink failed");
    }
    throwing_sink& operator++() { return *this; }
    throwing_sink operator++(int) { return *this; }
  };
  EXPECT_THROW((void)ch.try_receive_n(throwing_sink{&ch}, 2), std::runtime_error);
  sender.join();  // hangs without the fix
  ch.close();
  int left = 0;
  while (ch.try_receive()) {
    ++left;
  }
  EXPECT_LE(left, 1);
}

}  // namespace
