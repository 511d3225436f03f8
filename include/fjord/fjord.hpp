#pragma once

// Everything fjord offers, for programs that would rather not pick headers.
// Each header stands alone too (one concept each); including only the ones
// you use compiles faster.

/// @namespace fjord
/// fjord, a C++20 task-parallel runtime: one work-stealing scheduler under
/// fork-join, a thread pool, coroutine tasks, CSP channels and processes,
/// I/O, parallel algorithms, a scalable allocator and tracing. The README
/// gives the tour; each header documents one concept.

#include "fjord/algorithm.hpp"
#include "fjord/async_condition_variable.hpp"
#include "fjord/async_latch.hpp"
#include "fjord/async_mutex.hpp"
#include "fjord/async_semaphore.hpp"
#include "fjord/block_in_place.hpp"
#include "fjord/blocking.hpp"
#include "fjord/channel.hpp"
#include "fjord/channel_status.hpp"
#include "fjord/future.hpp"
#include "fjord/generator.hpp"
#include "fjord/go.hpp"
#include "fjord/invoke.hpp"
#include "fjord/io_deadline.hpp"
#include "fjord/io_status.hpp"
#include "fjord/ip_endpoint.hpp"
#include "fjord/join.hpp"
#include "fjord/pool.hpp"
#include "fjord/pool_options.hpp"
#include "fjord/pool_stats.hpp"
#include "fjord/priority.hpp"
#include "fjord/readiness.hpp"
#include "fjord/registered_fd.hpp"
#include "fjord/scalable_allocator.hpp"
#include "fjord/scalable_memory.hpp"
#include "fjord/scalable_memory_resource.hpp"
#include "fjord/select.hpp"
#include "fjord/shutdown_error.hpp"
#include "fjord/sleep.hpp"
#include "fjord/sleep_status.hpp"
#include "fjord/spawn.hpp"
#include "fjord/stop_token.hpp"
#include "fjord/sync_wait.hpp"
#include "fjord/task.hpp"
#include "fjord/task_group.hpp"
#include "fjord/tcp_listener.hpp"
#include "fjord/tcp_stream.hpp"
#include "fjord/timer.hpp"
#include "fjord/trace.hpp"
#include "fjord/udp_socket.hpp"
#include "fjord/when_all.hpp"
#include "fjord/when_any.hpp"
#include "fjord/when_any_result.hpp"
#include "fjord/yield.hpp"
