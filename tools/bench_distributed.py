#!/usr/bin/python3
"""Times data-parallel training and sweeps on this machine, for the scaling table of tools/README.md.

    /usr/bin/python3 tools/bench_distributed.py [--matmem build/matmem] [--batches 16,64,256] [--seconds 20]

Training: the MatNTM copy step at the paper's config and each batch, as 1 process with 1 thread, 1 process
with 2 threads, and `mpirun -np 2 matmem train --distributed` (1 thread a rank): ms/step, sequences/s, the
speed-up over one thread, and the ms per step rank 0 spent gathering and adding gradients (waits for the
other rank included). Each configuration trains for about --seconds (a first short run sets the step count),
with every sequence at the longest length (20), so that the steps cost the same.
Sweeps: 16 runs of one step of a small model, with 1 and 2 workers (--jobs) and over 2 ranks: runs per hour
and wall seconds per run, which is the dispatch overhead (a process start, the model built, a checkpoint).
Model for K machines: a step of batch B on K ranks costs T(B/K) + C(K), T measured here (one thread, batches
1…1024) and C the gather of every rank's gradient (4·P bytes) by a ring, (K−1)·(α + 4P/β), plus the (K−1)·P
additions; printed for two networks: 10 Gb Ethernet over TCP (α = 50 µs, β = 1.25 GB/s) and HDR InfiniBand
(α = 2 µs, β = 12.5 GB/s). The figures are assumptions stated here, not measurements.
"""
import argparse
import json
import os
import shutil
import subprocess
import tempfile
import time

MPIRUN = ["mpirun", "--oversubscribe", "-np", "2"] + (["--allow-run-as-root"] if os.geteuid() == 0 else [])
FIXED = ["--set", "task.min_length=20", "--set", "task.max_length=20", "--set", "log_every=1000000",
         "--set", "checkpoint_every=0", "--set", "memory.check=false"]


def train(matmem, tmp, batch, steps, threads=1, ranks=1):
    out = tempfile.mkdtemp(dir=tmp)
    cmd = [matmem, "train", "--steps", str(steps), "--set", f"batch={batch}", "--threads", str(threads),
           "--json", "--overwrite", "--out", out] + FIXED
    if ranks > 1:
        cmd = MPIRUN + cmd + ["--distributed"]
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1")
    r = subprocess.run(cmd, capture_output=True, text=True, env=env, check=True)
    shutil.rmtree(out)
    return json.loads(r.stdout.strip().splitlines()[-1])


def sweep(matmem, tmp, how):
    d = tempfile.mkdtemp(dir=tmp)
    plan = os.path.join(d, "plan.json")
    with open(plan, "w") as f:
        json.dump({"out": os.path.join(d, "runs"), "steps": 1, "seeds": list(range(1, 17)),
                   "set": {"model.layers": "4x3", "task.rows": 2, "task.cols": 3, "task.max_length": 3,
                           "batch": 2, "ntm.slots": 4, "ntm.slot_rows": 2, "ntm.slot_cols": 2}}, f)
    cmd = [matmem, "sweep", plan] + (["--jobs", "2"] if how == "2 jobs" else [])
    if how == "2 ranks":
        cmd = MPIRUN + cmd
    t0 = time.perf_counter()
    subprocess.run(cmd, capture_output=True, text=True, check=True, env=dict(os.environ, OPENBLAS_NUM_THREADS="1"))
    secs = time.perf_counter() - t0
    shutil.rmtree(d)
    return secs


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--matmem", default="build/matmem")
    ap.add_argument("--batches", default="16,64,256")
    ap.add_argument("--seconds", type=float, default=20)
    a = ap.parse_args()
    tmp = tempfile.mkdtemp()
    try:
        print("| batch | configuration | ms/step | sequences/s | speed-up | gather+add ms/step | parameters |")
        print("|---|---|---|---|---|---|---|")
        for batch in [int(b) for b in a.batches.split(",")]:
            probe = train(a.matmem, tmp, batch, 5)
            steps = max(10, int(a.seconds / probe["seconds_per_step"]))
            base = None
            for label, threads, ranks in [("1 process, 1 thread", 1, 1), ("1 process, 2 threads", 2, 1),
                                          ("2 ranks, 1 thread each", 1, 2)]:
                r = train(a.matmem, tmp, batch, steps, threads, ranks)
                ms = 1e3 * r["seconds_per_step"]
                base = base or ms
                reduce_ms = 1e3 * r.get("reduce_seconds_per_step", 0.0)
                print(f"| {batch} | {label} | {ms:.2f} | {batch / r['seconds_per_step']:.0f} | {base / ms:.2f}× | "
                      f"{reduce_ms:.3f} | {r['params']} |", flush=True)
        print()
        # T(b): one thread, batch b, every sequence at length 20.
        T, P = {}, 0
        for b in [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024]:
            probe = train(a.matmem, tmp, b, 3)
            r = train(a.matmem, tmp, b, max(5, int(a.seconds / 4 / probe["seconds_per_step"])))
            T[b], P = r["seconds_per_step"], r["params"]
        print("| batch b | T(b) ms/step, 1 thread | sequences/s |")
        print("|---|---|---|")
        for b, t in T.items():
            print(f"| {b} | {1e3 * t:.2f} | {b / t:.0f} |")
        for net, alpha, beta in [("10 Gb Ethernet (α 50 µs, β 1.25 GB/s)", 50e-6, 1.25e9),
                                 ("HDR InfiniBand (α 2 µs, β 12.5 GB/s)", 2e-6, 12.5e9)]:
            print()
            print(f"Expected speed-up over one machine, {net}, gradient {4 * P} bytes:")
            print()
            Ks = [2, 4, 8, 16, 32, 64]
            print("| batch B | " + " | ".join(f"K={k}" for k in Ks) + " |")
            print("|---|" + "---|" * len(Ks))
            for B in [16, 64, 256, 1024]:
                cells = []
                for k in Ks:
                    if B // k < 1 or B % k:
                        cells.append("–")
                        continue
                    comm = (k - 1) * (alpha + 4 * P / beta) + (k - 1) * P * 1e-9  # ~1 ns an addition
                    cells.append(f"{T[B] / (T[B // k] + comm):.1f}")
                print(f"| {B} | " + " | ".join(cells) + " |")
        print()
        print("| sweep of 16 one-step runs | wall s | s per run | runs per hour |")
        print("|---|---|---|---|")
        for how in ["1 job", "2 jobs", "2 ranks"]:
            secs = sweep(a.matmem, tmp, how)
            print(f"| {how} | {secs:.2f} | {secs / 16:.3f} | {16 * 3600 / secs:.0f} |", flush=True)
    finally:
        shutil.rmtree(tmp)


if __name__ == "__main__":
    main()
