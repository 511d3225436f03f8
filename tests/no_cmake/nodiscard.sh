#!/usr/bin/env bash
# Forgetting co_await on an awaitable that does nothing by itself must not
# compile silently: each snippet below drops one and must fail to compile
# with -Werror; the control, which awaits them all, must compile.
#   nodiscard.sh <compiler> <include dir>
set -u
compiler="$1"
include="$2"
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT
prelude='#include <chrono>
#include "fjord/sleep.hpp"
#include "fjord/stop_token.hpp"
#include "fjord/task.hpp"
#include "fjord/yield.hpp"
using namespace std::chrono_literals;
fjord::task<void> body() {'
check() {  # check <expect: ok|fail> <name> <statement>
  printf '%s\n  %s\n  co_return;\n}\n' "$prelude" "$3" >"$out/$2.cpp"
  if "$compiler" -std=c++20 -fsyntax-only -Werror -Wall -I"$include" "$out/$2.cpp" 2>"$out/$2.log"; then
    result=ok
  else
    result=fail
  fi
  if [ "$result" = "$1" ]; then
    echo "ok: $2 ($result as expected)"
    passed=$((passed + 1))
  else
    echo "FAIL: $2 should $1 to compile"
    cat "$out/$2.log"
    failed=$((failed + 1))
  fi
}
passed=0
failed=0
check ok control 'co_await fjord::sleep_for(1ms); co_await fjord::sleep_until(std::chrono::steady_clock::now()); co_await fjord::yield(); (void)co_await fjord::current_stop_token();'
check fail sleep_for 'fjord::sleep_for(1ms);'
check fail sleep_until 'fjord::sleep_until(std::chrono::steady_clock::now());'
check fail yield 'fjord::yield();'
check fail current_stop_token 'fjord::current_stop_token();'
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
