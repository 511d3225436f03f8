#!/usr/bin/env bash
# Compiles deep_await.cpp the way a user without CMake would (plain -I and
# the library, none of fjord's compile options) with each compiler and
# optimisation level given, runs each on an 8 MiB stack, and fails if any
# build crashes or computes a wrong result.
#   run.sh <include dir> <libfjord.a> <compiler:flags>...
set -u
include="$1"
library="$2"
shift 2
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT
failed=0
passed=0
for spec in "$@"; do
  compiler="${spec%%:*}"
  flags="${spec#*:}"
  if ! command -v "$compiler" >/dev/null; then
    echo "missing compiler: $compiler"
    failed=$((failed + 1))
    continue
  fi
  # shellcheck disable=SC2086 # flags are meant to split
  if ! "$compiler" -std=c++20 $flags -I"$include" "$here/deep_await.cpp" "$library" -pthread \
      -o "$out/deep_await"; then
    echo "FAIL (build): $compiler $flags"
    failed=$((failed + 1))
    continue
  fi
  if (ulimit -s 8192 && "$out/deep_await"); then
    echo "ok: $compiler $flags"
    passed=$((passed + 1))
  else
    echo "FAIL (run): $compiler $flags"
    failed=$((failed + 1))
  fi
done
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
