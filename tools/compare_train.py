#!/usr/bin/python3
"""matmem against PyTorch on whole training steps, side by side in one run.

For every configuration, alternates `matmem bench train` and tools/bench_train_torch.py (same seed, so the
same sequences; one thread each) for --rounds rounds, so slow spells of a shared machine hit both; reports
each program's median ms/step and sequences/s (median over rounds) and the speed-ups.

A PyTorch run takes about as long as thirty matmem runs of the same steps, and a shared machine's speed
drifts within minutes, so one short matmem run beside a long PyTorch run samples a different moment of the
drift. Each PyTorch run therefore sits between --matmem-runs matmem runs on either side, and each round
also gives a paired speed-up: that PyTorch run's ms/step over the median of the matmem runs around it.
The last column is the median of those over the rounds, with their range.

    /usr/bin/python3 tools/compare_train.py [--matmem build/matmem] [--config ntm-copy ...]
                                            [--steps 50] [--warmup 5] [--rounds 3] [--matmem-runs 3]
                                            [--batch B] [--slots N] [--length L]
    /usr/bin/python3 tools/compare_train.py --scaling [batch,slots,length] [--steps 20]
                                            [--matmem-frames 64000] ...

--batch sets the batch of every configuration timed, on both sides (matmem's `--set batch=B`, the port's
--batch): any configuration but the fixed matrnn2-fixed, and all of those when no --config is given, so
--batch 1 compares one sequence a step for each. --slots and --length (every sequence L frames long) change
ntm-copy and ntm-lstm-copy only (matmem's keys ntm.slots, task.min_length = task.max_length; ntm-copy when no
--config is given). --scaling times ntm-copy (or the one --config given) over the sizes `matmem bench scaling`
sweeps, one size at a time with the others at the paper's values and every sequence 10 frames long unless the
length is swept (as there), and adds each program's peak RSS and the growth exponent of the cost per step: the
least-squares slope of log(ms per step) on log(size), over all sizes and over the last two (where fixed costs
per step weigh least). A matmem run there times at least --matmem-frames sequence frames, steps × batch ×
length (more steps than --steps at small batches and short lengths: twenty steps of batch 4 take 20 ms, too
short a sample to set batches against each other), and the batch sweep ends with each batch's matmem
sequences/s over the best batch's. The last three columns set matmem against the machine: its GFLOP/s (the
ops' own FLOP counts over the step's time), the GFLOP/s it would need to run 25× as fast as PyTorch did, and
the single-core SGEMM peak `matmem bench train` measured in the same runs.

Needs Debian's python3-torch (apt-get install python3-torch).
"""
import argparse
import csv
import json
import math
import os
import re
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
# The configurations both programs read from tools/bench_configs.json, and the fixed C++-peer step.
with open(os.path.join(HERE, "bench_configs.json")) as _f:
    CONFIGS = [c["name"] for c in json.load(_f)["configurations"]] + ["matrnn2-fixed"]
TORCH_NAME = {"matrnn2-fixed": "matrnn2-dynet"}


# --slots, --length and --scaling apply to these; --batch to every configuration but matrnn2-fixed.
SCALABLE = {"ntm-copy", "ntm-lstm-copy"}
BATCHABLE = [c for c in CONFIGS if c != "matrnn2-fixed"]
# The sizes `matmem bench scaling` sweeps (tools/bench_command.cpp), each with the others at the paper's values.
SWEEPS = {
    "batch": [1, 2, 4, 8, 16, 64, 256],
    "slots": [32, 64, 128, 256, 512, 1024],
    "length": [10, 20, 50, 100, 200],
}


def matmem_sets(scale):
    """--set arguments of `matmem bench train` for a scale dict (keys batch, slots, length; any may be absent)."""
    sets = []
    if "batch" in scale:
        sets.append(f"batch={scale['batch']}")
    if "slots" in scale:
        sets.append(f"ntm.slots={scale['slots']}")
    if "length" in scale:
        sets += [f"task.min_length={scale['length']}", f"task.max_length={scale['length']}"]
    return [a for kv in sets for a in ("--set", kv)]


def torch_args(scale):
    args = []
    if "batch" in scale:
        args += ["--batch", str(scale["batch"])]
    if "slots" in scale:
        args += ["--slots", str(scale["slots"])]
    if "length" in scale:
        args += ["--min-length", str(scale["length"]), "--max-length", str(scale["length"])]
    return args


def run_matmem(binary, config, steps, warmup, scale=None):
    """(ms/step median, sequences/s, peak RSS MiB, GFLOP/s, the run's SGEMM peak GFLOP/s) of one `matmem bench
    train` process."""
    with tempfile.NamedTemporaryFile(suffix=".csv") as f:
        out = subprocess.run([binary, "bench", "train", "--config", config, "--steps", str(steps), "--warmup",
                              str(warmup), "--csv", f.name] + matmem_sets(scale or {}), check=True,
                             capture_output=True, text=True).stdout
        row = next(csv.DictReader(open(f.name)))
    peak = re.search(r"SGEMM peak \(1024\^3\) ([0-9.]+) GFLOP/s", out)
    return (float(row["ms_median"]), float(row["sequences_per_s"]), float(row["peak_rss_mib"]),
            float(row["gflops"]), float(peak.group(1)) if peak else math.nan)


def run_torch(config, steps, warmup, scale=None):
    out = subprocess.run([sys.executable, os.path.join(HERE, "bench_train_torch.py"), "--config",
                          TORCH_NAME.get(config, config), "--steps", str(steps), "--warmup", str(warmup), "--json"]
                         + torch_args(scale or {}), check=True, capture_output=True, text=True).stdout
    r = json.loads(out.strip().splitlines()[-1])
    return r["ms_per_step_median"], r["sequences_per_s"], r["peak_rss_mib"]


def slope(xs, ys):
    """Least-squares slope of log(y) on log(x)."""
    lx, ly = [math.log(x) for x in xs], [math.log(y) for y in ys]
    mx, my = statistics.fmean(lx), statistics.fmean(ly)
    return sum((a - mx) * (b - my) for a, b in zip(lx, ly)) / sum((a - mx) ** 2 for a in lx)


def compare(a, config, scale, matmem_steps=None):
    """Alternating runs of one configuration: (matmem runs, PyTorch runs, paired speed-ups)."""
    groups, tt = [], []  # groups[i]: the matmem runs before PyTorch run i (groups[rounds]: after the last one)
    for i in range(a.rounds + 1):
        groups.append([run_matmem(a.matmem, config, matmem_steps or a.steps, a.warmup, scale)
                       for _ in range(a.matmem_runs)])
        if i < a.rounds:
            tt.append(run_torch(config, a.steps, a.warmup, scale))
    paired = [t[0] / statistics.median(x[0] for x in groups[i] + groups[i + 1]) for i, t in enumerate(tt)]
    return [x for g in groups for x in g], tt, paired


def med(runs, k):
    return statistics.median(x[k] for x in runs)


def scaling(a, config):
    sweeps = a.scaling.split(",")
    for name in sweeps:
        if name not in SWEEPS:
            sys.exit(f"compare_train.py: --scaling {name}: not one of {', '.join(SWEEPS)}")
    print(f"{config}: one size at a time, the others at the paper's values (every sequence 10 frames "
          f"long unless swept); {a.rounds} PyTorch runs per size between {a.matmem_runs} matmem runs; {a.steps} timed "
          f"steps (after {a.warmup}), matmem's at least {a.matmem_frames} frames; medians; peak RSS per process")
    print("| sweep | size | matmem ms/step | matmem seq/s | matmem RSS MiB | PyTorch ms/step | PyTorch seq/s "
          "| PyTorch RSS MiB | paired speed-up, median [range] | matmem GFLOP/s | 25× needs GFLOP/s | SGEMM peak |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for name in sweeps:
        xs, mm_ms, tt_ms, mm_sps = [], [], [], []
        for n in SWEEPS[name]:
            scale = dict({"length": 10}, **{name: n})  # as `matmem bench scaling`: fixed lengths, alike steps
            batch = scale.get("batch", 16)
            frames = batch * scale["length"]
            mm, tt, paired = compare(a, config, scale, max(a.steps, -(-a.matmem_frames // frames)))
            xs.append(n)
            mm_ms.append(med(mm, 0))
            tt_ms.append(med(tt, 0))
            mm_sps.append(med(mm, 1))
            # The step's FLOPs (the ops' own count, forward and backward) over a twenty-fifth of PyTorch's step:
            # the rate at which matmem would run 25× PyTorch's speed, beside the SGEMM peak of the same runs.
            step_gflop = med(mm, 3) * batch / med(mm, 1)  # GFLOP/s × mean seconds per step
            print(f"| {name} | {n} | {med(mm, 0):.2f} | {med(mm, 1):.0f} | {max(x[2] for x in mm):.0f} "
                  f"| {med(tt, 0):.1f} | {med(tt, 1):.1f} | {max(x[2] for x in tt):.0f} "
                  f"| {statistics.median(paired):.1f}× [{min(paired):.1f}–{max(paired):.1f}] "
                  f"| {med(mm, 3):.1f} | {step_gflop / (med(tt, 0) / 25e3):.1f} | {med(mm, 4):.1f} |", flush=True)
        print(f"| {name} | growth exponent of ms/step (all sizes; last two) "
              f"| {slope(xs, mm_ms):.2f}; {slope(xs[-2:], mm_ms[-2:]):.2f} | | "
              f"| {slope(xs, tt_ms):.2f}; {slope(xs[-2:], tt_ms[-2:]):.2f} | | | | | | |", flush=True)
        if name == "batch":
            best = max(range(len(xs)), key=lambda i: mm_sps[i])
            print(f"| batch | matmem seq/s over the best batch's ({xs[best]}) | "
                  + ", ".join(f"{n}: {s / mm_sps[best]:.2f}" for n, s in zip(xs, mm_sps)) + " | | | | | | | | | |",
                  flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--matmem", default=os.path.join(HERE, "..", "build", "matmem"), help="the matmem binary")
    ap.add_argument("--config", action="append", choices=CONFIGS, help="configuration (repeatable; default all)")
    ap.add_argument("--steps", type=int, default=50, help="timed steps per run")
    ap.add_argument("--warmup", type=int, default=5, help="untimed steps first")
    ap.add_argument("--rounds", type=int, default=3, help="PyTorch runs per configuration")
    ap.add_argument("--matmem-runs", type=int, default=3,
                    help="matmem runs between consecutive PyTorch runs (and before the first, after the last)")
    ap.add_argument("--matmem-frames", type=int, default=64000,
                    help="--scaling: each matmem run times at least this many frames (steps × batch × length)")
    ap.add_argument("--batch", type=int, help="every configuration but matrnn2-fixed: sequences per step (default "
                                              "the configuration's; without --config, all of them)")
    ap.add_argument("--slots", type=int, help="ntm-copy, ntm-lstm-copy: memory slots (default 120)")
    ap.add_argument("--length", type=int, help="ntm-copy, ntm-lstm-copy: every sequence this long "
                                               "(default: uniform in 1..20)")
    ap.add_argument("--scaling", nargs="?", const=",".join(SWEEPS), metavar="SWEEPS",
                    help=f"the scaling table instead: sweeps {','.join(SWEEPS)} (default all)")
    a = ap.parse_args()
    scale = {k: getattr(a, k) for k in ("batch", "slots", "length") if getattr(a, k) is not None}
    if any(v < 1 for v in scale.values()):
        ap.error("--batch, --slots and --length must be at least 1")
    sized = {"slots", "length"} & set(scale) or a.scaling  # options that fit SCALABLE only
    configs = a.config or (["ntm-copy"] if sized else BATCHABLE if scale else CONFIGS)
    if sized and any(c not in SCALABLE for c in configs):
        ap.error(f"--slots, --length and --scaling apply to {', '.join(sorted(SCALABLE))} only")
    if "batch" in scale and "matrnn2-fixed" in configs:
        ap.error("--batch: matrnn2-fixed is a fixed step of batch 16")
    if a.scaling and (scale or len(configs) != 1):
        ap.error("--scaling takes one --config and sets the sizes itself")
    if not os.path.exists(a.matmem):
        ap.error(f"{a.matmem} not found; build first (tools/setup.sh) or pass --matmem")
    if a.rounds < 1 or a.matmem_runs < 1 or a.matmem_frames < 1:
        ap.error("--rounds, --matmem-runs and --matmem-frames must be at least 1")
    if a.scaling:
        scaling(a, configs[0])
        return 0
    print(f"{a.rounds} PyTorch runs per configuration, each between {a.matmem_runs} matmem runs on either side; "
          f"{a.steps} timed steps (after {a.warmup}) per run, one thread each; medians over runs"
          + (f"; {' '.join(f'{k} {v}' for k, v in scale.items())}" if scale else ""))
    print(f"| configuration | matmem ms/step | PyTorch ms/step | matmem seq/s | PyTorch seq/s | speed-up (ms/step) "
          f"| speed-up (seq/s) | paired speed-up (ms/step), median [range] |")
    print("|---|---|---|---|---|---|---|---|")
    for config in configs:
        mm, tt, paired = compare(a, config, scale)
        m_ms, m_sps, t_ms, t_sps = med(mm, 0), med(mm, 1), med(tt, 0), med(tt, 1)
        print(f"| {config} | {m_ms:.2f} | {t_ms:.2f} | {m_sps:.0f} | {t_sps:.1f} | {t_ms / m_ms:.1f}× "
              f"| {m_sps / t_sps:.1f}× | {statistics.median(paired):.1f}× [{min(paired):.1f}–{max(paired):.1f}] |",
              flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
