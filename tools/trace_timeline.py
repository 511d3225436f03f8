#!/usr/bin/env python3
"""Draws a fjord trace (Chrome trace JSON, from fjord::trace::write or
FJORD_TRACE) as a PNG: one row per thread over time, coloured by what it was
doing (running a job, searching for work, parked, polling for I/O, blocked,
in a user span), and below it the pool's utilisation (the share of its
workers running jobs) over time.

usage: trace_timeline.py trace.json out.png [--title TITLE] [--from US] [--to US]

Needs matplotlib (bench/run installs it in bench/.venv).
"""
import argparse
import collections
import json
import sys

STATES = [  # (slice name or None for user spans, legend, colour)
    ("job", "running a job", "#2e7d32"),
    ("searching", "searching for work", "#f9a825"),
    ("parked", "parked", "#cfd8dc"),
    ("parked, polling I/O", "parked, polling I/O", "#64b5f6"),
    ("blocked", "blocked in a job", "#c62828"),
    (None, "user span", "#8e24aa"),
]
COLOUR = {name: colour for name, _, colour in STATES if name}
USER_COLOUR = STATES[-1][2]


def flatten(slices):
    """Nested slices of one thread -> non-overlapping (start, end, name)
    segments, each instant given to the innermost slice covering it."""
    slices.sort(key=lambda s: (s[0], -s[1]))
    out = []
    stack = []  # [start, end, name, cursor]: cursor = where the parent resumes

    def pop():
        start, end, name, cursor = stack.pop()
        if end > cursor:
            out.append((cursor, end, name))
        if stack:
            stack[-1][3] = max(stack[-1][3], end)

    for ts, dur, name in slices:
        end = ts + dur
        while stack and ts >= stack[-1][1]:
            pop()
        if stack:
            parent = stack[-1]
            if ts > parent[3]:
                out.append((parent[3], ts, parent[2]))
            parent[3] = max(parent[3], ts)
            end = min(end, parent[1])
        stack.append([ts, end, name, ts])
    while stack:
        pop()
    return out


def load(path):
    with open(path) as f:
        doc = json.load(f)
    names, sort_index, processes = {}, {}, {}
    slices = collections.defaultdict(list)
    for e in doc["traceEvents"]:
        key = (e.get("pid"), e.get("tid"))
        if e["ph"] == "M":
            if e["name"] == "thread_name":
                names[key] = e["args"]["name"]
            elif e["name"] == "thread_sort_index":
                sort_index[key] = e["args"]["sort_index"]
            elif e["name"] == "process_name":
                processes[e["pid"]] = e["args"]["name"]
        elif e["ph"] == "X":
            name = e["name"] if e.get("cat") != "user" else None
            slices[key].append((e["ts"], e["dur"], name))
    return names, sort_index, processes, slices


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("trace")
    ap.add_argument("png")
    ap.add_argument("--title", default=None)
    ap.add_argument("--from", dest="start", type=float, default=None, help="microseconds")
    ap.add_argument("--to", dest="end", type=float, default=None, help="microseconds")
    args = ap.parse_args()

    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.patches import Patch

    names, sort_index, processes, slices = load(args.trace)
    if not slices:
        sys.exit(f"trace_timeline: {args.trace} holds no slices")
    # Pools' workers first, by pool then worker index; other threads after.
    tracks = sorted(slices, key=lambda k: (k[0] == 1, k[0], sort_index.get(k, 0), k[1]))
    segments = {k: flatten(list(slices[k])) for k in tracks}
    t0 = min(s[0] for k in tracks for s in segments[k]) if args.start is None else args.start
    t1 = max(s[1] for k in tracks for s in segments[k]) if args.end is None else args.end
    span = max(t1 - t0, 1e-3)
    unit, scale = ("ms", 1e3) if span > 5e3 else ("µs", 1.0)

    fig, (ax, util) = plt.subplots(2, 1, figsize=(12, 1.2 + 0.45 * len(tracks) + 2.2),
                                   gridspec_kw={"height_ratios": [max(len(tracks), 2), 2.2]},
                                   sharex=True)
    labels = []
    for row, key in enumerate(tracks):
        by_colour = collections.defaultdict(list)
        for start, end, name in segments[key]:
            if end < t0 or start > t1:
                continue
            colour = COLOUR.get(name, USER_COLOUR) if name is not None else USER_COLOUR
            by_colour[colour].append(((start - t0) / scale, (end - start) / scale))
        for colour, bars in by_colour.items():
            ax.broken_barh(bars, (row - 0.4, 0.8), facecolors=colour, linewidth=0)
        pool = processes.get(key[0], "")
        label = names.get(key, f"tid {key[1]}")
        labels.append(f"{pool.replace('pool ', '')} {label}" if key[0] != 1 else label)
    ax.set_yticks(range(len(tracks)))
    ax.set_yticklabels(labels, fontsize=8)
    ax.invert_yaxis()
    ax.set_xlim(0, (t1 - t0) / scale)
    fig.legend(handles=[Patch(color=c, label=l) for _, l, c in STATES], loc="upper center",
               bbox_to_anchor=(0.5, 0.965), ncol=6, fontsize=8, frameon=False)
    fig.suptitle(args.title or args.trace)

    # Utilisation: the share of pool workers (pid >= 2) running jobs, in bins.
    bins = 400
    width = span / bins
    busy = [0.0] * bins
    workers = [k for k in tracks if k[0] != 1]
    for key in workers:
        for start, end, name in segments[key]:
            if name not in ("job", None):
                continue
            start, end = max(start, t0), min(end, t1)
            b = int((start - t0) / width)
            while start < end and b < bins:
                edge = t0 + (b + 1) * width
                busy[b] += min(end, edge) - start
                start = edge
                b += 1
    if workers:
        xs = [((i + 0.5) * width) / scale for i in range(bins)]
        ys = [100.0 * v / (width * len(workers)) for v in busy]
        util.fill_between(xs, ys, step="mid", color="#2e7d32", alpha=0.6)
        util.set_ylim(0, 105)
    util.set_ylabel("workers busy (%)", fontsize=8)
    util.set_xlabel(f"time ({unit})")
    fig.tight_layout(rect=(0, 0, 1, 0.93))
    fig.savefig(args.png, dpi=110)
    print(f"trace_timeline: {args.png}: {len(tracks)} threads, {span / 1e3:.3f} ms")


if __name__ == "__main__":
    main()
