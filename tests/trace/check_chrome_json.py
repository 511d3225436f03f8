#!/usr/bin/env python3
"""Checks a fjord trace against the Chrome trace-event format's rules for the
phases fjord writes (M, X, i, C, s, f) and against what docs/tracing.md
promises: every track named, slices nested on each track, instants in time
order, every flow with one start and one end that does not precede it,
steals naming a victim that is a worker of the same pool.

Perfetto's own trace processor would be the better consumer, but its Python
package downloads the processor binary from get.perfetto.dev at run time,
which this machine cannot reach; this schema check stands in.

usage: check_chrome_json.py trace.json [--expect-steals] [--expect-name NAME]...
       [--expect-counter NAME] [--expect-pools N]
"""
import argparse
import collections
import json
import sys

EPS = 0.0015  # microseconds: the file rounds to nanoseconds


def fail(msg):
    print(f"check_chrome_json: {msg}", file=sys.stderr)
    sys.exit(1)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("trace")
    ap.add_argument("--expect-steals", action="store_true")
    ap.add_argument("--expect-name", action="append", default=[])
    ap.add_argument("--expect-counter", action="append", default=[])
    ap.add_argument("--expect-pools", type=int)
    args = ap.parse_args()

    with open(args.trace) as f:
        doc = json.load(f)
    if not isinstance(doc, dict) or not isinstance(doc.get("traceEvents"), list):
        fail("no traceEvents array")
    if doc.get("displayTimeUnit") not in ("ms", "ns"):
        fail("displayTimeUnit is neither ms nor ns")
    events = doc["traceEvents"]

    named_threads = {}
    processes = {}
    slices = collections.defaultdict(list)
    last_point = {}
    flows = collections.defaultdict(dict)
    steals = []
    names = set()
    counters = set()
    for n, e in enumerate(events):
        where = f"event {n} ({e.get('ph')!r} {e.get('name')!r})"
        for key, kind in (("ph", str), ("pid", int), ("tid", int), ("name", str)):
            if not isinstance(e.get(key), kind):
                fail(f"{where}: {key} missing or not {kind.__name__}")
        ph = e["ph"]
        track = (e["pid"], e["tid"])
        if ph == "M":
            if e["name"] == "thread_name":
                named_threads[track] = e["args"]["name"]
            elif e["name"] == "process_name":
                processes[e["pid"]] = e["args"]["name"]
            elif e["name"] == "thread_sort_index":
                named_threads.setdefault(("sort",) + track, e["args"]["sort_index"])
            continue
        ts = e.get("ts")
        if not isinstance(ts, (int, float)):
            fail(f"{where}: ts missing")
        names.add(e["name"])
        if ph == "X":
            dur = e.get("dur")
            if not isinstance(dur, (int, float)) or dur < 0:
                fail(f"{where}: dur missing or negative")
            if e["name"] == "job" and "job" not in e.get("args", {}):
                fail(f"{where}: a job slice without its job address")
            slices[track].append((ts, dur, e["name"]))
        elif ph in ("i", "C"):
            if ph == "i" and e.get("s") not in ("t", "p", "g"):
                fail(f"{where}: instant scope {e.get('s')!r}")
            if ph == "C":
                values = e.get("args", {})
                if not values or not all(isinstance(v, (int, float)) for v in values.values()):
                    fail(f"{where}: counter without numeric args")
                counters.add(e["name"])
            if ts + EPS < last_point.get(track, float("-inf")):
                fail(f"{where}: goes back in time on its track ({ts} < {last_point[track]})")
            last_point[track] = ts
            if e["name"] == "steal":
                steals.append((e["pid"], e["args"]["victim"], e["tid"]))
        elif ph in ("s", "f"):
            if "id" not in e:
                fail(f"{where}: a flow event without id")
            if ph == "f" and e.get("bp") != "e":
                fail(f"{where}: a flow end not bound to its enclosing slice")
            if ph in flows[e["id"]]:
                fail(f"{where}: flow {e['id']} has two {ph} events")
            flows[e["id"]][ph] = ts
        else:
            fail(f"{where}: phase {ph!r} is not one fjord writes")

    for track in list(slices) + list(last_point):
        if track not in named_threads:
            fail(f"track {track} has events but no thread_name")
    for track, items in slices.items():
        # Sorted by start, longer first: each slice must fit inside the
        # innermost open one, or start after it ends.
        items.sort(key=lambda s: (s[0], -s[1]))
        stack = []
        for ts, dur, name in items:
            while stack and ts >= stack[-1][1] - EPS:
                stack.pop()
            if stack and ts + dur > stack[-1][1] + EPS:
                fail(f"track {track}: slice {name!r} at {ts} (dur {dur}) overlaps "
                     f"{stack[-1][2]!r} ending at {stack[-1][1]}")
            stack.append((ts, ts + dur, name))
    for fid, ends in flows.items():
        if set(ends) != {"s", "f"}:
            fail(f"flow {fid} has {sorted(ends)} only")
        if ends["f"] + EPS < ends["s"]:
            fail(f"flow {fid} ends ({ends['f']}) before it starts ({ends['s']})")
    workers = {}
    for key, index in named_threads.items():
        if key[0] == "sort":
            workers.setdefault(key[1], set()).add(index)
    # A caller that joined a pool for a call is a victim with the guest's
    # number, and a thief on its own track among the other threads (pid 1):
    # its victims are workers of some pool.
    guest_victim = 4294967295
    any_worker = set().union(*workers.values()) if workers else set()
    for pid, victim, thief in steals:
        allowed = any_worker if pid == 1 else workers.get(pid, set())
        if victim != guest_victim and victim not in allowed:
            fail(f"a steal in pid {pid} names victim {victim}, not a worker of that pool")

    if args.expect_steals and not steals:
        fail("no steal recorded")
    for name in args.expect_name:
        if name not in names:
            fail(f"no event named {name!r}")
    for name in args.expect_counter:
        if name not in counters:
            fail(f"no counter named {name!r}")
    pools = sum(1 for name in processes.values() if name.startswith("pool "))
    if args.expect_pools is not None and pools != args.expect_pools:
        fail(f"{pools} pools, expected {args.expect_pools}")
    print(f"check_chrome_json: {args.trace}: {len(events)} events, {len(slices)} tracks with "
          f"slices, {len(flows)} flows, {len(steals)} steals, {pools} pools: ok")


if __name__ == "__main__":
    main()
