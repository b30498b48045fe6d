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

Needs Debian's python3-torch (apt-get install python3-torch).
"""
import argparse
import csv
import json
import os
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
CONFIGS = ["ntm-copy", "ntm-lstm-copy", "ntm-recall", "matrnn-copy", "vector-ntm-copy", "matrnn2-fixed"]
TORCH_NAME = {"matrnn2-fixed": "matrnn2-dynet"}


def run_matmem(binary, config, steps, warmup):
    with tempfile.NamedTemporaryFile(suffix=".csv") as f:
        subprocess.run([binary, "bench", "train", "--config", config, "--steps", str(steps), "--warmup",
                        str(warmup), "--csv", f.name], check=True, stdout=subprocess.DEVNULL)
        row = next(csv.DictReader(open(f.name)))
    return float(row["ms_median"]), float(row["sequences_per_s"])


def run_torch(config, steps, warmup):
    out = subprocess.run([sys.executable, os.path.join(HERE, "bench_train_torch.py"), "--config",
                          TORCH_NAME.get(config, config), "--steps", str(steps), "--warmup", str(warmup), "--json"],
                         check=True, capture_output=True, text=True).stdout
    r = json.loads(out.strip().splitlines()[-1])
    return r["ms_per_step_median"], r["sequences_per_s"]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--matmem", default=os.path.join(HERE, "..", "build", "matmem"), help="the matmem binary")
    ap.add_argument("--config", action="append", choices=CONFIGS, help="configuration (repeatable; default all)")
    ap.add_argument("--steps", type=int, default=50, help="timed steps per run")
    ap.add_argument("--warmup", type=int, default=5, help="untimed steps first")
    ap.add_argument("--rounds", type=int, default=3, help="PyTorch runs per configuration")
    ap.add_argument("--matmem-runs", type=int, default=3,
                    help="matmem runs between consecutive PyTorch runs (and before the first, after the last)")
    a = ap.parse_args()
    if not os.path.exists(a.matmem):
        ap.error(f"{a.matmem} not found; build first (tools/setup.sh) or pass --matmem")
    if a.rounds < 1 or a.matmem_runs < 1:
        ap.error("--rounds and --matmem-runs must be at least 1")
    print(f"{a.rounds} PyTorch runs per configuration, each between {a.matmem_runs} matmem runs on either side; "
          f"{a.steps} timed steps (after {a.warmup}) per run, one thread each; medians over runs")
    print(f"| configuration | matmem ms/step | PyTorch ms/step | matmem seq/s | PyTorch seq/s | speed-up (ms/step) "
          f"| speed-up (seq/s) | paired speed-up (ms/step), median [range] |")
    print("|---|---|---|---|---|---|---|---|")
    for config in a.config or CONFIGS:
        # groups[i]: the matmem runs before PyTorch run i (groups[rounds]: after the last one)
        groups, tt = [], []
        for i in range(a.rounds + 1):
            groups.append([run_matmem(a.matmem, config, a.steps, a.warmup) for _ in range(a.matmem_runs)])
            if i < a.rounds:
                tt.append(run_torch(config, a.steps, a.warmup))
        mm = [x for g in groups for x in g]
        m_ms = statistics.median(x[0] for x in mm)
        m_sps = statistics.median(x[1] for x in mm)
        t_ms = statistics.median(x[0] for x in tt)
        t_sps = statistics.median(x[1] for x in tt)
        paired = [t[0] / statistics.median(x[0] for x in groups[i] + groups[i + 1]) for i, t in enumerate(tt)]
        print(f"| {config} | {m_ms:.2f} | {t_ms:.2f} | {m_sps:.0f} | {t_sps:.1f} | {t_ms / m_ms:.1f}× "
              f"| {m_sps / t_sps:.1f}× | {statistics.median(paired):.1f}× [{min(paired):.1f}–{max(paired):.1f}] |",
              flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
