#!/bin/sh
# The trace files as a user gets them: from the API (example_trace_fib), from
# FJORD_TRACE with no code at all (example_pool_basics), in both forms, and
# the binary form converted by fjord-trace into the very JSON the library
# writes. Also FJORD_STATS's line at exit.
# usage: check_traces.sh <example_trace_fib> <fjord-trace> <example_pool_basics> <checker.py> <dir>
set -eu
trace_fib=$1
fjord_trace=$2
pool_basics=$3
checker=$4
dir=$5
rm -rf "$dir"
mkdir -p "$dir"

# fib(25): the caller joins the pool for each call and could finish a much
# smaller tree before a worker on a loaded machine took any of it.
"$trace_fib" "$dir/fib.json" 25 "$dir/fib.fjtrace"
python3 "$checker" "$dir/fib.json" --expect-name "fib round" \
  --expect-counter "rounds done" --expect-pools 1
"$fjord_trace" convert "$dir/fib.fjtrace" "$dir/fib-converted.json"
cmp "$dir/fib.json" "$dir/fib-converted.json"

FJORD_TRACE="$dir/env.json" "$pool_basics" >/dev/null
python3 "$checker" "$dir/env.json" --expect-name job
FJORD_TRACE="$dir/env.fjtrace" "$pool_basics" >/dev/null
"$fjord_trace" summary "$dir/env.fjtrace" | grep -q "job_begin"
"$fjord_trace" convert "$dir/env.fjtrace" "$dir/env-converted.json"
python3 "$checker" "$dir/env-converted.json" --expect-name job

FJORD_STATS=1 "$pool_basics" 2>"$dir/stats" >/dev/null
grep -q '^fjord: pool ".*threads, .* jobs, .* steals.*, [0-9]* queued$' "$dir/stats"

printf 'not a trace' >"$dir/bad.fjtrace"
if "$fjord_trace" convert "$dir/bad.fjtrace" "$dir/bad.json" 2>"$dir/err"; then
  echo "a corrupt trace was accepted" >&2
  exit 1
fi
grep -q "bad magic" "$dir/err"
echo "check_traces: ok"
