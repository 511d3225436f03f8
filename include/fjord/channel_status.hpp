#pragma once

#include <stdexcept>

namespace fjord {

/// The outcome of a channel operation that does not wait (try_send,
/// try_receive and their batch forms).
enum class channel_status {
  ok,      ///< done
  full,    ///< a send found no room and no waiting receiver
  empty,   ///< a receive found no value and no waiting sender
  closed,  ///< the channel is closed (for a receive: and drained)
};

/// Thrown by a send (co_await ch.send(v), blocking_send, or a select's
/// send_to case) that finds its channel closed, or whose channel is closed
/// while it waits: the value was not delivered, and is destroyed. As in Go,
/// sending on a closed channel is a bug in the sender's protocol, so it is
/// an error; a receive that finds the channel closed is not (it returns an
/// empty std::optional).
class channel_closed : public std::logic_error {
 public:
  using std::logic_error::logic_error;
};

}  // namespace fjord
