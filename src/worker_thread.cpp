// Worker threads with a stack of their own size, and stack overflows
// reported as such (see include/fjord/detail/worker_thread.hpp).

#include "fjord/detail/worker_thread.hpp"

#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <new>

#include "fjord/detail/config.hpp"

namespace fjord::detail {

namespace {

// What the signal handler reads: plain data in initial-exec TLS, so reading
// it from the handler is async-signal-safe.
struct stack_bounds {
  std::uintptr_t low = 0;   // lowest usable address
  std::uintptr_t high = 0;  // one past the highest
  char name[16] = {};
};
__attribute__((tls_model("initial-exec"))) constinit thread_local stack_bounds this_stack{};

constexpr std::size_t alternate_stack_size = std::size_t{64} << 10;

struct sigaction previous_action {};

void write_all(const char* text) noexcept {
  std::size_t left = std::strlen(text);
  while (left > 0) {
    const ssize_t n = ::write(STDERR_FILENO, text, left);
    if (n <= 0) {
      return;
    }
    text += n;
    left -= static_cast<std::size_t>(n);
  }
}

void on_segv(int sig, siginfo_t* info, void* context) noexcept {
  const auto address = reinterpret_cast<std::uintptr_t>(info->si_addr);
  const stack_bounds& b = this_stack;
  // Whether glibc counts the guard in the bounds it reports or not, a fault
  // within a guard's size of the lowest address is an overflow (the rest of
  // that range is mapped stack, which does not fault).
  if (b.high != 0 && address + stack_guard_size + 4096 >= b.low &&
      address < b.low + stack_guard_size) {
    write_all("fjord: stack overflow on worker thread ");
    write_all(b.name);
    write_all(" (raise fjord::pool_options::stack_size, or recurse less deeply)\n");
    ::signal(SIGABRT, SIG_DFL);
    ::abort();
  }
  // Not ours: hand it to whoever was there before, or to the default
  // action, which the faulting instruction meets again on return.
  if ((previous_action.sa_flags & SA_SIGINFO) != 0 && previous_action.sa_sigaction != nullptr) {
    previous_action.sa_sigaction(sig, info, context);
    return;
  }
  if (previous_action.sa_handler != SIG_DFL && previous_action.sa_handler != SIG_IGN &&
      previous_action.sa_handler != nullptr) {
    previous_action.sa_handler(sig);
    return;
  }
  ::signal(SIGSEGV, SIG_DFL);
}

[[maybe_unused]] void install_handler_once() noexcept {
  static std::once_flag once;
  std::call_once(once, [] {
    struct sigaction action {};
    action.sa_sigaction = &on_segv;
    action.sa_flags = SA_SIGINFO | SA_ONSTACK;
    sigemptyset(&action.sa_mask);
    ::sigaction(SIGSEGV, &action, &previous_action);
  });
}

// A caller's alternate signal stack, made by its first borrowed_stack_scope
// when it had none; freed when the thread exits.
struct caller_alternate_stack {
  bool checked = false;
  void* memory = nullptr;
  caller_alternate_stack() = default;
  caller_alternate_stack(const caller_alternate_stack&) = delete;
  caller_alternate_stack& operator=(const caller_alternate_stack&) = delete;
  ~caller_alternate_stack() {
    if (memory != nullptr) {
      stack_t off{};
      off.ss_flags = SS_DISABLE;
      ::sigaltstack(&off, nullptr);
      std::free(memory);
    }
  }
};
thread_local caller_alternate_stack caller_alternate;

}  // namespace

int start_worker_thread(pthread_t& thread, std::size_t stack_size, void (*entry)(void*),
                        void* arg) noexcept {
  pthread_attr_t attr;
  if (const int rc = pthread_attr_init(&attr); rc != 0) {
    return rc;
  }
  const long page = ::sysconf(_SC_PAGESIZE);
  const std::size_t page_size = page > 0 ? static_cast<std::size_t>(page) : 4096;
  const std::size_t rounded = (stack_size + page_size - 1) / page_size * page_size;
  int rc = pthread_attr_setstacksize(&attr, rounded);
  if (rc == 0) {
    rc = pthread_attr_setguardsize(&attr, stack_guard_size);
  }
  if (rc == 0) {
    // pthread entry points return void*; entry's signature is ours.
    struct start {
      void (*entry)(void*);
      void* arg;
    };
    auto* s = new (std::nothrow) start{entry, arg};
    if (s == nullptr) {
      rc = ENOMEM;
    } else {
      rc = pthread_create(
          &thread, &attr,
          [](void* p) -> void* {
            const start st = *static_cast<start*>(p);
            delete static_cast<start*>(p);
            st.entry(st.arg);
            return nullptr;
          },
          s);
      if (rc != 0) {
        delete s;
      }
    }
  }
  pthread_attr_destroy(&attr);
  return rc;
}

worker_thread_scope::worker_thread_scope(const char* name) noexcept {
  pthread_attr_t attr;
  if (pthread_getattr_np(pthread_self(), &attr) == 0) {
    void* low = nullptr;
    std::size_t size = 0;
    if (pthread_attr_getstack(&attr, &low, &size) == 0) {
      this_stack.low = reinterpret_cast<std::uintptr_t>(low);
      this_stack.high = this_stack.low + size;
    }
    pthread_attr_destroy(&attr);
  }
  std::strncpy(this_stack.name, name, sizeof(this_stack.name) - 1);
#if !FJORD_ASAN
  // The report needs a stack of its own: the thread's is exhausted.
  alternate_stack_ = std::malloc(alternate_stack_size);
  if (alternate_stack_ != nullptr) {
    stack_t alt{};
    alt.ss_sp = alternate_stack_;
    alt.ss_size = alternate_stack_size;
    if (::sigaltstack(&alt, nullptr) == 0) {
      install_handler_once();
    } else {
      std::free(alternate_stack_);
      alternate_stack_ = nullptr;
    }
  }
#endif
}

worker_thread_scope::~worker_thread_scope() {
  if (alternate_stack_ != nullptr) {
    stack_t off{};
    off.ss_flags = SS_DISABLE;
    ::sigaltstack(&off, nullptr);
    std::free(alternate_stack_);
  }
  this_stack = stack_bounds{};
}

borrowed_stack_scope::borrowed_stack_scope(std::uintptr_t low, std::uintptr_t high,
                                           const char* name) noexcept
    : saved_low_(this_stack.low), saved_high_(this_stack.high) {
  std::memcpy(saved_name_, this_stack.name, sizeof(saved_name_));
  this_stack.low = low;
  this_stack.high = high;
  std::memset(this_stack.name, 0, sizeof(this_stack.name));
  std::strncpy(this_stack.name, name, sizeof(this_stack.name) - 1);
#if !FJORD_ASAN
  caller_alternate_stack& alt = caller_alternate;
  if (!alt.checked) {
    alt.checked = true;
    stack_t current{};
    if (::sigaltstack(nullptr, &current) == 0 && (current.ss_flags & SS_DISABLE) != 0) {
      alt.memory = std::malloc(alternate_stack_size);
      if (alt.memory != nullptr) {
        stack_t mine{};
        mine.ss_sp = alt.memory;
        mine.ss_size = alternate_stack_size;
        if (::sigaltstack(&mine, nullptr) != 0) {
          std::free(alt.memory);
          alt.memory = nullptr;
        }
      }
    }
  }
  install_handler_once();
#endif
}

borrowed_stack_scope::~borrowed_stack_scope() {
  this_stack.low = saved_low_;
  this_stack.high = saved_high_;
  std::memcpy(this_stack.name, saved_name_, sizeof(saved_name_));
}

std::size_t stack_in_use() noexcept {
  const stack_bounds& b = this_stack;
  if (b.high == 0) {
    return 0;
  }
  const auto here = reinterpret_cast<std::uintptr_t>(__builtin_frame_address(0));
  return here < b.high ? b.high - here : 0;
}

std::uintptr_t stack_top_of_this_thread() noexcept {
  return this_stack.high;
}

std::size_t stack_size_of_this_thread() noexcept {
  const stack_bounds& b = this_stack;
  return b.high - b.low;
}

}  // namespace fjord::detail
