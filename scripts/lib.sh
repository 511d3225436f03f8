# Shared helpers for the scripts in this folder (sourced, not run).

set -euo pipefail

FJORD_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
export FJORD_ROOT

say() { printf '\n== %s\n' "$*"; }

# ensure_packages "why" pkg...: installs the Debian packages that are missing,
# saying which and why; does nothing when all are present.
ensure_packages() {
  local why="$1"
  shift
  local missing=()
  local pkg
  for pkg in "$@"; do
    if ! dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed"; then
      missing+=("$pkg")
    fi
  done
  if [ "${#missing[@]}" -eq 0 ]; then
    return 0
  fi
  say "installing ${missing[*]} ($why)"
  local sudo=""
  if [ "$(id -u)" -ne 0 ]; then
    sudo="sudo"
  fi
  if [ -z "${FJORD_APT_UPDATED:-}" ]; then
    $sudo apt-get update -qq
    export FJORD_APT_UPDATED=1
  fi
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
}

ensure_build_tools() {
  ensure_packages "to configure and build fjord" cmake ninja-build g++ make
  ensure_packages "the second compiler fjord is built and tested with" clang-14
}
