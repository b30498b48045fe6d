#!/usr/bin/python3
"""Per-op forward+backward timings in PyTorch, for comparison with matmem.

For each small tensor op at a fixed shape (batch B=16, float32, one CPU thread)
this measures the wall time of one iteration of
    clear input grads (.grad = None) -> y = f(inputs) -> y.backward(g)
where g is a fixed random upstream gradient of y's shape (plain y.backward()
when y is a scalar). Inputs are uniform random (fixed seed), all with
requires_grad=True. After 200 warm-up iterations, --reps iterations are timed
with time.perf_counter; this is repeated --repeats times and the median and
minimum microseconds per iteration are reported.

One extra row, "tape overhead", times a chain of 1000 scalings y = y * 0.999 on
a 1-element tensor followed by backward, and reports ns per op (fwd+bwd);
it runs --reps/20 chains per measurement (20 warm-up chains).

circular_shift uses the torch.roll formulation
    y = sum_k s[:, k:k+1] * torch.roll(w, shifts=k-1, dims=1)
which measured faster here (~160 us) than the padded grouped conv1d (~225 us)
and far faster than pytorch-ntm's per-batch-item conv1d loop (~2 ms).

Run with Debian's python3-torch (PyTorch 1.13), not the pyenv python:
    /usr/bin/python3 tools/bench_ops_torch.py [--reps N] [--csv FILE] [--op NAME]
"""
import argparse
import csv
import statistics
import time

import torch
import torch.nn.functional as F

B = 16


def U(*shape, lo=0.0, hi=1.0):
    return torch.empty(*shape).uniform_(lo, hi)


def bilinear(P, Uu, V):  # U^T P V per batch item; U, V broadcast over batch
    return torch.matmul(Uu.t(), P) @ V


def frob_cos(K, M):  # K [B,6,6], M [B,N,6,6] -> [B,N], written out as in an NTM
    dot = (K.unsqueeze(1) * M).sum(dim=(2, 3))
    nk = (K * K).sum(dim=(1, 2)).sqrt().unsqueeze(1)
    nm = (M * M).sum(dim=(2, 3)).sqrt()
    return dot / (nk * nm + 1e-8)


def circular_shift(w, s):
    return sum(s[:, k:k + 1] * torch.roll(w, shifts=k - 1, dims=1) for k in range(3))


def sharpen(w, gamma):
    p = (w + 1e-12) ** gamma
    return p / p.sum(dim=1, keepdim=True)


def memory_write(M, w, E, A):
    wi = w[:, :, None, None]
    return M * (1 - wi * E.unsqueeze(1)) + wi * A.unsqueeze(1)


def softmax_xent(x, t):
    rows = x.shape[0] * x.shape[1]
    return -(t * F.log_softmax(x, dim=-1)).sum() / rows


def elementwise(op):
    return lambda a, b, p, s: op(a, b) + op(p, a) + op(b, s)


X = lambda: [U(B, 15, 15)]
ELEM_IN = lambda: [U(B, 15, 15), U(B, 15, 15), U(15, 15), U(B, 1, 1)]

# name -> (input builder, function)
OPS = {
    "bilinear": (lambda: [U(B, 15, 15), U(15, 15), U(15, 15)], bilinear),
    "mat": (lambda: [U(B, 15, 15), U(15, 15), U(15, 15), U(B, 16, 17), U(16, 15), U(17, 15), U(15, 15)],
            lambda P1, U1, V1, P2, U2, V2, Bi: bilinear(P1, U1, V1) + bilinear(P2, U2, V2) + Bi),
    "add": (ELEM_IN, elementwise(torch.add)),
    "sub": (ELEM_IN, elementwise(torch.sub)),
    "hadamard": (ELEM_IN, elementwise(torch.mul)),
    "scale": (X, lambda x: -1.7 * x + 0.3),
    "sigmoid": (X, torch.sigmoid),
    "tanh": (X, torch.tanh),
    "relu": (X, torch.relu),
    "softplus": (X, F.softplus),
    "exp": (X, torch.exp),
    "softmax": (X, lambda x: torch.softmax(x, dim=-1)),
    "sum": (X, lambda x: x.mean()),
    "cosine_similarity": (lambda: [U(B, 6, 6), U(B, 120, 6, 6)], frob_cos),
    "circular_shift": (lambda: [U(B, 120), U(B, 3)], circular_shift),
    "sharpen": (lambda: [U(B, 120, lo=0.05), U(B, 1, lo=1.0, hi=4.0)], sharpen),
    "memory_read": (lambda: [U(B, 120, 6, 6), U(B, 120)],
                    lambda M, w: (w[:, :, None, None] * M).sum(dim=1)),
    "memory_write": (lambda: [U(B, 120, 6, 6), U(B, 120), U(B, 6, 6), U(B, 6, 6)], memory_write),
    "bce_with_logits": (lambda: [U(B, 15, 15), U(B, 15, 15)], F.binary_cross_entropy_with_logits),
    "mse": (lambda: [U(B, 15, 15), U(B, 15, 15)], lambda x, t: ((x - t) ** 2).mean()),
    "softmax_cross_entropy": (lambda: [U(B, 15, 15), U(B, 15, 15)], softmax_xent),
}


def time_iters(step, reps, repeats, warmup=200):
    for _ in range(warmup):
        step()
    samples = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        for _ in range(reps):
            step()
        samples.append((time.perf_counter() - t0) / reps)
    return statistics.median(samples), min(samples)


def bench_op(build, f, reps, repeats):
    torch.manual_seed(0)
    inputs = [t.requires_grad_() for t in build()]
    with torch.no_grad():
        y0 = f(*inputs)
    g = torch.randn_like(y0) if y0.dim() > 0 else None

    def step():
        for t in inputs:
            t.grad = None
        y = f(*inputs)
        y.backward(g) if g is not None else y.backward()

    med, mn = time_iters(step, reps, repeats)
    shapes = " ".join("x".join(map(str, t.shape)) for t in inputs)
    return shapes, med * 1e6, mn * 1e6, "us"


def bench_tape(reps, repeats, chain=1000):
    x = torch.rand(1, requires_grad=True)

    def step():
        x.grad = None
        y = x
        for _ in range(chain):
            y = y * 0.999
        y.backward(torch.ones(1))

    med, mn = time_iters(step, max(1, reps // 20), repeats, warmup=20)
    return f"1 ({chain} ops)", med / chain * 1e9, mn / chain * 1e9, "ns/op"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--reps", type=int, default=2000, help="iterations per measurement")
    ap.add_argument("--repeats", type=int, default=7, help="measurements (median and min reported)")
    ap.add_argument("--op", help="run only this op (or 'tape overhead')")
    ap.add_argument("--csv", help="also write results to this CSV file")
    args = ap.parse_args()

    torch.set_num_threads(1)
    try:
        torch.set_num_interop_threads(1)
    except RuntimeError:
        pass

    names = list(OPS) + ["tape overhead"]
    if args.op:
        if args.op not in names:
            ap.error(f"unknown op {args.op!r}; choose from: {', '.join(names)}")
        names = [args.op]

    print(f"torch {torch.__version__}, threads={torch.get_num_threads()}, "
          f"reps={args.reps}, repeats={args.repeats}, float32, fwd+bwd")
    print(f"{'op':<22} {'shapes':<52} {'median':>10} {'min':>10}  unit")
    rows = []
    for name in names:
        if name == "tape overhead":
            shapes, med, mn, unit = bench_tape(args.reps, args.repeats)
        else:
            shapes, med, mn, unit = bench_op(*OPS[name], args.reps, args.repeats)
        print(f"{name:<22} {shapes:<52} {med:10.2f} {mn:10.2f}  {unit}", flush=True)
        rows.append((name, shapes, f"{med:.3f}", f"{mn:.3f}", unit))

    if args.csv:
        with open(args.csv, "w", newline="") as fh:
            w = csv.writer(fh)
            w.writerow(["op", "shapes", "median", "min", "unit"])
            w.writerows(rows)


if __name__ == "__main__":
    main()
