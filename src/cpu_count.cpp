// How many CPUs this process may actually use: the affinity mask, limited by
// a cgroup CPU quota (containers often grant fewer CPUs than the host has).

#include <sched.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>

#include "fjord/pool_options.hpp"

namespace fjord {

namespace {

std::size_t affinity_cpus() noexcept {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) == 0) {
    const int n = CPU_COUNT(&set);
    if (n > 0) {
      return static_cast<std::size_t>(n);
    }
  }
  const unsigned hc = std::thread::hardware_concurrency();
  return hc == 0 ? 1 : hc;
}

// The cgroup v2 path of this process, from "0::/path" in /proc/self/cgroup.
std::string cgroup_v2_path() {
  std::ifstream in("/proc/self/cgroup");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("0::", 0) == 0) {
      return line.substr(3);
    }
  }
  return {};
}

// cpu.max holds "<quota> <period>" or "max <period>". Returns 0 when unlimited.
double quota_v2(const std::string& dir) {
  std::ifstream in(dir + "/cpu.max");
  std::string quota;
  double period = 0;
  if (!(in >> quota >> period) || quota == "max" || period <= 0) {
    return 0;
  }
  return std::stod(quota) / period;
}

double cgroup_quota() {
  try {
    // v2: the process's own group and each ancestor; the tightest wins.
    double best = 0;
    std::string path = cgroup_v2_path();
    while (true) {
      const double q = quota_v2("/sys/fs/cgroup" + path);
      if (q > 0 && (best == 0 || q < best)) {
        best = q;
      }
      if (path.empty() || path == "/") {
        break;
      }
      path = path.substr(0, path.find_last_of('/'));
    }
    if (best > 0) {
      return best;
    }
    // v1
    std::ifstream qf("/sys/fs/cgroup/cpu/cpu.cfs_quota_us");
    std::ifstream pf("/sys/fs/cgroup/cpu/cpu.cfs_period_us");
    double q = 0;
    double p = 0;
    if ((qf >> q) && (pf >> p) && q > 0 && p > 0) {
      return q / p;
    }
  } catch (...) {
    // Malformed files: treat as unlimited.
  }
  return 0;
}

}  // namespace

std::size_t available_cpus() noexcept {
  std::size_t n = affinity_cpus();
  const double quota = cgroup_quota();
  if (quota > 0) {
    n = std::min(n, static_cast<std::size_t>(std::max(1.0, std::ceil(quota))));
  }
  return std::max<std::size_t>(n, 1);
}

}  // namespace fjord
