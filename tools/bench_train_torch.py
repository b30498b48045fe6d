#!/usr/bin/python3
"""Whole training steps in PyTorch (eager mode), for comparison with `matmem bench train`.

These configurations mirror the ones `matmem bench train` times (tools/bench_command.cpp), written as a
pytorch-ntm-style researcher would: one nn.Module per layer / head, one nn.Parameter per U, V and bias,
plain eager autograd (no torch.jit, no custom C++/CUDA extensions), float32, one thread
(torch.set_num_threads(1), torch.set_num_interop_threads(1)).

What is timed (time.perf_counter around each step, one batch per step):
    optimizer.zero_grad() -> forward over the whole sequence (all frames, outputs only at the target
    frames) -> loss -> loss.item() -> loss.backward() -> clipping -> optimizer.step()
with clipping as the configuration sets it: by value (torch.nn.utils.clip_grad_value_), then by global norm
(g * c / n when n > c, matmem's rule); matrnn2-dynet: none, and RMSprop without momentum. The optimiser is
torch.optim.RMSprop (rmsprop.centered as the configuration sets it), except where rmsprop.eps_inside puts eps
inside the square root (the graves-* configurations: Graves 2013's centred RMSprop, which torch.optim lacks):
there a few lines of Python do matmem's update (models/training/rmsprop.hpp), per parameter
    v <- a v + (1-a) g^2,  m <- a m + (1-a) g (centred),  d = sqrt(v - m^2 + eps) (sqrt(v + eps) if not),
    b <- mu b + g / d,  p <- p - lr b.
--warmup untimed steps come first, then --steps timed ones; the table gives the median, minimum and maximum ms per step and sequences/s (batch / mean
step time, like matmem's table). Sequences are generated before timing, so data generation is NOT in
the timed region (matmem's Trainer::step() samples the batch, and also computes the gradient norm and
bit errors, inside its timed step; those cost well under 1% of a step).

Data: the batches are drawn with a Python port of matmem's Rng (xoshiro256** seeded by splitmix64,
runtime/random.cpp) from the same data stream as matmem's Trainer (seed ^ 0x5eed5eed5eed5eed), in the
same order, so with the same --seed (default 1, as `matmem bench train` uses), --warmup and --steps
both programs time exactly the same sequence lengths and bits (and priorities). matrnn2-dynet uses Rng(3), as
matmem does. The tasks (models/tasks/): copy, recall (any rows, 1 the vector task, and any task.item_matrices)
(tasks.cpp), priority sort (priority_sort.cpp), repeat copy (repeat_copy.cpp: the normalised repeat count on
row r+1 of the delimiter frame, targets of r+1 rows, the last the end marker) and dynamic N-grams (ngrams.cpp:
a Beta(1/2, 1/2) table per sequence, 1x1 frames, a target every step), each with the task keys matmem's task
reads; a description giving another task key (task.flatten, task.size_by, ...) is refused.

Models (the math of models/ntm/matntm.cpp, models/layers/cells.cpp, models/rnn/recurrent.cpp, ops/):
    mat(P_1..P_k) = sum_i U_i^T P_i V_i + B  (batched matmul, B broadcast over the batch)
    MatRNN  H = tanh(mat(x-terms, H_prev));  MatLSTM gates i, f, o = sigmoid(mat(...)) (forget bias 1),
            C^ = tanh(mat(...)), C = f*C_prev + i*C^, H = o*tanh(C);  feed-forward (ntm.controller ff,
            Graves et al. 2014's) H = tanh(mat(x-terms)), no H_prev term and no state of its own
    MatNTM  controller layer 1 sees X and R_prev, later layers the layer below; per head (read heads
            first, then write heads, all addressing M_{t-1}): key = mat(H), beta = softplus(mat(H)),
            g = sigmoid(mat(H)), s = softmax(mat(H)) [1, 2S+1], gamma = 1 + softplus(mat(H));
            w_c = softmax(beta cos(K, M_{t-1})) (Frobenius cosine, eps 1e-8 added to the norm product),
            w_g = g w_c + (1-g) w_{t-1}, w~ = circular shift (w~_i = sum_j s_j w_{(i-j) mod N}),
            w = softmax(gamma log(w~ + 1e-12)); read R = sum_i w_i M_{t-1,i};
            write M = M (1 - w E) + w A with E = sigmoid(mat(H)), A = mat(H); output Y = mat(H, R).
            Memory starts at 1e-6 (ntm.memory_init constant) or at a learned M_0 shared by the batch (learned),
            w_0 = one-hot on slot 0, R_0 learned, controller states 0.
    MatDNC  (models/dnc/matdnc.hpp, ops/dnc*.cpp; ported in tools/torch_dnc.py) the MatNTM's controller; from
            H, each a mat(H) with a bias: per read head key K^r, beta^r = softplus, free gate f = sigmoid,
            modes pi = softmax [1, 3]; write key K^w, beta^w = softplus, E = sigmoid, A, gates g^a, g^w = sigmoid.
            usage u = (u_{t-1} + w^w_{t-1} - u_{t-1} w^w_{t-1}) prod_i (1 - f_i w^r_{i,t-1}) (w^w_{t-1} detached);
            allocation a[phi_j] = (1 - u^[phi_j]) prod_{k<j} u^[phi_k], u^ = 1e-6 + (1 - 1e-6) u, phi the slots by
            ascending u^ (stable sort); w^w = g^w [g^a a + (1 - g^a) softmax(beta^w cos(K^w, M_{t-1}))], cos
            with 1e-6 under each norm's root and on their product; M = M_{t-1} (1 - w^w E) + w^w A; links
            L[i,j] = (1 - w^w_i - w^w_j) L[i,j] + w^w_i p_{t-1}[j], L[i,i] = 0, then p = (1 - sum w^w) p_{t-1} + w^w;
            per read head w^r = pi[0] L^T w^r_{t-1} + pi[1] softmax(beta^r cos(K^r, M)) + pi[2] L w^r_{t-1},
            R = sum_i w^r_i M_i (the written memory); output Y = mat(H, R). Every state starts at 0.
    loss    mean over target frames of BCE-with-logits (each a mean over elements) = one BCE mean over
            the stacked target-frame logits (the frames are the same size); the N-grams' probability
            targets (TargetKind::probabilities) take the same loss.

Configurations (`--config NAME`, repeatable; default all): those of tools/bench_configs.json, the one file
`matmem bench train` reads too (compiled into matmem), whose settings are matmem config keys; the port builds
its model, data and optimiser from them, refuses settings it does not implement, and checks its parameter
count against the file's. `matmem bench train` prints each one's settings in words. Besides them:
    matrnn2-dynet    the fixed C++-peer step (matmem calls it matrnn2-fixed; both names work):
                     MatRNN 6x5 -> 15x15 x2 -> 5x5, batch 16, the same 21 random binary frames every
                     step, BCE on the last 10 outputs, RMSprop lr 1e-4 alpha 0.95 eps 1e-8 momentum 0,
                     no clipping

The same model in both programs: --check-loss CONFIG runs `matmem bench model --config CONFIG --safetensors
FILE` (matmem's initial parameters in float64 and the float64 loss of the first batch its Trainer draws),
loads those parameters by matmem's names into this port's model, draws the same batch and prints both losses
and their difference (agreement: within 1e-9); --batch etc. (below) go to both (matmem's --set):
    /usr/bin/python3 tools/bench_train_torch.py --check-loss ntm-recall [--matmem build/matmem] [--batch B]

Run with Debian's python3-torch (PyTorch 1.13), not the pyenv python:
    /usr/bin/python3 tools/bench_train_torch.py [--config NAME ...] [--steps 30] [--warmup 5]
                                                [--seed S] [--json]
                                                [--batch B] [--slots N] [--min-length L] [--max-length L]
and compare with
    matmem bench train [--config NAME ...] --steps 30 --warmup 5 [--set batch=B ...]
--batch sets the batch of every described configuration (matmem's key batch; not matrnn2-dynet's fixed step),
--slots, --min-length and --max-length those of ntm-copy and ntm-lstm-copy only (ntm.slots, task.min_length,
task.max_length); without --config, the configurations they apply to are run.
"""
import argparse
import json
import math
import os
import resource
import statistics
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

import torch_dnc  # the MatDNC's port (tools/torch_dnc.py)

# --------------------------------------------------------------------------------------------------------------
# matmem's Rng (runtime/random.cpp), so the batches are the ones matmem draws.
MASK = (1 << 64) - 1


def _splitmix64(x):
    x = (x + 0x9E3779B97F4A7C15) & MASK
    z = x
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK
    return x, z ^ (z >> 31)


class MatmemRng:
    """xoshiro256** seeded by splitmix64; uniform_int by Lemire's method, bernoulli(p) = uniform() < p."""

    def __init__(self, seed):
        x = seed & MASK
        self.s = []
        for _ in range(4):
            x, z = _splitmix64(x)
            self.s.append(z)

    def next(self):
        s0, s1, s2, s3 = self.s
        r = (((s1 * 5) & MASK) << 7 | ((s1 * 5) & MASK) >> 57) & MASK
        r = (r * 9) & MASK
        t = (s1 << 17) & MASK
        s2 ^= s0
        s3 ^= s1
        s1 ^= s2
        s0 ^= s3
        s2 ^= t
        s3 = ((s3 << 45) | (s3 >> 19)) & MASK
        self.s = [s0, s1, s2, s3]
        return r

    def uniform_int(self, lo, hi):  # [lo, hi] inclusive
        n = hi - lo + 1
        m = self.next() * n
        low = m & MASK
        if low < n:
            threshold = ((1 << 64) - n) % n
            while low < threshold:
                m = self.next() * n
                low = m & MASK
        return lo + (m >> 64)

    def uniform(self, lo, hi):
        """[lo, hi): lo + (hi - lo) * u, u = (next() >> 11) * 2^-53."""
        return lo + (hi - lo) * ((self.next() >> 11) * 2.0 ** -53)

    def bits(self, count):
        """count Bernoulli(1/2) draws: uniform() < 0.5  <=>  the top bit of next() is 0."""
        return [0.0 if self.next() >> 63 else 1.0 for _ in range(count)]


def random_bits(rng, B, r, c):
    # matmem stores [B,r,c] batch-interleaved, element (b,i,j) at (i*B + b)*c + j (runtime/shape.hpp), and
    # fills it in storage order.
    return torch.tensor(rng.bits(B * r * c), dtype=torch.float32).view(r, B, c).transpose(0, 1).contiguous()


def copy_sequence(rng, B, r, c, min_len=1, max_len=20):
    """models/tasks/tasks.cpp CopyTask: l frames X_i (delimiter row 0), a delimiter frame, l blank frames
    whose targets are X_1..X_l. Returns (inputs [T,B,r+1,c], targets [l,B,r,c], target step indices)."""
    l = rng.uniform_int(min_len, max_len)
    xs = [random_bits(rng, B, r, c) for _ in range(l)]
    inputs = torch.zeros(2 * l + 1, B, r + 1, c)
    for t in range(l):
        inputs[t, :, :r] = xs[t]
    inputs[l, :, r] = 1.0
    return inputs, torch.stack(xs), list(range(l + 1, 2 * l + 1))


def recall_sequence(rng, B, r, c, n=2, min_items=2, max_items=10):
    """RecallTask: k items (an item-delimiter frame, then n matrices); a query delimiter, the n matrices of
    item q_b, a query delimiter; n blank frames whose targets are item q_b + 1, where each sequence b draws its
    own q_b ~ U{0..k-2} after all the items."""
    k = rng.uniform_int(min_items, max_items)
    frames, items = [], []
    for _ in range(k):
        d = torch.zeros(B, r + 2, c)
        d[:, r] = 1.0
        frames.append(d)
        items.append([])
        for _ in range(n):
            items[-1].append(random_bits(rng, B, r, c))
            f = torch.zeros(B, r + 2, c)
            f[:, :r] = items[-1][-1]
            frames.append(f)

    def query_delim():
        d = torch.zeros(B, r + 2, c)
        d[:, r + 1] = 1.0
        frames.append(d)

    query_delim()
    query = [torch.zeros(B, r + 2, c) for _ in range(n)]
    frames += query
    query_delim()
    steps = []
    for m in range(n):
        steps.append(len(frames))
        frames.append(torch.zeros(B, r + 2, c))
    targets = torch.zeros(n, B, r, c)
    for b in range(B):
        q = rng.uniform_int(0, k - 2)
        for m in range(n):
            query[m][b, :r] = items[q][m][b]
            targets[m, b] = items[q + 1][m][b]
    return torch.stack(frames), targets, steps


def priority_sort_sequence(rng, B, r, c, inputs=20, outputs=16):
    """models/tasks/priority_sort.cpp PrioritySortTask: m = inputs matrices X_i, each with a priority p_i ~
    U[-1, 1) (row r all p_i, row r+1 the delimiter channel), a delimiter frame, then k blank frames whose targets
    are the k highest-priority matrices, highest first (ties in input order), k = k(m) (outputs_for). Per
    sequence b the data stream gives its m*r*c bits in the order (matrix, row, column), then its m priorities."""
    m = inputs
    k = min(max((2 * m * outputs + inputs) // (2 * inputs), 1), m)
    x = torch.empty(B, m, r, c)
    priority = []
    for b in range(B):
        x[b] = torch.tensor(rng.bits(m * r * c)).view(m, r, c)
        priority.append([rng.uniform(-1.0, 1.0) for _ in range(m)])
    frames = torch.zeros(m + 1 + k, B, r + 2, c)
    frames[:m, :, :r] = x.transpose(0, 1)
    frames[:m, :, r] = torch.tensor(priority).t().unsqueeze(2)  # [m, B, 1], every column of row r
    frames[m, :, r + 1] = 1.0
    targets = torch.empty(k, B, r, c)
    for b in range(B):
        order = sorted(range(m), key=lambda i: -priority[b][i])  # stable: equal priorities in input order
        for q in range(k):
            targets[q, b] = x[b, order[q]]
    return frames, targets, list(range(m + 1, m + 1 + k))


def repeat_copy_sequence(rng, B, r, c, min_len=1, max_len=10, min_repeats=1, max_repeats=10):
    """models/tasks/repeat_copy.cpp RepeatCopyTask: l ~ U{min_len..max_len}, then n ~ U{min_repeats..max_repeats}
    (one pair per batch), then the l matrices X_i. Input frames (r+2) x c: X_1..X_l (rows r, r+1 zero); a
    delimiter frame, row r all 1 and row r+1 all n~ = (n - mu) / sigma, the count normalised over the range
    (mu = (min+max)/2, sigma^2 = ((max-min+1)^2 - 1)/12, sigma = 1 for a one-count range); n l + 1 blank frames.
    Targets (r+1) x c: X_{(k mod l)+1} (row r 0) at step l+1+k, k < n l, then the end marker (content 0, row r
    all 1) at step l+n l+1."""
    l = rng.uniform_int(min_len, max_len)
    n = rng.uniform_int(min_repeats, max_repeats)
    xs = [random_bits(rng, B, r, c) for _ in range(l)]
    k = max_repeats - min_repeats + 1
    var = (k * k - 1) / 12
    count = (n - 0.5 * (min_repeats + max_repeats)) / (math.sqrt(var) if var > 0 else 1.0)
    inputs = torch.zeros(l + n * l + 2, B, r + 2, c)
    for t in range(l):
        inputs[t, :, :r] = xs[t]
    inputs[l, :, r] = 1.0
    inputs[l, :, r + 1] = count
    targets = torch.zeros(n * l + 1, B, r + 1, c)
    for q in range(n * l):
        targets[q, :, :r] = xs[q % l]
    targets[n * l, :, r] = 1.0
    return inputs, targets, list(range(l + 1, l + n * l + 2))


def ngrams_sequence(rng, B, order=6, bits=200):
    """models/tasks/ngrams.cpp NgramTask: per sequence b, its table of 2^(order-1) probabilities p = sin^2(pi U / 2)
    (Beta(1/2, 1/2)), then its bits: the first order-1 Bernoulli(1/2), then b_t = [U < p[ctx_t]], ctx_t the last
    order-1 bits (b_{t-1} the lowest); all drawn as uniform() < p. Frames 1 x 1: the input at step t is b_{t-1}
    (0 at step 0), its target b_t; every step a target."""
    contexts = 1 << (order - 1)
    seqs = []
    for _ in range(B):
        p = [s * s for s in (math.sin(math.pi / 2 * rng.uniform(0.0, 1.0)) for _ in range(contexts))]
        seq, ctx = [], 0
        for t in range(bits):
            b = 1 if rng.uniform(0.0, 1.0) < (0.5 if t < order - 1 else p[ctx]) else 0
            seq.append(b)
            ctx = ((ctx << 1) | b) & (contexts - 1)
        seqs.append(seq)
    targets = torch.tensor(seqs, dtype=torch.float32).t().reshape(bits, B, 1, 1)
    inputs = torch.zeros(bits, B, 1, 1)
    inputs[1:] = targets[:-1]
    return inputs, targets, list(range(bits))


# --------------------------------------------------------------------------------------------------------------
# Layers. named(path) gives each parameter under matmem's name (models/layers/cells.hpp, models/ntm/matntm.hpp),
# which --check-loss loads matmem's parameters by.
class Mat(nn.Module):
    """mat(P_1..P_k) = sum_i U_i^T P_i V_i + Bias, U_i:[r_i, rows], V_i:[c_i, cols], Bias:[rows, cols];
    terms: matmem's names of P_1..P_k (its parameters path/term/U, path/term/V, path/B)."""

    def __init__(self, terms, in_shapes, rows, cols, bias=0.0):
        super().__init__()
        self.terms = list(terms)
        self.U = nn.ParameterList([nn.Parameter(torch.empty(r, rows)) for r, _ in in_shapes])
        self.V = nn.ParameterList([nn.Parameter(torch.empty(c, cols)) for _, c in in_shapes])
        self.B = nn.Parameter(torch.full((rows, cols), float(bias)))
        for p in list(self.U) + list(self.V):
            nn.init.xavier_uniform_(p)  # Glorot uniform: a = sqrt(6 / (rows + cols))

    def forward(self, *ps):
        y = self.B
        for p, u, v in zip(ps, self.U, self.V):
            y = y + u.t() @ p @ v
        return y

    def named(self, path):
        for term, u, v in zip(self.terms, self.U, self.V):
            yield f"{path}/{term}/U", u
            yield f"{path}/{term}/V", v
        yield f"{path}/B", self.B


class MatRNNCell(nn.Module):
    def __init__(self, terms, in_shapes, rows, cols, forget_bias=None):
        super().__init__()
        self.shape = (rows, cols)
        self.h = Mat(list(terms) + ["h"], list(in_shapes) + [(rows, cols)], rows, cols)

    def initial(self, B):
        return (torch.zeros(B, *self.shape),)

    def forward(self, xs, state):
        return (torch.tanh(self.h(*xs, state[0])),)

    def named(self, path):
        yield from self.h.named(path)


class MatLSTMCell(nn.Module):
    def __init__(self, terms, in_shapes, rows, cols, forget_bias=1.0):
        super().__init__()
        self.shape = (rows, cols)
        t, s = list(terms) + ["h"], list(in_shapes) + [(rows, cols)]
        self.i = Mat(t, s, rows, cols)
        self.f = Mat(t, s, rows, cols, bias=forget_bias)
        self.o = Mat(t, s, rows, cols)
        self.c = Mat(t, s, rows, cols)

    def initial(self, B):
        return torch.zeros(B, *self.shape), torch.zeros(B, *self.shape)

    def forward(self, xs, state):
        h, c = state
        i = torch.sigmoid(self.i(*xs, h))
        f = torch.sigmoid(self.f(*xs, h))
        o = torch.sigmoid(self.o(*xs, h))
        chat = torch.tanh(self.c(*xs, h))
        c = f * c + i * chat
        return o * torch.tanh(c), c

    def named(self, path):
        for gate in "ifoc":
            yield from getattr(self, gate).named(f"{path}/{gate}")


class MatFFCell(nn.Module):
    """A feed-forward controller layer (models/layers/cells.hpp CellKind::ff): H = tanh(mat(x-terms)), no H_prev
    term; its parameters are named as a MatRNN layer's (path/term/U, V, path/B) without the h term."""

    def __init__(self, terms, in_shapes, rows, cols, forget_bias=None):
        super().__init__()
        self.h = Mat(terms, in_shapes, rows, cols)

    def initial(self, B):
        return (None,)  # no state: the previous H is not read

    def forward(self, xs, state):
        return (torch.tanh(self.h(*xs)),)

    def named(self, path):
        yield from self.h.named(path)


CELLS = {"rnn": MatRNNCell, "lstm": MatLSTMCell, "ff": MatFFCell}


class Controller(nn.Module):
    """A stack of cells; layer 1 takes every input term, layer k > 1 the output of layer k-1."""

    def __init__(self, cell, terms, in_shapes, layers, forget_bias=1.0):
        super().__init__()
        cells, terms, shapes = [], list(terms), list(in_shapes)
        for r, c in layers:
            cells.append(CELLS[cell](terms, shapes, r, c, forget_bias))
            terms, shapes = ["x"], [(r, c)]
        self.cells = nn.ModuleList(cells)

    def initial(self, B):
        return [cell.initial(B) for cell in self.cells]

    def forward(self, xs, states):
        new = []
        for cell, state in zip(self.cells, states):
            state = cell(xs, state)
            new.append(state)
            xs = (state[0],)
        return xs[0], new

    def named(self, path):
        for k, cell in enumerate(self.cells):
            yield from cell.named(f"{path}/l{k + 1}")


# --------------------------------------------------------------------------------------------------------------
# NTM addressing and memory (ops/cosine_similarity.cpp, circular_shift.cpp, sharpen.cpp, memory_*.cpp).
def cosine_similarity(k, mem, eps=1e-8):
    """k [B,r,c], mem [B,N,r,c] -> [B,N]: <K, M_i>_F / (|K|_F |M_i|_F + eps)."""
    kf = k.flatten(1)  # [B, rc]
    mf = mem.flatten(2)  # [B, N, rc]
    dot = (mf @ kf.unsqueeze(2)).squeeze(2)
    return dot / (kf.norm(dim=1, keepdim=True) * mf.norm(dim=2) + eps)


def circular_shift(w, s):
    """w~_i = sum_{j=-S..S} s_j w_{(i-j) mod N};  w [B,N], s [B,2S+1]."""
    S = s.shape[1] // 2
    out = s[:, 0:1] * torch.roll(w, -S, dims=1)
    for k in range(1, 2 * S + 1):
        out = out + s[:, k:k + 1] * torch.roll(w, k - S, dims=1)
    return out


def sharpen(w, gamma, eps=1e-12):
    """(w_i + eps)^gamma / sum_k (w_k + eps)^gamma, computed as softmax(gamma log(w + eps))."""
    return torch.softmax(gamma * torch.log(w + eps), dim=1)


def memory_read(mem, w):
    """R = sum_i w_i M_i;  mem [B,N,r,c], w [B,N] -> [B,r,c]."""
    B, N, r, c = mem.shape
    return (w.unsqueeze(1) @ mem.view(B, N, r * c)).view(B, r, c)


def memory_write(mem, w, erase, add):
    """M (1 - w E) + w A;  w [B,N], E, A [B,r,c]."""
    wi = w[:, :, None, None]
    return mem * (1 - wi * erase.unsqueeze(1)) + wi * add.unsqueeze(1)


class Head(nn.Module):
    def __init__(self, h_shape, slot_rows, slot_cols, shift, write):
        super().__init__()
        self.write = write
        hs = [h_shape]
        self.key = Mat(["h"], hs, slot_rows, slot_cols)
        self.beta = Mat(["h"], hs, 1, 1)
        self.gate = Mat(["h"], hs, 1, 1)
        self.shift = Mat(["h"], hs, 1, 2 * shift + 1)
        self.gamma = Mat(["h"], hs, 1, 1)
        if write:
            self.erase = Mat(["h"], hs, slot_rows, slot_cols)
            self.add = Mat(["h"], hs, slot_rows, slot_cols)

    def address(self, h, mem, w_prev):
        key = self.key(h)
        beta = F.softplus(self.beta(h)).flatten(1)  # [B,1]
        g = torch.sigmoid(self.gate(h)).flatten(1)  # [B,1]
        s = torch.softmax(self.shift(h), dim=-1).flatten(1)  # [B,2S+1]
        gamma = 1 + F.softplus(self.gamma(h)).flatten(1)  # [B,1]
        wc = torch.softmax(beta * cosine_similarity(key, mem), dim=1)
        wg = g * wc + (1 - g) * w_prev
        return sharpen(circular_shift(wg, s), gamma)

    def named(self, path):
        for part in ["key", "beta", "gate", "shift", "gamma"] + (["erase", "add"] if self.write else []):
            yield from getattr(self, part).named(f"{path}/{part}")


class MatNTM(nn.Module):
    def __init__(self, in_shape, out_shape, controller="rnn", layers=((15, 15), (15, 15)), slots=120,
                 slot_shape=(6, 6), read_heads=1, write_heads=1, shift=1, forget_bias=-1.0, memory_init="constant"):
        super().__init__()
        self.N, self.slot_shape = slots, slot_shape
        self.n_read = read_heads
        reads = [f"r{k + 1}" for k in range(read_heads)]
        self.controller = Controller(controller, ["x"] + reads, [in_shape] + [slot_shape] * read_heads, layers,
                                     forget_bias)
        h_shape = tuple(layers[-1])
        self.heads = nn.ModuleList([Head(h_shape, *slot_shape, shift, write=k >= read_heads)
                                    for k in range(read_heads + write_heads)])
        self.read0 = nn.ParameterList([nn.Parameter(torch.randn(*slot_shape) * 0.01) for _ in range(read_heads)])
        self.out = Mat(["h"] + reads, [h_shape] + [slot_shape] * read_heads, *out_shape)
        w0 = torch.zeros(1, slots)
        w0[0, 0] = 1.0
        self.register_buffer("w0", w0)
        # ntm.memory_init: 1e-6 everywhere, or a learned start M_0 (N(0, 0.01^2) at first) shared by the batch.
        self.mem0 = nn.Parameter(torch.randn(1, slots, *slot_shape) * 0.01) if memory_init == "learned" else None

    def initial(self, B):
        if self.mem0 is None:
            mem = torch.full((B, self.N, *self.slot_shape), 1e-6)
        else:
            mem = self.mem0.expand(B, self.N, *self.slot_shape)
        reads = [r.expand(B, *self.slot_shape) for r in self.read0]
        ws = [self.w0.expand(B, self.N) for _ in self.heads]
        return self.controller.initial(B), mem, reads, ws

    def forward(self, x, state, need_output):
        ctrl, mem, reads, ws = state
        h, ctrl = self.controller([x] + reads, ctrl)
        new_mem, new_reads, new_ws = mem, [], []
        for head, w_prev in zip(self.heads, ws):
            w = head.address(h, mem, w_prev)  # every head addresses M_{t-1}
            new_ws.append(w)
            if head.write:
                new_mem = memory_write(new_mem, w, torch.sigmoid(head.erase(h)), head.add(h))
            else:
                new_reads.append(memory_read(mem, w))
        y = self.out(h, *new_reads) if need_output else None
        return y, (ctrl, new_mem, new_reads, new_ws)

    def named(self):
        yield from self.controller.named("ntm/ctrl")
        for k, head in enumerate(self.heads):
            write = k >= self.n_read
            yield from head.named(f"ntm/write{k - self.n_read + 1}" if write else f"ntm/read{k + 1}")
        yield from self.out.named("ntm/out")
        for k, r in enumerate(self.read0):
            yield f"ntm/init/read{k + 1}", r
        if self.mem0 is not None:
            yield "ntm/init/memory", self.mem0


class MatRNNModel(nn.Module):
    def __init__(self, in_shape, out_shape, layers=((15, 15), (15, 15)), cell="rnn", forget_bias=1.0):
        super().__init__()
        self.cell = cell
        self.controller = Controller(cell, ["x"], [in_shape], layers, forget_bias)
        self.out = Mat(["h"], [tuple(layers[-1])], *out_shape)

    def named(self):
        name = "mat" + self.cell
        yield from self.controller.named(name)
        yield from self.out.named(f"{name}/out")

    def initial(self, B):
        return self.controller.initial(B)

    def forward(self, x, state, need_output):
        h, state = self.controller([x], state)
        return (self.out(h) if need_output else None), state


def sequence_loss(model, inputs, targets, target_steps):
    """Unroller::run: run every frame; loss = mean over target frames of the BCE-with-logits mean."""
    B = inputs.shape[1]
    state = model.initial(B)
    is_target = set(target_steps)
    outs = []
    for t in range(inputs.shape[0]):
        y, state = model(inputs[t], state, t in is_target)
        if y is not None:
            outs.append(y)
    return F.binary_cross_entropy_with_logits(torch.stack(outs), targets)


# --------------------------------------------------------------------------------------------------------------
# Configurations: tools/bench_configs.json, the file `matmem bench train` reads (compiled in), plus matrnn2-dynet.
CONFIG_FILE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "bench_configs.json")
with open(CONFIG_FILE) as _f:
    DESCRIPTIONS = {c["name"]: c for c in json.load(_f)["configurations"]}

# The settings this port implements in one way only; a description asking for another is refused, not ignored.
FIXED = {"optimizer": "rmsprop", "lr.schedule": "constant", "weight_decay": 0.0, "curriculum.threshold": 0.0,
         "ntm.initial_weighting": "first_slot", "controller.clip": 0.0,
         "controller.clip_logits": False, "grad.outlier": 0.0, "loss.reduction": "mean", "clip.state_gradient": 0.0,
         "model.vector_u": "learned", "ntm.cosine_eps": 0.0, "task.flatten": False}
# The task keys each ported task reads; a description giving another task key is refused.
TASK_KEYS = {
    "copy": {"task.rows", "task.cols", "task.min_length", "task.max_length"},
    "recall": {"task.rows", "task.cols", "task.min_items", "task.max_items", "task.item_matrices"},
    "priority_sort": {"task.rows", "task.cols", "task.inputs", "task.outputs"},
    "repeat_copy": {"task.rows", "task.cols", "task.min_length", "task.max_length", "task.min_repeats",
                    "task.max_repeats"},
    "ngrams": {"task.rows", "task.cols", "task.order", "task.bits"},
}


def data_rng(seed):
    return MatmemRng(seed ^ 0x5EED5EED5EED5EED)  # models/training/trainer.cpp data_rng_for


def layer_sizes(text):
    """"20x20,20x20" -> [(20, 20), (20, 20)] (config key model.layers)."""
    return [tuple(int(n) for n in layer.split("x")) for layer in text.split(",")]


def settings_of(name, scale=None):
    """The description's settings, with those of --batch (any description), --slots, --min-length and
    --max-length (SCALABLE only) on top; scale holds the options given."""
    s = dict(DESCRIPTIONS[name]["settings"])
    for key, value in FIXED.items():
        if s.get(key, value) != value:
            raise SystemExit(f"bench_train_torch.py: {name}: {key} = {s[key]} is not implemented here (only {value})")
    if s["task"] in TASK_KEYS:
        extra = sorted(k for k in s if k.startswith("task.") and k not in TASK_KEYS[s["task"]] and k not in FIXED)
        if extra:
            raise SystemExit(f"bench_train_torch.py: {name}: {', '.join(extra)} not implemented here for task "
                             f"{s['task']}")
    s.update({SCALE_KEYS[k]: v for k, v in (scale or {}).items()})
    if s.get("task.min_length", 1) > s.get("task.max_length", 1):
        raise SystemExit(f"bench_train_torch.py: {name}: task.min_length {s['task.min_length']} > task.max_length "
                         f"{s['task.max_length']}")
    return s


def build(name, seed, n, scale=None):
    """(model, n sequences of the data stream, optimiser settings, batch) of a described configuration."""
    s = settings_of(name, scale)
    rng = data_rng(seed)
    B, r, c = s["batch"], s["task.rows"], s["task.cols"]
    out_shape = (r, c)
    if s["task"] == "copy":
        seqs = [copy_sequence(rng, B, r, c, s["task.min_length"], s["task.max_length"]) for _ in range(n)]
        in_shape = (r + 1, c)
    elif s["task"] == "recall":
        seqs = [recall_sequence(rng, B, r, c, s["task.item_matrices"], s["task.min_items"], s["task.max_items"])
                for _ in range(n)]
        in_shape = (r + 2, c)
    elif s["task"] == "priority_sort":
        seqs = [priority_sort_sequence(rng, B, r, c, s["task.inputs"], s["task.outputs"]) for _ in range(n)]
        in_shape = (r + 2, c)
    elif s["task"] == "repeat_copy":
        seqs = [repeat_copy_sequence(rng, B, r, c, s["task.min_length"], s["task.max_length"], s["task.min_repeats"],
                                     s["task.max_repeats"]) for _ in range(n)]
        in_shape, out_shape = (r + 2, c), (r + 1, c)
    elif s["task"] == "ngrams":
        seqs = [ngrams_sequence(rng, B, s["task.order"], s["task.bits"]) for _ in range(n)]
        in_shape, out_shape = (1, 1), (1, 1)
    else:
        raise SystemExit(f"bench_train_torch.py: {name}: task {s['task']} is not ported")
    layers = layer_sizes(s["model.layers"])
    if s["model"] == "matntm":
        if s.get("ntm.memory_init", "constant") not in ("constant", "learned"):
            raise SystemExit(f"bench_train_torch.py: {name}: ntm.memory_init = {s['ntm.memory_init']} is not "
                             "implemented here (only constant and learned)")
        model = MatNTM(in_shape, out_shape, controller=s["ntm.controller"], layers=layers, slots=s["ntm.slots"],
                       slot_shape=(s["ntm.slot_rows"], s["ntm.slot_cols"]), read_heads=s["ntm.read_heads"],
                       write_heads=s["ntm.write_heads"], shift=s["ntm.shift"], forget_bias=s["ntm.forget_bias"],
                       memory_init=s.get("ntm.memory_init", "constant"))
    elif s["model"] == "matrnn":
        model = MatRNNModel(in_shape, out_shape, layers=layers, cell="rnn")
    elif s["model"] == "matdnc":
        model = torch_dnc.from_settings(name, s, in_shape, out_shape, layers, Mat, Controller)
    else:
        raise SystemExit(f"bench_train_torch.py: {name}: model {s['model']} is not ported")
    count = sum(p.numel() for _, p in model.named())
    if "slots" not in (scale or {}) and count != DESCRIPTIONS[name]["parameters"]:
        raise SystemExit(f"bench_train_torch.py: {name}: the port's model has {count} parameters, "
                         f"tools/bench_configs.json says {DESCRIPTIONS[name]['parameters']}")
    opt = dict(lr=s["lr"], alpha=s["rmsprop.alpha"], eps=s["rmsprop.eps"], momentum=s["rmsprop.momentum"],
               centered=s["rmsprop.centered"], eps_inside=s.get("rmsprop.eps_inside", False),
               clip_value=s["clip.value"], clip_norm=s["clip.norm"])
    return model, seqs, opt, B


def matrnn2_dynet(seed, n, scale=None):
    # tools/bench_command.cpp time_matrnn_fixed: Rng(3), per step t a 16x6x5 input, then for t >= 11 a target.
    rng = MatmemRng(3)
    xs, ys = [], []
    for t in range(21):
        xs.append(random_bits(rng, 16, 6, 5))
        if t >= 11:
            ys.append(random_bits(rng, 16, 5, 5))
    seq = (torch.stack(xs), torch.stack(ys), list(range(11, 21)))
    model = MatRNNModel((6, 5), (5, 5))
    return model, [seq] * n, dict(lr=1e-4, alpha=0.95, eps=1e-8, momentum=0.0, centered=False, eps_inside=False,
                                  clip_value=0.0, clip_norm=0.0), 16


# What --batch (every description), --slots, --min-length and --max-length (ntm-copy and ntm-lstm-copy only) change:
# matmem's keys batch, ntm.slots, task.min_length, task.max_length; and their values in ntm-copy.
SCALABLE = {"ntm-copy", "ntm-lstm-copy"}
SCALE_KEYS = dict(batch="batch", slots="ntm.slots", min_length="task.min_length", max_length="task.max_length")
_copy = DESCRIPTIONS["ntm-copy"]["settings"]
SCALE_DEFAULTS = dict(batch=_copy["batch"], slots=_copy["ntm.slots"], min_length=_copy["task.min_length"],
                      max_length=_copy["task.max_length"])

CONFIGS = dict({name: (lambda seed, n, scale=None, name=name: build(name, seed, n, scale)) for name in DESCRIPTIONS},
               **{"matrnn2-dynet": matrnn2_dynet})
ALIASES = {"matrnn2-fixed": "matrnn2-dynet"}


def clip(params, value, norm):
    """matmem's clipping (models/training/clip.cpp): by value, then by global norm (g * c / n when n > c)."""
    if value > 0:
        torch.nn.utils.clip_grad_value_(params, value)
    if norm > 0:
        with torch.no_grad():
            n = math.sqrt(sum(float((p.grad.double() ** 2).sum()) for p in params if p.grad is not None))
            if n > norm:
                for p in params:
                    if p.grad is not None:
                        p.grad.mul_(norm / n)


class RMSpropEpsInside(torch.optim.Optimizer):
    """matmem's RMSprop with eps inside the square root (rmsprop.eps_inside; models/training/rmsprop.hpp), in
    torch.optim.RMSprop's per-parameter loop: v <- a v + (1-a) g^2; centred m <- a m + (1-a) g, d = sqrt(v - m^2
    + eps), else d = sqrt(v + eps); momentum b <- mu b + g / d, p <- p - lr b; else p <- p - lr g / d."""

    def __init__(self, params, lr, alpha, eps, momentum, centered):
        super().__init__(params, dict(lr=lr, alpha=alpha, eps=eps, momentum=momentum, centered=centered))

    @torch.no_grad()
    def step(self):
        for group in self.param_groups:
            lr, alpha, eps, mu = group["lr"], group["alpha"], group["eps"], group["momentum"]
            for p in group["params"]:
                if p.grad is None:
                    continue
                g, state = p.grad, self.state[p]
                if not state:
                    state["square_avg"] = torch.zeros_like(p)
                    if group["centered"]:
                        state["grad_avg"] = torch.zeros_like(p)
                    if mu > 0:
                        state["momentum_buffer"] = torch.zeros_like(p)
                v = state["square_avg"]
                v.mul_(alpha).addcmul_(g, g, value=1 - alpha)
                if group["centered"]:
                    m = state["grad_avg"]
                    m.mul_(alpha).add_(g, alpha=1 - alpha)
                    d = v.addcmul(m, m, value=-1).add_(eps).sqrt_()
                else:
                    d = v.add(eps).sqrt_()
                if mu > 0:
                    b = state["momentum_buffer"]
                    b.mul_(mu).addcdiv_(g, d)
                    p.add_(b, alpha=-lr)
                else:
                    p.addcdiv_(g, d, value=-lr)


def make_optimizer(params, opt):
    if opt["eps_inside"]:
        return RMSpropEpsInside(params, lr=opt["lr"], alpha=opt["alpha"], eps=opt["eps"], momentum=opt["momentum"],
                                centered=opt["centered"])
    return torch.optim.RMSprop(params, lr=opt["lr"], alpha=opt["alpha"], eps=opt["eps"], momentum=opt["momentum"],
                               centered=opt["centered"])


def bench(name, seed, warmup, steps, scale=None):
    torch.manual_seed(seed)  # parameter initialisation
    model, seqs, opt, batch = CONFIGS[name](seed, warmup + steps, scale)
    params = list(model.parameters())
    optimizer = make_optimizer(params, opt)

    def step(seq):
        optimizer.zero_grad()
        loss = sequence_loss(model, *seq)
        value = loss.item()
        loss.backward()
        clip(params, opt["clip_value"], opt["clip_norm"])
        optimizer.step()
        return value

    for seq in seqs[:warmup]:
        step(seq)
    ms, frames, losses = [], [], []
    for seq in seqs[warmup:]:
        t0 = time.perf_counter()
        losses.append(step(seq))
        ms.append((time.perf_counter() - t0) * 1e3)
        frames.append(seq[0].shape[0])
    mean = statistics.fmean(ms)
    return {
        "config": name,
        "steps": len(ms),
        "warmup": warmup,
        "ms_per_step_median": statistics.median(ms),
        "ms_per_step_min": min(ms),
        "ms_per_step_max": max(ms),
        "ms_per_step_mean": mean,
        "sequences_per_s": 1e3 * batch / mean,
        "batch": batch,
        "frames_mean": statistics.fmean(frames),
        "parameters": sum(p.numel() for p in params),
        "final_loss": losses[-1],
        "torch": torch.__version__,
        "threads": torch.get_num_threads(),
        "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0,
    }


def read_safetensors(path):
    """{name: tensor} and the metadata of a safetensors file (runtime/safetensors.hpp: an 8-byte header length,
    the JSON header, the little-endian data)."""
    with open(path, "rb") as f:
        data = f.read()
    n = int.from_bytes(data[:8], "little")
    header = json.loads(data[8:8 + n])
    dtypes = {"F64": torch.float64, "F32": torch.float32}
    tensors = {}
    for name, e in header.items():
        if name != "__metadata__":
            begin, end = e["data_offsets"]
            tensors[name] = torch.frombuffer(bytearray(data[8 + n + begin:8 + n + end]),
                                             dtype=dtypes[e["dtype"]]).reshape(e["shape"])
    return tensors, header.get("__metadata__", {})


def check_loss(name, matmem, scale=None):
    """The loss of the configuration's first batch from matmem's initial parameters, in float64, computed by
    `matmem bench model` and by this port with those parameters loaded; returns 0 when they agree to 1e-9.
    scale (--batch etc.) is set on both sides (matmem's --set)."""
    import subprocess
    import tempfile
    sets = [a for k, v in (scale or {}).items() for a in ("--set", f"{SCALE_KEYS[k]}={v}")]
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "initial.safetensors")
        out = subprocess.run([matmem, "bench", "model", "--config", name, "--safetensors", path] + sets, check=True,
                             capture_output=True, text=True).stdout
        params, meta = read_safetensors(path)
    torch.set_default_dtype(torch.float64)
    seed = DESCRIPTIONS[name]["settings"]["seed"]
    model, seqs, _, _ = build(name, seed, 1, scale)
    ours = dict(model.named())
    if set(ours) != set(params):
        raise SystemExit(f"{name}: parameters only in matmem: {sorted(set(params) - set(ours))}; only here: "
                         f"{sorted(set(ours) - set(params))}")
    with torch.no_grad():
        for key, p in ours.items():
            if tuple(p.shape) != tuple(params[key].shape):
                raise SystemExit(f"{name}: {key} is {tuple(params[key].shape)} in matmem, {tuple(p.shape)} here")
            p.copy_(params[key])
    inputs, targets, steps = seqs[0]
    with torch.no_grad():
        loss = float(sequence_loss(model, inputs.double(), targets.double(), steps))
    theirs = float(meta["loss"])
    diff = abs(loss - theirs)
    print(f"{name}: float64 loss of the first batch (seed {seed}, {inputs.shape[0]} frames, batch {inputs.shape[1]}) "
          f"from matmem's initial parameters ({len(params)} tensors, {sum(p.numel() for p in params.values())} values)")
    print(f"  matmem  {theirs:.17g}\n  PyTorch {loss:.17g}\n  |difference| {diff:.3g} "
          f"({'agree' if diff <= 1e-9 else 'DIFFER'}, tolerance 1e-9)")
    return 0 if diff <= 1e-9 else 1


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--config", action="append", choices=list(CONFIGS) + list(ALIASES),
                    help="configuration to time (repeatable; default all)")
    ap.add_argument("--steps", type=int, default=30, help="timed steps per configuration")
    ap.add_argument("--warmup", type=int, default=5, help="untimed steps first")
    ap.add_argument("--seed", type=int, default=None,
                    help="seed of the data stream and initialisation (default: the description's, 1)")
    ap.add_argument("--json", action="store_true", help="print one JSON object per configuration")
    ap.add_argument("--check-loss", metavar="CONFIG", action="append", choices=list(DESCRIPTIONS),
                    help="instead of timing: the float64 loss of CONFIG's first batch from matmem's initial "
                         "parameters, here and in `matmem bench model` (repeatable)")
    ap.add_argument("--matmem", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "build",
                                                     "matmem"), help="--check-loss: the matmem binary")
    ap.add_argument("--batch", type=int, default=None,
                    help="every configuration but matrnn2-dynet: sequences per step (matmem's key batch; default "
                         "the description's)")
    for key, value in SCALE_DEFAULTS.items():
        if key != "batch":
            ap.add_argument("--" + key.replace("_", "-"), type=int, default=None,
                            help=f"ntm-copy, ntm-lstm-copy: {key.replace('_', ' ')} (default {value})")
    a = ap.parse_args()
    scale = {k: getattr(a, k) for k in SCALE_DEFAULTS if getattr(a, k) is not None} or None
    if scale:
        if any(v < 1 for v in scale.values()):
            ap.error("--batch, --slots and the lengths must be >= 1")
        # The configurations the options apply to: every description (--batch alone), or SCALABLE.
        fits = [n for n in DESCRIPTIONS if set(scale) == {"batch"} or n in SCALABLE]
        others = [n for n in (a.config or a.check_loss or []) if ALIASES.get(n, n) not in fits]
        if others:
            ap.error(f"--batch applies to every configuration but matrnn2-dynet, --slots, --min-length and "
                     f"--max-length to {', '.join(sorted(SCALABLE))} only; not to {', '.join(others)}")
    if a.check_loss:
        torch.set_num_threads(1)
        return max(check_loss(name, a.matmem, scale) for name in a.check_loss)
    if a.steps < 1 or a.warmup < 0:
        ap.error("--steps must be >= 1 and --warmup >= 0")

    torch.set_num_threads(1)
    try:
        torch.set_num_interop_threads(1)
    except RuntimeError:
        pass  # already set (only possible before any parallel work starts)
    torch.set_default_dtype(torch.float32)

    names = [ALIASES.get(n, n) for n in (a.config or (fits if scale else list(CONFIGS)))]
    width = max([18] + [len(n) for n in names])
    if not a.json:
        print(f"training steps (forward, backward, clip, optimiser), float32, PyTorch {torch.__version__} eager, "
              f"{torch.get_num_threads()} thread; load average {os.getloadavg()[0]:.2f}")
        print(f"{'config':<{width}} {'steps':>6} {'ms median':>10} {'ms min':>9} {'ms max':>9} {'sequences/s':>11}")
    for name in names:
        seed = a.seed if a.seed is not None else DESCRIPTIONS.get(name, {}).get("settings", {}).get("seed", 1)
        r = bench(name, seed, a.warmup, a.steps, scale)
        if a.json:
            print(json.dumps(r), flush=True)
        else:
            print(f"{name:<{width}} {r['steps']:>6} {r['ms_per_step_median']:>10.3f} {r['ms_per_step_min']:>9.3f} "
                  f"{r['ms_per_step_max']:>9.3f} {r['sequences_per_s']:>11.1f}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
