#!/usr/bin/python3
"""matmem against PyTorch on whole training steps, side by side in one run.

For every configuration, alternates `matmem bench train` and tools/bench_train_torch.py (same seed, so the
same sequences; one thread each) for --rounds rounds, so slow spells of a shared machine hit both; reports
each program's median ms/step and sequences/s (median over rounds) and the speed-ups.

    /usr/bin/python3 tools/compare_train.py [--matmem build/matmem] [--config ntm-copy ...]
                                            [--steps 50] [--warmup 5] [--rounds 3]

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
    ap.add_argument("--rounds", type=int, default=3, help="alternating runs of each program per configuration")
    a = ap.parse_args()
    if not os.path.exists(a.matmem):
        ap.error(f"{a.matmem} not found; build first (tools/setup.sh) or pass --matmem")
    print(f"{a.rounds} alternating rounds of {a.steps} timed steps (after {a.warmup}) per program and configuration, "
          f"one thread each; medians over rounds")
    print(f"| configuration | matmem ms/step | PyTorch ms/step | matmem seq/s | PyTorch seq/s | speed-up (ms/step) "
          f"| speed-up (seq/s) |")
    print("|---|---|---|---|---|---|---|")
    for config in a.config or CONFIGS:
        mm, tt = [], []
        for _ in range(a.rounds):
            mm.append(run_matmem(a.matmem, config, a.steps, a.warmup))
            tt.append(run_torch(config, a.steps, a.warmup))
        m_ms = statistics.median(x[0] for x in mm)
        m_sps = statistics.median(x[1] for x in mm)
        t_ms = statistics.median(x[0] for x in tt)
        t_sps = statistics.median(x[1] for x in tt)
        print(f"| {config} | {m_ms:.2f} | {t_ms:.2f} | {m_sps:.0f} | {t_sps:.1f} | {t_ms / m_ms:.1f}× "
              f"| {m_sps / t_sps:.1f}× |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
