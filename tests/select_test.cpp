#include "fjord/select.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <memory>
#include <optional>
#include <stop_token>
#include <string>
#include <thread>
#include <vector>

#include "fjord/channel.hpp"
#include "fjord/pool.hpp"
#include "fjord/spawn.hpp"
#include "fjord/sync_wait.hpp"
#include "fjord/task.hpp"
#include "fjord/when_all.hpp"
#include "support/run_together.hpp"

namespace {

using namespace std::chrono_literals;

TEST(select, takes_the_ready_case) {
  fjord::channel<int> a(1);
  fjord::channel<std::string> b(1);
  ASSERT_EQ(b.try_send("hello"), fjord::channel_status::ok);
  std::optional<int> x;
  std::optional<std::string> y;
  EXPECT_EQ(fjord::blocking_select(fjord::receive_from(a, x), fjord::receive_from(b, y)), 1U);
  EXPECT_EQ(y, "hello");
  EXPECT_FALSE(x.has_value());
}

TEST(select, a_send_case_sends) {
  fjord::channel<int> full(1);
  fjord::channel<int> room(1);
  ASSERT_EQ(full.try_send(1), fjord::channel_status::ok);
  EXPECT_EQ(fjord::blocking_select(fjord::send_to(full, 2), fjord::send_to(room, 3)), 1U);
  EXPECT_EQ(room.try_receive(), 3);
  EXPECT_EQ(full.try_receive(), 1);
  EXPECT_EQ(full.try_receive(), std::nullopt);  // the case not taken sent nothing
}

TEST(select, no_wait_is_taken_only_when_nothing_is_ready) {
  fjord::channel<int> a(1);
  std::optional<int> x;
  EXPECT_EQ(fjord::blocking_select(fjord::receive_from(a, x), fjord::no_wait()), 1U);
  ASSERT_EQ(a.try_send(5), fjord::channel_status::ok);
  EXPECT_EQ(fjord::blocking_select(fjord::receive_from(a, x), fjord::no_wait()), 0U);
  EXPECT_EQ(x, 5);
}

TEST(select, a_case_on_a_null_channel_is_never_ready) {
  fjord::channel<int> null;
  std::optional<int> x;
  EXPECT_EQ(fjord::blocking_select(fjord::receive_from(null, x), fjord::send_to(null, 1),
                                   fjord::no_wait()),
            2U);
  EXPECT_EQ(fjord::blocking_select(fjord::receive_from(null, x), fjord::timeout(1ms)), 1U);
}

TEST(select, a_closed_channel_is_ready_for_receive_and_an_error_for_send) {
  fjord::channel<int> c(0);
  c.close();
  std::optional<int> x = 3;
  EXPECT_EQ(fjord::blocking_select(fjord::receive_from(c, x)), 0U);
  EXPECT_FALSE(x.has_value());
  EXPECT_THROW((void)fjord::blocking_select(fjord::send_to(c, 1)), fjord::channel_closed);
}

TEST(select, times_out) {
  fjord::channel<int> never(0);
  std::optional<int> x;
  const auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(fjord::blocking_select(fjord::receive_from(never, x), fjord::timeout(30ms)), 1U);
  EXPECT_GE(std::chrono::steady_clock::now() - start, 30ms);
  auto coroutine = [&]() -> fjord::task<std::size_t> {
    co_return co_await fjord::select(fjord::receive_from(never, x),
                                     fjord::timeout_at(std::chrono::steady_clock::now() + 10ms));
  };
  EXPECT_EQ(fjord::sync_wait(coroutine()), 1U);
  // A duration that overflows the clock waits forever, not never.
  std::thread sender([&] {
    std::this_thread::sleep_for(10ms);
    never.blocking_send(1);
  });
  EXPECT_EQ(fjord::blocking_select(fjord::receive_from(never, x),
                                   fjord::timeout(std::chrono::hours::max())),
            0U);
  sender.join();
}

TEST(select, a_stop_request_ends_the_wait) {
  fjord::pool p(fjord::pool_options{.workers = 2});
  fjord::channel<int> never(0);
  std::stop_source source;
  std::atomic<int> result{-1};
  auto waiter = [&]() -> fjord::task<void> {
    std::optional<int> x;
    result = static_cast<int>(co_await fjord::select(fjord::receive_from(never, x),
                                                     fjord::when_stopped(source.get_token())));
  };
  std::thread stopper([&] {
    std::this_thread::sleep_for(10ms);
    source.request_stop();
  });
  fjord::sync_wait([&]() -> fjord::task<void> {
    co_await p.schedule();
    co_await waiter();
  }());
  stopper.join();
  EXPECT_EQ(result.load(), 1);
  // Already stopped: ready at once, also from a thread.
  std::optional<int> x;
  EXPECT_EQ(fjord::blocking_select(fjord::receive_from(never, x),
                                   fjord::when_stopped(source.get_token())),
            1U);
}

// When several cases are ready, each is picked with equal probability.
// 20,000 selects over two always-ready channels: the count of either is
// binomial with mean 10,000 and standard deviation ~71, so [9,000, 11,000]
// (14 standard deviations) fails with probability below 1e-40, while a
// select that favours its first case lands far outside.
TEST(select, picks_uniformly_among_ready_cases) {
  fjord::channel<int> a(1);
  fjord::channel<int> b(1);
  int counts[2] = {0, 0};
  for (int i = 0; i < 20000; ++i) {
    (void)a.try_send(1);
    (void)b.try_send(2);
    std::optional<int> x;
    std::optional<int> y;
    ++counts[fjord::blocking_select(fjord::receive_from(a, x), fjord::receive_from(b, y))];
  }
  EXPECT_GE(counts[0], 9000);
  EXPECT_LE(counts[0], 11000);
}

// Several selects over the same channels, racing senders on other
// threads: each value is taken by exactly one case of one select.
TEST(select, exactly_one_case_commits_under_contention) {
  fjord::pool p(fjord::pool_options{.workers = 2});
  for (std::size_t capacity : {0, 4, 16}) {  // 16: the lock-free ring
    fjord::channel<int> a(capacity);
    fjord::channel<int> b(capacity);
    fjord::channel<int> done(0);
    constexpr int per_channel = 20000;
    std::vector<std::atomic<int>> seen(std::size_t{2} * per_channel);
    auto selector = [&]() -> fjord::task<void> {
      while (true) {
        std::optional<int> x;
        std::optional<int> y;
        std::optional<int> d;
        switch (co_await fjord::select(fjord::receive_from(a, x), fjord::receive_from(b, y),
                                       fjord::receive_from(done, d))) {
          case 0:
            seen[static_cast<std::size_t>(*x)].fetch_add(1);
            break;
          case 1:
            seen[static_cast<std::size_t>(*y)].fetch_add(1);
            break;
          default:
            co_return;  // done closed
        }
      }
    };
    std::vector<fjord::task<void>> selectors;
    for (int i = 0; i < 3; ++i) {
      selectors.push_back(selector());
    }
    std::thread sender_a([&] {
      for (int i = 0; i < per_channel; ++i) {
        a.blocking_send(i);
      }
    });
    std::thread sender_b([&] {
      for (int i = 0; i < per_channel; ++i) {
        b.blocking_send(per_channel + i);
      }
    });
    std::thread closer([&] {
      sender_a.join();
      sender_b.join();
      // Everything sent on a rendezvous channel was taken; a buffered one
      // may still hold values: the selectors drain them before done closes.
      while (a.size() + b.size() != 0) {
        std::this_thread::yield();
      }
      done.close();
    });
    fjord_test::run_together(p, std::move(selectors));
    closer.join();
    for (std::size_t i = 0; i < seen.size(); ++i) {
      ASSERT_EQ(seen[i].load(), 1) << "value " << i << ", capacity " << capacity;
    }
  }
}

// Selects that send and selects that receive, on both channels at once,
// beside plain sends and receives (on a buffered channel these take the
// lock-free path): the sends that commit are exactly the receives that
// commit.
TEST(select, sends_and_receives_in_selects_pair_up) {
  fjord::pool p(fjord::pool_options{.workers = 2});
  for (std::size_t capacity : {0, 3, 16}) {  // 16: the lock-free ring
    fjord::channel<int> a(capacity);
    fjord::channel<int> b(capacity);
    constexpr int rounds = 5000;
    constexpr int senders = 3;
    std::atomic<long> sent{0};
    std::atomic<long> received{0};
    std::atomic<int> senders_left{senders};
    auto sent_all = [&] {
      if (senders_left.fetch_sub(1) == 1) {
        a.close();
        b.close();
      }
    };
    auto sender = [&]() -> fjord::task<void> {
      for (int i = 1; i <= rounds; ++i) {
        (void)co_await fjord::select(fjord::send_to(a, i), fjord::send_to(b, i));
        sent.fetch_add(i);
      }
      sent_all();
    };
    auto plain_sender = [&]() -> fjord::task<void> {
      for (int i = 1; i <= rounds; ++i) {
        co_await (i % 2 == 0 ? a : b).send(i);
        sent.fetch_add(i);
      }
      sent_all();
    };
    auto receiver = [&]() -> fjord::task<void> {
      // A drained, closed channel is replaced by a null one, which a
      // select never picks (Go's nil channel).
      fjord::channel<int> from_a = a;
      fjord::channel<int> from_b = b;
      while (from_a || from_b) {
        std::optional<int> x;
        std::optional<int> y;
        const std::size_t i =
            co_await fjord::select(fjord::receive_from(from_a, x), fjord::receive_from(from_b, y));
        std::optional<int>& got = i == 0 ? x : y;
        if (got) {
          received.fetch_add(*got);
        } else {
          (i == 0 ? from_a : from_b) = fjord::channel<int>();
        }
      }
    };
    auto plain_receiver = [&]() -> fjord::task<void> {
      for (const fjord::channel<int>* c : {&a, &b}) {
        while (std::optional<int> v = co_await c->receive()) {
          received.fetch_add(*v);
        }
      }
    };
    std::vector<fjord::task<void>> tasks;
    tasks.push_back(sender());
    tasks.push_back(sender());
    tasks.push_back(plain_sender());
    tasks.push_back(receiver());
    tasks.push_back(receiver());
    tasks.push_back(plain_receiver());
    fjord_test::run_together(p, std::move(tasks));
    EXPECT_EQ(sent.load(), received.load()) << "capacity " << capacity;
    EXPECT_EQ(sent.load(), long{senders} * rounds * (rounds + 1) / 2);
  }
}

// close() racing a select that waits on the channel among others.
TEST(select, close_racing_a_waiting_select_wakes_it_once) {
  fjord::pool p(fjord::pool_options{.workers = 2});
  for (int round = 0; round < 200; ++round) {
    fjord::channel<int> a(0);
    fjord::channel<int> b(0);
    std::atomic<int> result{-1};
    auto waiter = [&]() -> fjord::task<void> {
      std::optional<int> x;
      std::optional<int> y;
      result = static_cast<int>(
          co_await fjord::select(fjord::receive_from(a, x), fjord::receive_from(b, y)));
    };
    std::thread closer([&] {
      a.close();
      b.close();
    });
    fjord::sync_wait([&]() -> fjord::task<void> {
      co_await p.schedule();
      co_await waiter();
    }());
    closer.join();
    EXPECT_TRUE(result.load() == 0 || result.load() == 1);
  }
}

// A close() long enough to take several holds of its lock (plain waits are
// claimed 256 at a time), with selects queued on the same channel: as in
// Go, nothing may win a select through another case once the channel is
// seen closed. Plain receivers woken by the close offer a value to every
// select through the selects' other channel; none may take it, since the
// selects (queued after them) were claimed in the first hold.
TEST(select, no_select_waiting_on_a_closing_channel_is_won_elsewhere_once_it_is_seen_closed) {
  fjord::pool p(fjord::pool_options{.workers = 2});
  constexpr int pairs = 1000;  // 2,000 waiters on the closing channel
  for (int round = 0; round < 8; ++round) {
    fjord::channel<int> closing(0);
    fjord::channel<int> other(0);
    std::atomic<int> waiting{0};
    std::atomic<int> by_close{0};
    std::atomic<int> handed{0};
    auto selecting = [&]() -> fjord::task<void> {
      co_await p.schedule();
      waiting.fetch_add(1);
      std::optional<int> x;
      std::optional<int> y;
      const std::size_t won =
          co_await fjord::select(fjord::receive_from(closing, x), fjord::receive_from(other, y));
      if (won == 0 && !x) {
        by_close.fetch_add(1);
      }
    };
    auto plain = [&]() -> fjord::task<void> {
      co_await p.schedule();
      waiting.fetch_add(1);
      if (!(co_await closing.receive()) && other.try_send(1) == fjord::channel_status::ok) {
        handed.fetch_add(1);  // a select won through `other` after the close was seen
      }
    };
    std::vector<fjord::task<void>> tasks;
    for (int i = 0; i < pairs; ++i) {
      tasks.push_back(plain());  // queued first: woken in the first chunks
    }
    for (int i = 0; i < pairs; ++i) {
      tasks.push_back(selecting());
    }
    std::thread closer([&] {
      while (waiting.load() != 2 * pairs) {
        std::this_thread::yield();
      }
      std::this_thread::sleep_for(5ms);  // the last ones have queued their waiters
      EXPECT_TRUE(closing.close());
    });
    fjord::sync_wait(fjord::when_all(std::move(tasks)));
    closer.join();
    EXPECT_EQ(handed.load(), 0);
    EXPECT_EQ(by_close.load(), pairs);
  }
}

// Go's closechan releases the receivers before the senders: a select
// waiting to send to and to receive from one channel completes by its
// receive (closed) when the channel is closed, and does not throw.
TEST(select, a_select_sending_and_receiving_on_a_channel_closed_under_it_completes_by_receive) {
  fjord::pool p(fjord::pool_options{.workers = 1});
  for (int round = 0; round < 20; ++round) {
    fjord::channel<int> ch(0);
    std::atomic<bool> about_to_wait{false};
    std::thread closer([&] {
      while (!about_to_wait.load()) {
        std::this_thread::yield();
      }
      std::this_thread::sleep_for(2ms);  // the select has queued both waiters
      EXPECT_TRUE(ch.close());
    });
    const std::size_t won = fjord::sync_wait([&]() -> fjord::task<std::size_t> {
      co_await p.schedule();
      std::optional<int> x;
      about_to_wait.store(true);
      try {
        const std::size_t i =
            co_await fjord::select(fjord::send_to(ch, 1), fjord::receive_from(ch, x));
        EXPECT_FALSE(x.has_value());
        co_return i;
      } catch (const fjord::channel_closed&) {
        co_return 0;  // completed by the send: wrong
      }
    }());
    closer.join();
    EXPECT_EQ(won, 1U);
  }
}

TEST(select, a_thread_select_waits_for_a_coroutine) {
  fjord::pool p(fjord::pool_options{.workers = 1});
  fjord::channel<int> a(0);
  fjord::channel<int> b(0);
  auto sender = [](fjord::channel<int> c) -> fjord::task<void> { co_await c.send(9); };
  fjord::spawn(p, sender(b));
  std::optional<int> x;
  std::optional<int> y;
  EXPECT_EQ(fjord::blocking_select(fjord::receive_from(a, x), fjord::receive_from(b, y)), 1U);
  EXPECT_EQ(y, 9);
}

// Review defect: a select keeps the channels of its cases alive, so a
// channel whose last outside handle goes while a select waits on it is not
// freed under the select (ASan checks this).
TEST(select, a_channel_dropped_by_everyone_else_lives_while_a_select_waits) {
  fjord::pool p(fjord::pool_options{.workers = 1});
  auto ch = std::make_unique<fjord::channel<int>>(0);
  std::atomic<bool> waiting{false};
  auto waiter = [&](const fjord::channel<int>& c) -> fjord::task<std::size_t> {
    co_await p.schedule();
    std::optional<int> x;
    auto receive = fjord::receive_from(c, x);  // holds its own handle from here
    waiting = true;
    co_return co_await fjord::select(std::move(receive), fjord::timeout(30ms));
  };
  std::thread dropper([&] {
    while (!waiting) {
      std::this_thread::yield();
    }
    ch.reset();  // the last handle outside the select
  });
  EXPECT_EQ(fjord::sync_wait(waiter(*ch)), 1U);
  dropper.join();
}

// docs/channels.md: a channel named in two cases is locked once (locking
// it twice would deadlock).
TEST(select, one_channel_in_two_cases_is_locked_once) {
  fjord::channel<int> c(1);
  std::optional<int> x;
  EXPECT_EQ(fjord::blocking_select(fjord::receive_from(c, x), fjord::send_to(c, 4)), 1U);
  EXPECT_EQ(fjord::blocking_select(fjord::receive_from(c, x), fjord::send_to(c, 5)), 0U);
  EXPECT_EQ(x, 4);
  std::optional<int> y;
  EXPECT_EQ(fjord::blocking_select(fjord::receive_from(c, x), fjord::receive_from(c, y),
                                   fjord::no_wait()),
            2U);
}

TEST(select, a_receive_case_empties_its_optional_when_another_case_wins) {
  fjord::channel<int> a(0);
  fjord::channel<int> b(1);
  ASSERT_EQ(b.try_send(2), fjord::channel_status::ok);
  std::optional<int> x = 5;
  std::optional<int> y;
  EXPECT_EQ(fjord::blocking_select(fjord::receive_from(a, x), fjord::receive_from(b, y)), 1U);
  EXPECT_FALSE(x.has_value());
  EXPECT_EQ(y, 2);
}

}  // namespace
