#include "fjord/readiness.hpp"

#include "fjord/registered_fd.hpp"

namespace fjord {

task<io_status> readable(int fd, io_deadline deadline, std::optional<std::stop_token> token) {
  const registered_fd registration(fd);
  co_return co_await registration.readable(deadline, std::move(token));
}

task<io_status> writable(int fd, io_deadline deadline, std::optional<std::stop_token> token) {
  const registered_fd registration(fd);
  co_return co_await registration.writable(deadline, std::move(token));
}

}  // namespace fjord
