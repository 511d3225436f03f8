"""Draws the suite's plots from bench/run's records (run inside bench/.venv).

python plot.py records.json OUTDIR
"""

import json
import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def fork_join_plot(records, bench, outdir):
    rs = [r for r in records if r["benchmark"] == bench]
    if not rs:
        return
    impls = []
    for r in rs:
        if r["implementation"] not in impls:
            impls.append(r["implementation"])
    fig, ax = plt.subplots(figsize=(9, 4.5))
    width = 0.38
    for ti, threads in enumerate([1, 2]):
        xs, ys, lo, hi = [], [], [], []
        for i, impl in enumerate(impls):
            r = next((q for q in rs if q["implementation"] == impl and q["threads"] == threads), None)
            if r is None:
                continue
            xs.append(i + (ti - 0.5) * width)
            ys.append(r["median"])
            lo.append(r["median"] - r["min"])
            hi.append(r["max"] - r["median"])
        ax.bar(xs, ys, width, yerr=[lo, hi], capsize=3, label=f"{threads} thread{'s' if threads > 1 else ''}")
    ax.set_xticks(range(len(impls)))
    ax.set_xticklabels(impls, rotation=20, ha="right")
    ax.set_yscale("log")
    ax.set_ylabel(rs[0]["unit"] + " (log scale, median with min-max)")
    params = ", ".join(f"{k}={v}" for k, v in rs[0]["params"].items())
    ax.set_title(f"{bench} ({params}): lower is better")
    ax.legend()
    fig.tight_layout()
    fig.savefig(os.path.join(outdir, f"{bench}.png"), dpi=110)
    plt.close(fig)


def grain_plot(records, outdir):
    rs = [r for r in records if r["benchmark"] == "parallel_sum" and r["params"].get("grain")]
    if not rs:
        return
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.5), sharey=True)
    base = next((r for r in records if r["benchmark"] == "parallel_sum" and not r["params"].get("grain")), None)
    for ax, threads in zip(axes, [1, 2]):
        impls = sorted({r["implementation"] for r in rs if r["threads"] == threads})
        for impl in impls:
            pts = sorted((r["params"]["grain"], r["median"]) for r in rs
                         if r["implementation"] == impl and r["threads"] == threads)
            ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", label=impl)
        if base:
            ax.axhline(base["median"], color="grey", linestyle="--", label="std::accumulate")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("grain size (ints)")
        ax.set_title(f"{threads} thread{'s' if threads > 1 else ''}")
        ax.legend(fontsize=8)
    axes[0].set_ylabel("ms per sum (median, log scale)")
    fig.suptitle("parallel_sum: time against grain size, lower is better")
    fig.tight_layout()
    fig.savefig(os.path.join(outdir, "parallel_sum.png"), dpi=110)
    plt.close(fig)


def per_task_plot(records, outdir):
    rs = [r for r in records if r["benchmark"] == "empty_tasks"]
    if not rs:
        return
    rs = sorted(rs, key=lambda r: r["median"])
    fig, ax = plt.subplots(figsize=(8, 4))
    names = [r["implementation"] for r in rs]
    ys = [r["median"] for r in rs]
    err = [[r["median"] - r["min"] for r in rs], [r["max"] - r["median"] for r in rs]]
    colors = ["tab:blue" if n.startswith("fjord") else "tab:grey" for n in names]
    ax.barh(names, ys, xerr=err, color=colors, capsize=3)
    ax.set_xscale("log")
    ax.set_xlabel("ns per task (median with min-max, log scale)")
    ax.set_title(f"empty_tasks: {rs[0]['params'].get('tasks')} tasks, 2 workers, lower is better")
    fig.tight_layout()
    fig.savefig(os.path.join(outdir, "empty_tasks.png"), dpi=110)
    plt.close(fig)


def main():
    with open(sys.argv[1]) as f:
        records = json.load(f)
    outdir = sys.argv[2]
    fork_join_plot(records, "fib", outdir)
    fork_join_plot(records, "fork_sum", outdir)
    grain_plot(records, outdir)
    per_task_plot(records, outdir)


if __name__ == "__main__":
    main()
