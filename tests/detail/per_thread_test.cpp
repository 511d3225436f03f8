#include "fjord/detail/per_thread.hpp"

#include <gtest/gtest.h>

#include <array>
#include <atomic>
#include <thread>

#include "fjord/pool.hpp"
#include "fjord/sync_wait.hpp"
#include "fjord/task.hpp"

namespace {

using fjord::detail::per_thread;

// What a counted per-thread object saw of its own flag when destroyed.
std::atomic<int> destroyed{0};
std::atomic<int> gone_while_destroyed{0};

struct counted {
  int value = 0;
  counted() = default;
  counted(const counted&) = delete;
  counted& operator=(const counted&) = delete;
  ~counted() {
    destroyed.fetch_add(1);
    if (per_thread<counted>::gone() && per_thread<counted>::get() == nullptr) {
      gone_while_destroyed.fetch_add(1);
    }
  }
};

// Destroyed after per_thread<counted>'s object when made before it (thread
// exit destroys thread_locals in the reverse order of their construction).
std::atomic<int> late_checks{0};
struct checks_after_exit {
  checks_after_exit() = default;
  checks_after_exit(const checks_after_exit&) = delete;
  checks_after_exit& operator=(const checks_after_exit&) = delete;
  ~checks_after_exit() {
    if (per_thread<counted>::gone() && per_thread<counted>::get() == nullptr) {
      late_checks.fetch_add(1);
    }
  }
};

}  // namespace

TEST(per_thread, each_thread_gets_its_own_object_made_once) {
  counted* mine = per_thread<counted>::get();
  ASSERT_NE(mine, nullptr);
  EXPECT_EQ(per_thread<counted>::get(), mine);
  mine->value = 1;
  counted* other = nullptr;
  int other_value = -1;
  std::thread([&] {
    other = per_thread<counted>::get();
    other_value = other->value;
  }).join();
  EXPECT_NE(other, mine);
  EXPECT_EQ(other_value, 0);
  EXPECT_FALSE(per_thread<counted>::gone());
}

TEST(per_thread, the_flag_is_set_before_the_destructor_and_stays_readable_after_it) {
  const int destroyed_before = destroyed.load();
  const int gone_before = gone_while_destroyed.load();
  const int late_before = late_checks.load();
  std::thread([] {
    thread_local checks_after_exit late;
    static_cast<void>(&late);  // made first, so destroyed last
    static_cast<void>(per_thread<counted>::get());
  }).join();
  EXPECT_EQ(destroyed.load(), destroyed_before + 1);
  EXPECT_EQ(gone_while_destroyed.load(), gone_before + 1);
  EXPECT_EQ(late_checks.load(), late_before + 1);
}

TEST(per_thread, a_thread_that_never_asks_makes_nothing) {
  const int destroyed_before = destroyed.load();
  std::thread([] { EXPECT_FALSE(per_thread<counted>::gone()); }).join();
  EXPECT_EQ(destroyed.load(), destroyed_before);
}

// The per-thread caches fjord keeps this way, used from a thread_local
// destructor that runs after they are gone: nothing is lost or leaked
// (the ASan build checks the leaks).
namespace {

struct late_user {
  fjord::pool* pool = nullptr;
  std::atomic<int>* ran = nullptr;
  late_user() = default;
  late_user(const late_user&) = delete;
  late_user& operator=(const late_user&) = delete;
  ~late_user() {
    if (pool == nullptr) {
      return;
    }
    // A small callable (a lane slot), a large one (the job recycler) and a
    // coroutine frame (the frame allocator), all after their caches went.
    pool->post([r = ran] { r->fetch_add(1); });
    std::array<char, 256> big{};
    pool->post([r = ran, big] { r->fetch_add(1 + big[0]); });
    auto frame = []() -> fjord::task<int> { co_return 1; };
    ran->fetch_add(fjord::sync_wait(frame()));
  }
};

}  // namespace

TEST(per_thread, posts_and_frames_from_a_late_thread_local_destructor_still_work) {
  fjord::pool pool(fjord::pool_options{.workers = 2});
  std::atomic<int> ran{0};
  std::thread([&] {
    thread_local late_user late;
    late.pool = &pool;  // made first, so destroyed after every cache below
    late.ran = &ran;
    // Make this thread's caches: a lane, recycled job blocks, frames.
    pool.post([&] { ran.fetch_add(1); });
    std::array<char, 256> big{};
    pool.post([&ran, big] { ran.fetch_add(1 + big[0]); });
    auto frame = []() -> fjord::task<int> { co_return 1; };
    ran.fetch_add(fjord::sync_wait(frame()));
  }).join();
  pool.wait_idle();
  EXPECT_EQ(ran.load(), 6);
}
