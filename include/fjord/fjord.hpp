#pragma once

// Everything fjord offers, for programs that would rather not pick headers.
// Each header stands alone too (one concept each); including only the ones
// you use compiles faster.

#include "fjord/algorithm.hpp"
#include "fjord/async_condition_variable.hpp"
#include "fjord/async_latch.hpp"
#include "fjord/async_mutex.hpp"
#include "fjord/async_semaphore.hpp"
#include "fjord/block_in_place.hpp"
#include "fjord/channel.hpp"
#include "fjord/channel_status.hpp"
#include "fjord/future.hpp"
#include "fjord/generator.hpp"
#include "fjord/go.hpp"
#include "fjord/invoke.hpp"
#include "fjord/join.hpp"
#include "fjord/pool.hpp"
#include "fjord/pool_options.hpp"
#include "fjord/pool_stats.hpp"
#include "fjord/select.hpp"
#include "fjord/shutdown_error.hpp"
#include "fjord/sleep.hpp"
#include "fjord/spawn.hpp"
#include "fjord/sync_wait.hpp"
#include "fjord/task.hpp"
#include "fjord/task_group.hpp"
#include "fjord/timer.hpp"
#include "fjord/when_all.hpp"
#include "fjord/when_any.hpp"
#include "fjord/yield.hpp"
