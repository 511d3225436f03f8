#pragma once

namespace fjord {

/// How a timed wait ended. A stop request is not an error: the wait simply
/// ends early and says so.
enum class sleep_status {
  elapsed,   ///< the time came
  canceled,  ///< a stop was requested on the token first
};

}  // namespace fjord
