// The stack switch of borrowed_stack: see include/fjord/detail/borrowed_stack.hpp.

#include "fjord/detail/borrowed_stack.hpp"

#include <sys/mman.h>
#include <unistd.h>

#include "fjord/detail/config.hpp"
#include "fjord/detail/worker_thread.hpp"

#if FJORD_ASAN
#include <sanitizer/common_interface_defs.h>
#include <sanitizer/lsan_interface.h>
#endif

#if defined(__x86_64__) && defined(__ELF__)
// fjord_detail_run_on_stack(arg, fn, top): calls fn(arg) with the stack
// pointer at top (16-byte aligned, so fn starts with the alignment the ABI
// gives any callee) and returns on the caller's stack. rbp keeps the old
// stack pointer across the call (callee-saved, so fn preserves it), and the
// CFI names rbp as the frame's base: a debugger's or profiler's backtrace
// goes on from fn's frames into the caller's.
asm(R"(
    .pushsection .text
    .p2align 4
    .globl fjord_detail_run_on_stack
    .hidden fjord_detail_run_on_stack
    .type fjord_detail_run_on_stack, @function
fjord_detail_run_on_stack:
    .cfi_startproc
    pushq %rbp
    .cfi_def_cfa_offset 16
    .cfi_offset %rbp, -16
    movq %rsp, %rbp
    .cfi_def_cfa_register %rbp
    movq %rdx, %rsp
    callq *%rsi
    movq %rbp, %rsp
    popq %rbp
    .cfi_def_cfa %rsp, 8
    ret
    .cfi_endproc
    .size fjord_detail_run_on_stack, .-fjord_detail_run_on_stack
    .popsection
)");
extern "C" void fjord_detail_run_on_stack(void* arg, void (*fn)(void*) noexcept,
                                          void* top) noexcept;
#endif

namespace fjord::detail {

namespace {

// What run() hands to the function that starts on the new stack.
struct switch_frame {
  void (*fn)(void*) noexcept;
  void* arg;
#if FJORD_ASAN
  const void* caller_bottom = nullptr;
  std::size_t caller_size = 0;
#endif
};

void on_new_stack(void* p) noexcept {
  auto* frame = static_cast<switch_frame*>(p);
#if FJORD_ASAN
  // AddressSanitizer learns that this thread's stack is now ours (and which
  // it was), so that an exception thrown and caught in fn does not make it
  // unpoison the wrong range; on the way back, this stack's frames end.
  __sanitizer_finish_switch_fiber(nullptr, &frame->caller_bottom, &frame->caller_size);
  // LeakSanitizer scans a thread's current stack only: the caller's frames,
  // which may hold the only pointer to an object while fn runs (or calls
  // std::exit), are scanned as a root region meanwhile.
  __lsan_register_root_region(frame->caller_bottom, frame->caller_size);
#endif
  frame->fn(frame->arg);
#if FJORD_ASAN
  __lsan_unregister_root_region(frame->caller_bottom, frame->caller_size);
  __sanitizer_start_switch_fiber(nullptr, frame->caller_bottom, frame->caller_size);
#endif
}

}  // namespace

borrowed_stack::~borrowed_stack() {
  if (base_ != nullptr) {
    ::munmap(base_, guard_ + size_);
  }
}

bool borrowed_stack::ready() noexcept {
  if constexpr (!supported) {
    return false;
  }
  if (base_ != nullptr) {
    return true;
  }
  const auto page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
  const std::size_t guard = (stack_guard_size + page - 1) / page * page;
  size_ = (size_ + page - 1) / page * page;
  // Reserved, not committed: only the pages a call touches cost memory.
  void* p = ::mmap(nullptr, guard + size_, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_STACK, -1, 0);
  if (p == MAP_FAILED) {
    return false;
  }
  if (::mprotect(p, guard, PROT_NONE) != 0) {
    ::munmap(p, guard + size_);
    return false;
  }
  // Small pages: a huge page would commit 2 MiB at a call's first touch.
  static_cast<void>(::madvise(p, guard + size_, MADV_NOHUGEPAGE));
  base_ = p;
  guard_ = guard;
  return true;
}

void borrowed_stack::run(void (*fn)(void*) noexcept, void* arg) noexcept {
#if defined(__x86_64__) && defined(__ELF__)
  switch_frame frame{fn, arg};
#if FJORD_ASAN
  void* fake_stack = nullptr;
  __sanitizer_start_switch_fiber(&fake_stack, static_cast<char*>(base_) + guard_, size_);
#endif
  // The mapping and both sizes are whole pages: the top is 16-byte aligned.
  fjord_detail_run_on_stack(&frame, &on_new_stack, static_cast<char*>(base_) + guard_ + size_);
#if FJORD_ASAN
  __sanitizer_finish_switch_fiber(fake_stack, nullptr, nullptr);
#endif
#else
  fn(arg);  // not reached: ready() is false without the switch
#endif
}

}  // namespace fjord::detail
