// Tracing a fork-join program: fib on a two-worker pool, with a user span
// and a counter, written as Chrome trace JSON. Open the file in
// https://ui.perfetto.dev (or chrome://tracing) to see each worker's jobs,
// searches, steals (arrows from victim to thief) and sleeps, and the
// calling thread's, which joins the pool for each call (among the other
// threads).
//
//   example_trace_fib [out.json] [n] [out.fjtrace]

#include <cstdio>
#include <exception>
#include <string>

#include "fjord/join.hpp"
#include "fjord/pool.hpp"
#include "fjord/trace.hpp"

namespace {

long fib(int n) {
  if (n < 2) {
    return n;
  }
  auto [a, b] = fjord::join([n] { return fib(n - 1); }, [n] { return fib(n - 2); });
  return a + b;
}

}  // namespace

int main(int argc, char** argv) try {
  const std::string path = argc > 1 ? argv[1] : "fib.json";
  const int n = argc > 2 ? std::stoi(argv[2]) : 27;
  fjord::pool pool(fjord::pool_options{.workers = 2});
  fjord::trace::start();
  long total = 0;
  for (int round = 0; round < 3; ++round) {
    const fjord::trace::span s("fib round");
    total += pool.call([n] { return fib(n); });
    fjord::trace::counter("rounds done", round + 1);
  }
  // Until the workers are idle again, so that the trace shows them going to
  // sleep too (the caller may have done most of the work: it takes one of the
  // pool's places for each call).
  pool.wait_idle();
  fjord::trace::stop();
  fjord::trace::write(path);
  if (argc > 3) {
    fjord::trace::write(argv[3]);  // the compact form too
  }
  std::printf("fib(%d) x 3 = %ld; trace in %s (%llu events dropped)\n", n, total, path.c_str(),
              static_cast<unsigned long long>(fjord::trace::dropped()));
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "example_trace_fib: %s\n", e.what());
  return 1;
}
