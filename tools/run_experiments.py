#!/usr/bin/python3
"""Runs a set of `matmem train` jobs in parallel and tabulates their learning curves.

    /usr/bin/python3 tools/run_experiments.py PLAN [--jobs 2] [--out runs/experiments] [--matmem build/matmem]

PLAN names a built-in set of runs:
  vector-ntm   the vector NTM with pytorch-ntm's copy settings (models/configs/vector_ntm_copy.json),
               seeds 1-4, 30,000 sequences; reports the first sequence count at which the mean cost over
               the last 1000 sequences falls below 1 bit;
  copy         MatNTM (MatRNN controller), MatNTM (MatLSTM controller), MatRNN and MatLSTM on the matrix
               copy task with the paper's Table 1 settings, seeds 1-5, --steps (default 20,000);
  recall       the same four on matrix associative recall, seeds 1-2.
Each run writes its own directory (metrics.csv, checkpoint); a run whose checkpoint already reached its
step budget is not run again, so an interrupted plan can be restarted. The summary is printed as a
Markdown table and written to OUT/PLAN.md.
"""
import argparse
import csv
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

MODELS = {
    "MatNTM (MatRNN ctrl)": ["--model", "matntm", "--set", "ntm.controller=rnn"],
    "MatNTM (MatLSTM ctrl)": ["--model", "matntm", "--set", "ntm.controller=lstm"],
    "MatRNN": ["--model", "matrnn"],
    "MatLSTM": ["--model", "matlstm"],
}


def plan_runs(plan, steps):
    runs = []
    if plan == "vector-ntm":
        for seed in range(1, 5):
            runs.append((f"vector-ntm/seed{seed}", ["--config", "models/configs/vector_ntm_copy.json",
                                                    "--seed", str(seed)] + (["--steps", str(steps)] if steps else [])))
    elif plan in ("copy", "recall"):
        seeds = range(1, 6) if plan == "copy" else range(1, 3)
        for name, args in MODELS.items():
            tag = name.replace(" ", "_").replace("(", "").replace(")", "")
            for seed in seeds:
                runs.append((f"{plan}/{tag}/seed{seed}", args + ["--task", plan, "--seed", str(seed),
                                                                 "--steps", str(steps or 20000),
                                                                 "--set", "log_every=100", "--set", "checkpoint_every=2000"]))
    else:
        sys.exit(f"unknown plan {plan} (vector-ntm, copy or recall)")
    return runs


def read_metrics(path):
    """Rows of metrics.csv; rows a resumed run wrote again replace the stale ones past its checkpoint."""
    if not os.path.exists(path):
        return []
    rows = []
    with open(path) as f:
        for row in csv.DictReader(f):
            r = {k: float(v) for k, v in row.items()}
            while rows and rows[-1]["step"] >= r["step"]:
                rows.pop()
            rows.append(r)
    return rows


def run_one(matmem, out, name, args):
    d = os.path.join(out, name)
    rows = read_metrics(os.path.join(d, "metrics.csv"))
    os.makedirs(d, exist_ok=True)
    cmd = [matmem, "train", "--out", d, "--json"] + args
    if rows and os.path.exists(os.path.join(d, "checkpoint.safetensors")):
        steps = [a for i, a in enumerate(args) if i > 0 and args[i - 1] == "--steps"]
        cmd = [matmem, "train", "--resume", d, "--json"] + (["--steps", steps[0]] if steps else [])
    with open(os.path.join(d, "log.txt"), "a") as log:
        r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=log, text=True)
    return name, r.returncode, r.stdout.strip()


def first_below(rows, threshold, window=1000):
    """The first logged step at which the mean bit error over the last `window` steps is below threshold."""
    for k in range(len(rows)):
        if rows[k]["step"] < window:
            continue
        recent = [r["bits_per_sequence"] for r in rows[:k + 1] if r["step"] > rows[k]["step"] - window]
        if sum(recent) / len(recent) < threshold:
            return int(rows[k]["step"])
    return None


def summarize(plan, out, runs):
    lines = []
    if plan == "vector-ntm":
        lines += ["| seed | sequences to < 1 bit (mean of last 1000) | final mean bits (last 1000) | seconds |",
                  "|---|---|---|---|"]
        for name, _ in runs:
            rows = read_metrics(os.path.join(out, name, "metrics.csv"))
            first = first_below(rows, 1.0)
            last = [r["bits_per_sequence"] for r in rows if rows and r["step"] > rows[-1]["step"] - 1000]
            final = sum(last) / len(last) if last else float("nan")
            secs = rows[-1]["seconds"] if rows else float("nan")
            lines.append(f"| {name.split('seed')[-1]} | {first if first else 'not reached'} | {final:.2f} | {secs:.0f} |")
    else:
        lines += ["| model | seed | steps | final bits/sequence (mean of last 1000 steps) | final loss | "
                  "first step with a 1000-step mean < 1 bit | seconds |",
                  "|---|---|---|---|---|---|---|"]
        for name, _ in runs:
            rows = read_metrics(os.path.join(out, name, "metrics.csv"))
            if not rows:
                lines.append(f"| {name} | | | no data | | |")
                continue
            last = [r for r in rows if r["step"] > rows[-1]["step"] - 1000]
            bits = sum(r["bits_per_sequence"] for r in last) / len(last)
            loss = sum(r["loss"] for r in last) / len(last)
            model, seed = name.split("/")[1], name.split("seed")[-1]
            lines.append(f"| {model.replace('_', ' ')} | {seed} | {int(rows[-1]['step'])} | {bits:.2f} | {loss:.4f} | "
                         f"{first_below(rows, 1.0) or 'not reached'} | {rows[-1]['seconds']:.0f} |")
    text = "\n".join(lines)
    with open(os.path.join(out, f"{plan}.md"), "w") as f:
        f.write(text + "\n")
    print(text)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("plan")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--steps", type=int, default=0)
    ap.add_argument("--out", default="runs/experiments")
    ap.add_argument("--matmem", default="build/matmem")
    ap.add_argument("--summary-only", action="store_true")
    a = ap.parse_args()
    runs = plan_runs(a.plan, a.steps)
    if not a.summary_only:
        with ThreadPoolExecutor(a.jobs) as pool:
            for name, rc, out in pool.map(lambda r: run_one(a.matmem, a.out, *r), runs):
                print(f"{name}: exit {rc} {out}", flush=True)
    summarize(a.plan, a.out, runs)


if __name__ == "__main__":
    main()
