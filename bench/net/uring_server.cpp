// The bare completion mechanism under the echo benchmark: one io_uring per
// thread, no runtime (raw_server.hpp says why it is a ceiling); beside
// epoll_server.cpp it tells whether an io_uring backend would pay here.
//
//   bench_net_uring_server PORT THREADS echo
//
// Each connection keeps one operation in flight: a recv into its 4 KiB
// buffer, then a send of what it read, then the next recv. One accept is
// always in flight. A loop round submits what the last completions asked
// for and waits for the next in a single io_uring_enter. The ring is set
// up the way its authors advise for one thread per ring (single issuer,
// task work deferred to the waiting thread) where the kernel has it.
#include <liburing.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdint>

#include "raw_server.hpp"

namespace {

struct connection {
  int fd;
  bool sending = false;
  char buffer[4096];
};

// user_data: the connection, or 0 for the accept.
void queue_recv(io_uring& ring, connection* c) {
  io_uring_sqe* sqe = io_uring_get_sqe(&ring);
  io_uring_prep_recv(sqe, c->fd, c->buffer, sizeof c->buffer, 0);
  io_uring_sqe_set_data(sqe, c);
  c->sending = false;
}

void queue_send(io_uring& ring, connection* c, unsigned n) {
  io_uring_sqe* sqe = io_uring_get_sqe(&ring);
  io_uring_prep_send(sqe, c->fd, c->buffer, n, MSG_NOSIGNAL);
  io_uring_sqe_set_data(sqe, c);
  c->sending = true;
}

void queue_accept(io_uring& ring, int listener) {
  io_uring_sqe* sqe = io_uring_get_sqe(&ring);
  io_uring_prep_accept(sqe, listener, nullptr, nullptr, SOCK_CLOEXEC);
  io_uring_sqe_set_data(sqe, nullptr);
}

void serve(int listener) {
  io_uring ring{};
  // 4096 entries: one operation per connection always fits (a round's
  // completions queue at most as many new ones as they are).
  unsigned flags = IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN;
  if (io_uring_queue_init(4096, &ring, flags) != 0 && io_uring_queue_init(4096, &ring, 0) != 0) {
    raw_server::fail("io_uring_queue_init");
  }
  queue_accept(ring, listener);
  while (true) {
    if (io_uring_submit_and_wait(&ring, 1) < 0 && errno != EINTR) {
      raw_server::fail("io_uring_submit_and_wait");
    }
    io_uring_cqe* cqe = nullptr;
    unsigned head = 0;
    unsigned seen = 0;
    io_uring_for_each_cqe(&ring, head, cqe) {
      ++seen;
      auto* c = static_cast<connection*>(io_uring_cqe_get_data(cqe));
      const int res = cqe->res;
      if (c == nullptr) {
        if (res >= 0) {
          queue_recv(ring, new connection{res});
        }
        queue_accept(ring, listener);
      } else if (res <= 0) {
        ::close(c->fd);  // the client went away
        delete c;
      } else if (c->sending) {
        queue_recv(ring, c);
      } else {
        queue_send(ring, c, static_cast<unsigned>(res));
      }
    }
    io_uring_cq_advance(&ring, seen);
  }
}

}  // namespace

int main(int argc, char** argv) {
  return raw_server::main(argc, argv, "bench_net_uring_server", serve);
}
