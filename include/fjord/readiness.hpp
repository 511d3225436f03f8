#pragma once

#include <optional>
#include <stop_token>

#include "fjord/io_deadline.hpp"
#include "fjord/io_status.hpp"
#include "fjord/task.hpp"

namespace fjord {

/// co_await fjord::readable(fd): io_status::ready at once if fd is readable,
/// else when it becomes readable; io_status::timeout when the deadline comes
/// first, io_status::canceled on a stop request (on `token`, or on the
/// coroutine's own stop token when none is given). No thread waits. For a
/// one-off wait: it registers fd with the reactor and unregisters it after
/// (an fd waited on often is better kept in a fjord::registered_fd). Throws
/// std::system_error naming fd when epoll refuses it (a bad fd, a regular
/// file, an fd a fjord socket or registered_fd holds). Keep fd open until
/// the wait ends: the last close of a file takes it out of epoll silently,
/// so a wait on a closed fd ends only by its deadline or a stop request.
task<io_status> readable(int fd, io_deadline deadline = {},
                         std::optional<std::stop_token> token = std::nullopt);
/// The same for writing.
task<io_status> writable(int fd, io_deadline deadline = {},
                         std::optional<std::stop_token> token = std::nullopt);

}  // namespace fjord
