#pragma once

#include <stdexcept>

namespace fjord {

/// Thrown when work is submitted from outside a pool that is being destroyed.
class shutdown_error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace fjord
