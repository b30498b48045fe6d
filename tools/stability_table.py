#!/usr/bin/python3
"""Solved, collapsed and recovered, per run, from the runs' metrics.csv (models/results/stability.md).

A run's cost curve is the rolling mean of its bits wrong per sequence over the rows of the last --window steps
(1,000 by default; 16,000 at one sequence an update, the same number of sequences as 1,000 steps of 16; rows
are every log_every steps, each already a mean over them). Only full windows count. Then, as the definitions go:
  solved     the mean is below --solved (1 bit) at the end of the run;
  collapse   a stretch of means above --collapse (5 bits) after the mean first was below --solved;
  collapsed  at least one collapse; recovered: collapsed, and solved at the end.
Printed per run, as a Markdown table: the first step the mean is below --solved, the collapses (how many, and each
one's first step, last step and highest mean), the final mean, the best (lowest) mean and its step, the best
held-out cost (validation.csv's lowest and its step: the parameters best.safetensors keeps; "–" for a run without
eval.interval), the largest gradient norm of a row (before clipping), the skipped updates (non-finite steps and
grad.outlier), the verdict and the run's wall seconds (metrics.csv's `seconds`, summed over resumptions).
--cost xent reads the cross-entropy bits per sequence (metrics.csv's xent_bits: N-grams' and priority sort's
cost) instead of the bits wrong. --at 64000,160000 adds a column of the means at those steps (each the first full
window ending there or later; "–" past the run's end): the curve at the points a results page quotes.

    /usr/bin/python3 tools/stability_table.py RUN_DIR... [--window 1000] [--solved 1] [--collapse 5] [--cost bits|xent]
        [--at STEP,STEP...]
"""
import argparse
import csv
import os
import re
import sys

COLUMNS = {"bits": "bits_per_sequence", "xent": "xent_bits"}


def check_run(run):
    """Refuses, before anything is printed, a run directory that is missing or has logged nothing."""
    if not os.path.isdir(run):
        raise SystemExit(f"stability_table: {run} is not a directory")
    if not os.path.isfile(os.path.join(run, "metrics.csv")):
        raise SystemExit(f"stability_table: {run} has no metrics.csv (no step logged yet?)")


def read_rows(run):
    path = os.path.join(run, "metrics.csv")
    with open(path, newline="") as f:
        rows = [r for r in csv.DictReader(f)]
    if not rows:
        raise SystemExit(f"stability_table: {path} has no rows")
    return rows


def number(text):
    try:
        return float(text)
    except (TypeError, ValueError):
        return float("nan")


def analyse(run, window, solved, collapse, cost="bits", at=()):
    rows = read_rows(run)
    column = COLUMNS[cost]
    if column not in rows[0]:
        raise SystemExit(f"stability_table: {os.path.join(run, 'metrics.csv')} has no column {column}")
    steps = [int(r["step"]) for r in rows]
    values = [number(r[column]) for r in rows]
    every = steps[1] - steps[0] if len(steps) > 1 else steps[0]
    k = max(1, window // every)  # log rows per window
    means = []  # (step, mean) of every full window
    for i in range(k - 1, len(values)):
        part = [v for v in values[i - k + 1: i + 1] if v == v]  # NaN rows (only skipped steps) left out
        means.append((steps[i], sum(part) / len(part) if part else float("nan")))
    if not means:  # shorter than one window: the mean of what there is
        part = [v for v in values if v == v]
        means = [(steps[-1], sum(part) / len(part) if part else float("nan"))]
    first = next((i for i, (_, m) in enumerate(means) if m < solved), None)
    collapses, peak = [], float("nan")
    if first is not None:
        peak = max(m for _, m in means[first:])
        spell = None
        for step, m in means[first:]:
            if m > collapse:
                spell = [step, step, m] if spell is None else [spell[0], step, max(spell[2], m)]
            elif spell is not None:
                collapses.append(tuple(spell))
                spell = None
        if spell is not None:
            collapses.append(tuple(spell))
    final = means[-1][1]
    best = min((p for p in means if p[1] == p[1]), key=lambda p: p[1], default=(steps[-1], float("nan")))
    is_solved = final < solved
    verdict = ("recovered" if is_solved else "collapsed") if collapses else ("solved" if is_solved else "not solved")
    skipped = rows[-1].get("skipped", "") or "0"
    norms = [number(r.get("grad_norm")) for r in rows]
    largest = max((n for n in norms if n == n), default=float("nan"))
    # seconds restart at 0 when a run is resumed: the wall time is the sum of each stretch's last value
    seconds = [float(r["seconds"]) for r in rows]
    wall = sum(s for s, nxt in zip(seconds, seconds[1:] + [0.0]) if nxt < s)
    at_means = [next((m for step, m in means if step >= s), None) for s in at]
    return {"run": run, "steps": steps[-1], "at": at_means,
            "first": means[first][0] if first is not None else None, "peak": peak,
            "collapses": collapses, "final": final, "best_mean": best, "verdict": verdict, "skipped": skipped,
            "best": best_held_out(run, column), "largest_norm": largest, "seconds": wall}


def best_held_out(run, column="bits_per_sequence"):
    """(lowest held-out cost, its step) from the run's validation.csv, or None without one."""
    path = os.path.join(run, "validation.csv")
    if not os.path.exists(path):
        return None
    with open(path, newline="") as f:
        rows = [r for r in csv.DictReader(f) if r.get(column)]
    if not rows:
        return None
    best = min(rows, key=lambda r: float(r[column]))
    return float(best[column]), int(best["step"])


def collapses_text(collapses):
    if not collapses:
        return "0"
    return f"{len(collapses)}: " + ", ".join(f"{a:,}–{b:,} ({p:.2f})" for a, b, p in collapses)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("runs", nargs="+")
    ap.add_argument("--window", type=int, default=1000)
    ap.add_argument("--solved", type=float, default=1.0)
    ap.add_argument("--collapse", type=float, default=5.0)
    ap.add_argument("--cost", choices=sorted(COLUMNS), default="bits")
    ap.add_argument("--at", default="", help="steps, comma-separated: a column of the means there")
    a = ap.parse_args()
    if a.window < 1:
        ap.error("--window must be at least 1 step")
    try:
        at = [int(s) for s in a.at.split(",") if s.strip()]
    except ValueError:
        ap.error(f"--at takes steps separated by commas, e.g. 64000,160000; got {a.at!r}")
    for run in a.runs:
        check_run(run)
    at_head = " | mean at " + " / ".join(f"{s:,}" for s in at) if at else ""
    print(f"| run | steps | first step < {a.solved:g} | collapses (> {a.collapse:g}: first–last step, highest) | "
          f"final | best (step) | best held-out (step) | largest gradient norm | skipped | verdict | "
          f"seconds{at_head} |")
    print("|---|---|---|---|---|---|---|---|---|---|---|" + ("---|" if at else ""))
    counts = {}
    # seed2 before seed10: runs in the order of the numbers in their names
    key = lambda run: [int(t) if t.isdigit() else t for t in re.split(r"(\d+)", run)]
    for run in sorted(a.runs, key=key):
        r = analyse(run, a.window, a.solved, a.collapse, a.cost, at)
        counts[r["verdict"]] = counts.get(r["verdict"], 0) + 1
        first = f"{r['first']:,}" if r["first"] is not None else "–"
        best = f"{r['best'][0]:.2f} ({r['best'][1]:,})" if r["best"] else "–"
        best_mean = f"{r['best_mean'][1]:.2f} ({r['best_mean'][0]:,})"
        print(f"| {r['run']} | {r['steps']:,} | {first} | {collapses_text(r['collapses'])} | {r['final']:.2f} | "
              f"{best_mean} | {best} | {r['largest_norm']:.3g} | {r['skipped']} | {r['verdict']} | "
              f"{r['seconds']:.0f} |" + (" " + " / ".join("–" if m is None else f"{m:.2f}" for m in r["at"]) + " |"
                                         if at else ""))
    print()
    print(", ".join(f"{v}: {n}" for v, n in sorted(counts.items())))


if __name__ == "__main__":
    sys.exit(main())
