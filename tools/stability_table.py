#!/usr/bin/python3
"""Solved, collapsed and recovered, per run, from the runs' metrics.csv (models/results/stability.md).

A run's cost curve is the 1,000-step mean of its bits per sequence (the rolling mean over the rows of the last
--window steps; rows are every log_every steps, each already a mean over them). Then, as the definitions go:
  solved     the mean is below --solved (1 bit) at the end of the run;
  collapsed  the mean is above --collapse (5 bits) at some step after it first was below --solved;
  recovered  collapsed, and solved at the end.
Printed per run, as a Markdown table: the first step the mean is below 1 bit, the highest mean after that, the
number of log rows above --collapse after it, the final mean, the verdict, the best held-out cost (validation.csv's
lowest bits_per_sequence and its step: the parameters best.safetensors keeps; "–" for a run without eval.interval)
and the run's wall seconds (metrics.csv's last `seconds`, summed over resumptions). Skipped updates (metrics.csv's
`skipped` column: non-finite steps and grad.outlier) are counted too.

    /usr/bin/python3 tools/stability_table.py RUN_DIR... [--window 1000] [--solved 1] [--collapse 5]
"""
import argparse
import csv
import os
import re
import sys


def read_rows(run):
    path = os.path.join(run, "metrics.csv")
    with open(path, newline="") as f:
        rows = [r for r in csv.DictReader(f)]
    if not rows:
        raise SystemExit(f"stability_table: {path} has no rows")
    return rows


def analyse(run, window, solved, collapse):
    rows = read_rows(run)
    steps = [int(r["step"]) for r in rows]
    bits = [float(r["bits_per_sequence"]) for r in rows]
    every = steps[1] - steps[0] if len(steps) > 1 else steps[0]
    k = max(1, window // every)  # log rows per window
    means = []
    for i in range(len(bits)):
        part = [b for b in bits[max(0, i - k + 1): i + 1] if b == b]  # NaN rows (only skipped steps) left out
        means.append(sum(part) / len(part) if part else float("nan"))
    first = next((i for i, m in enumerate(means) if i + 1 >= k and m < solved), None)
    after = means[first:] if first is not None else []
    peak = max(after) if after else float("nan")
    high_rows = sum(1 for i in range(first, len(bits)) if bits[i] > collapse) if first is not None else 0
    final = means[-1]
    collapsed = first is not None and peak > collapse
    is_solved = final < solved
    verdict = ("recovered" if is_solved else "collapsed") if collapsed else ("solved" if is_solved else "not solved")
    skipped = rows[-1].get("skipped", "") or "0"
    # seconds restart at 0 when a run is resumed: the wall time is the sum of each stretch's last value
    seconds = [float(r["seconds"]) for r in rows]
    wall = sum(s for s, nxt in zip(seconds, seconds[1:] + [0.0]) if nxt < s)
    return {"run": run, "steps": steps[-1], "first": steps[first] if first is not None else None, "peak": peak,
            "high_rows": high_rows, "final": final, "verdict": verdict, "skipped": skipped, "best": best_held_out(run),
            "seconds": wall}


def best_held_out(run):
    """(lowest held-out cost, its step) from the run's validation.csv, or None without one."""
    path = os.path.join(run, "validation.csv")
    if not os.path.exists(path):
        return None
    with open(path, newline="") as f:
        rows = [r for r in csv.DictReader(f)]
    if not rows:
        return None
    best = min(rows, key=lambda r: float(r["bits_per_sequence"]))
    return float(best["bits_per_sequence"]), int(best["step"])


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("runs", nargs="+")
    ap.add_argument("--window", type=int, default=1000)
    ap.add_argument("--solved", type=float, default=1.0)
    ap.add_argument("--collapse", type=float, default=5.0)
    a = ap.parse_args()
    print(f"| run | steps | first step < {a.solved:g} bit | highest after | rows > {a.collapse:g} bits after | "
          f"final | skipped | verdict | best held-out (step) | seconds |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    counts = {}
    # seed2 before seed10: runs in the order of the numbers in their names
    key = lambda run: [int(t) if t.isdigit() else t for t in re.split(r"(\d+)", run)]
    for run in sorted(a.runs, key=key):
        r = analyse(run, a.window, a.solved, a.collapse)
        counts[r["verdict"]] = counts.get(r["verdict"], 0) + 1
        first = f"{r['first']:,}" if r["first"] is not None else "–"
        peak = f"{r['peak']:.2f}" if r["first"] is not None else "–"
        best = f"{r['best'][0]:.2f} ({r['best'][1]:,})" if r["best"] else "–"
        print(f"| {r['run']} | {r['steps']:,} | {first} | {peak} | {r['high_rows']} | {r['final']:.2f} | "
              f"{r['skipped']} | {r['verdict']} | {best} | {r['seconds']:.0f} |")
    print()
    print(", ".join(f"{v}: {n}" for v, n in sorted(counts.items())))


if __name__ == "__main__":
    sys.exit(main())
