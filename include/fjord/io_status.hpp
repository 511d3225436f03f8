#pragma once

namespace fjord {

/// How a wait for an fd ended. A timeout and a stop request are outcomes,
/// not errors: the wait simply ends and says why.
enum class io_status {
  ready,     ///< the fd became readable (or writable): try the operation again
  timeout,   ///< the deadline came first
  canceled,  ///< a stop was requested first
  closed,    ///< the registration was closed while the wait was pending
};

}  // namespace fjord
