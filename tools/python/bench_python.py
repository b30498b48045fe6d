#!/usr/bin/python3
"""The speed of matmem from Python: the MatNTM copy step (bench config ntm-copy) four ways, one thread each.

    (b) C++    the bundled C++ MatNTM: Trainer({...model: matntm}).step() driven from Python
    (a) Python the same step written in Python (tools/python/examples/matntm.py, registered as pymatntm): the
               same ops as MatNTM::step, fused ones included, trained by the same C++ Trainer
    (c) CLI    `matmem bench train --config ntm-copy` (the command line's own number for the C++ step)
    (d) torch  the PyTorch port of tools/bench_train_torch.py (eager, float32)

Paired alternating rounds: each round times --steps steps of (b), then (a), then (d) on the same data stream
(the Trainers draw the same batches), and the ratios a/b and d/a are taken per round; the table gives the
medians over rounds. (c) runs in each round too, timing the
same steps of the data stream (its --warmup skips the steps before them; it reports their mean). OMP/OPENBLAS threads 1,
torch.set_num_threads(1). The machine's load average is printed with the table.

    /usr/bin/python3 tools/python/bench_python.py [--rounds 5] [--steps 10] [--batch 16 --batch 1]
                                                  [--matmem build/matmem] [--no-torch] [--no-cli]
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time

for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[var] = "1"

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
# tools/python/matmem is the package's source without its extension: import the built or installed one.
sys.path = [p for p in sys.path if os.path.abspath(p or ".") != HERE]
sys.path.insert(0, os.path.join(HERE, "examples"))
sys.path.insert(0, os.path.join(ROOT, "tools"))

import matmem  # noqa: E402
import matntm  # noqa: E402


def settings(batch):
    with open(os.path.join(ROOT, "tools", "bench_configs.json")) as f:
        conf = next(c for c in json.load(f)["configurations"] if c["name"] == "ntm-copy")
    return dict(conf["settings"], batch=batch, threads=1, steps=10 ** 6)


def timed(step, n):
    t0 = time.perf_counter()
    for _ in range(n):
        step()
    return (time.perf_counter() - t0) * 1e3 / n


def cli_ms(matmem_exe, batch, steps, warmup):
    out = subprocess.run([matmem_exe, "bench", "train", "--config", "ntm-copy", "--steps", str(steps), "--warmup",
                          str(warmup), "--set", f"batch={batch}", "--csv", "/dev/stdout"],
                         capture_output=True, text=True, check=True).stdout
    row = next(l for l in out.splitlines() if l.startswith("ntm-copy,")).split(",")
    return 1e3 * batch / float(row[5])  # config,steps,ms median,min,max,sequences/s: the mean ms per step


def torch_stepper(batch, n):
    import torch
    import bench_train_torch as bt
    torch.set_num_threads(1)  # bench_train_torch sets the interop threads to 1 on import
    torch.manual_seed(1)
    scale = dict(bt.SCALE_DEFAULTS, batch=batch)
    model, seqs, opt, _ = bt.CONFIGS["ntm-copy"](1, n, scale)
    params = list(model.parameters())
    optimizer = torch.optim.RMSprop(params, lr=opt["lr"], alpha=opt["alpha"], eps=opt["eps"], momentum=opt["momentum"])
    it = iter(seqs)

    def step():
        optimizer.zero_grad()
        loss = bt.sequence_loss(model, *next(it))
        loss.item()
        loss.backward()
        bt.clip(params, opt["clip_value"], opt["clip_norm"])
        optimizer.step()
    return step


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--steps", type=int, default=10, help="steps per model per round")
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--batch", type=int, action="append")
    ap.add_argument("--matmem", default=os.path.join(ROOT, "build", "matmem"))
    ap.add_argument("--no-torch", action="store_true")
    ap.add_argument("--no-cli", action="store_true")
    a = ap.parse_args()
    name = matntm.register()
    rows = []
    for batch in a.batch or [16, 1]:
        s = settings(batch)
        cpp, py = matmem.Trainer(s), matmem.Trainer(dict(s, model=name))
        torch_step = None if a.no_torch else torch_stepper(batch, a.warmup + a.rounds * a.steps)
        for _ in range(a.warmup):
            cpp.step(), py.step()
            if torch_step:
                torch_step()
        t = {"cpp": [], "py": [], "torch": [], "cli": []}
        for _ in range(a.rounds):
            t["cpp"].append(timed(cpp.step, a.steps))
            t["py"].append(timed(py.step, a.steps))
            if torch_step:
                t["torch"].append(timed(torch_step, a.steps))
            if not a.no_cli:  # the same steps of the data stream as this round's
                t["cli"].append(cli_ms(a.matmem, batch, a.steps, cpp.steps_done - a.steps))
        med = {k: statistics.median(v) for k, v in t.items() if v}
        row = {"batch": batch, "cpp_ms": med["cpp"], "py_ms": med["py"],
               "py_over_cpp": statistics.median(p / c for p, c in zip(t["py"], t["cpp"]))}
        if t["cli"]:
            row["cli_ms"] = med["cli"]
            row["cpp_over_cli"] = statistics.median(c / x for c, x in zip(t["cpp"], t["cli"]))
        if t["torch"]:
            row["torch_ms"] = med["torch"]
            row["torch_over_py"] = statistics.median(x / p for x, p in zip(t["torch"], t["py"]))
        rows.append(row)
    print(f"load average {os.getloadavg()}; {a.rounds} paired rounds of {a.steps} steps; medians")
    print("batch | C++ step ms | Python step ms | Python/C++ | CLI ms | C++ from Python/CLI | torch ms | torch/Python")
    for r in rows:
        cli = f"{r['cli_ms']:.2f} | {r['cpp_over_cli']:.3f}" if r.get("cli_ms") else "- | -"
        tr = f"{r['torch_ms']:.2f} | {r['torch_over_py']:.1f}" if "torch_ms" in r else "- | -"
        print(f"{r['batch']} | {r['cpp_ms']:.2f} | {r['py_ms']:.2f} | {r['py_over_cpp']:.3f} | {cli} | {tr}")
    print(json.dumps(rows))


if __name__ == "__main__":
    main()
