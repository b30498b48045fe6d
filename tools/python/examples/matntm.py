"""The MatNTM's time step written in Python (models/ntm/matntm.cpp, an rnn controller): the same ops as the C++
MatNTM::step, fused ones included (projections, cosine_similarity, ntm_addressing, memory_read_write), its
parameters made in the same order, so with the same config and seed it computes what the bundled `matntm` does.
Registered as `pymatntm`."""
import numpy as np

import matmem
from matmem import ops


class MatNTM(matmem.Model):
    def __init__(self, layers, io, slots=120, slot=(6, 6), read_heads=1, write_heads=1, shift=1,
                 dtype=np.float32, seed=1, name="ntm", memory_segment=0):
        super().__init__(name, dtype, seed)
        self.set_io(*io)
        self.layers, self.slot, self.R, self.W, self.S = list(layers), tuple(slot), read_heads, write_heads, shift
        self.cells = [f"{name}/ctrl/l{k + 1}" for k in range(len(self.layers))]
        self.h = [f"ctrl/l{k + 1}/h" for k in range(len(self.layers))]
        for state, (r, c) in zip(self.h, self.layers):
            self.declare_state(state, (1, r, c))
        self.declare_state("memory", (1, slots, *slot), start="constant", value=1e-6, segment=memory_segment)
        self.reads = [f"read{k + 1}" for k in range(read_heads)]
        self.read_terms = [f"r{k + 1}" for k in range(read_heads)]
        for state in self.reads:
            self.declare_state(state, (1, *slot), start="learned", learned_init=matmem.Init.normal(0, 0.01))
        first = np.zeros((1, 1, slots), dtype=dtype)
        first[0, 0, 0] = 1.0
        self.heads, self.specs = [], []
        for k in range(read_heads + write_heads):
            write = k >= read_heads
            p = f"{name}/write{k - read_heads + 1}" if write else f"{name}/read{k + 1}"
            self.heads.append((write, f"w/{k + 1}"))
            self.declare_state(f"w/{k + 1}", (1, 1, slots), start="given", initial=first)
            self.specs += [(p + "/key", *slot, 0.0), (p + "/beta", 1, 1, 0.0), (p + "/gate", 1, 1, 0.0),
                           (p + "/shift", 1, 2 * shift + 1, 0.0), (p + "/gamma", 1, 1, 0.0)]
            if write:
                self.specs += [(p + "/erase", *slot, 0.0), (p + "/add", *slot, 0.0)]
        self.out = f"{name}/out"

    def step(self, s):
        state = s.state
        terms = [("x", s.input())] + [(t, state(r)) for t, r in zip(self.read_terms, self.reads)]
        for cell, hname, (r, c) in zip(self.cells, self.h, self.layers):
            h = ops.tanh(s.mat(cell, terms + [("h", state(hname))], r, c))
            s.next(hname, h)
            terms = [("x", h)]
        m_prev = state("memory")
        proj = s.projections("h", h, self.specs)
        keys, heads, n = [], [], 0
        for write, _ in self.heads:
            keys.append(proj[n])
            beta, gate = ops.softplus(proj[n + 1]), ops.sigmoid(proj[n + 2])
            shift, gamma = ops.softmax(proj[n + 3]), ops.affine(ops.softplus(proj[n + 4]), 1.0, 1.0)
            n += 5
            erase = added = None
            if write:
                erase, added = ops.sigmoid(proj[n]), proj[n + 1]
                n += 2
            heads.append((beta, gate, shift, gamma, erase, added))
        similarity = ops.cosine_similarity(keys, m_prev)
        w = []
        for k, (_, wname) in enumerate(self.heads):
            beta, gate, shift, gamma, _, _ = heads[k]
            w.append(ops.ntm_addressing(similarity, k, beta, gate, shift, gamma, state(wname)))
            s.next(wname, w[k])
        R = self.R
        if self.W == 0:
            m, reads = m_prev, [ops.memory_read(m_prev, w[k]) for k in range(R)]
        else:
            with s.link("memory"):
                out = ops.memory_read_write(m_prev, w[:R], w[R], heads[R][4], heads[R][5])
            m, reads = out[0], out[1:]
            for k in range(R + 1, len(self.heads)):
                with s.link("memory"):
                    m = ops.memory_write(m, w[k], heads[k][4], heads[k][5])
        for name, r in zip(self.reads, reads):
            s.next(name, r)
        s.next("memory", m)
        if s.output_needed:
            s.output(s.mat(self.out, [("h", h)] + list(zip(self.read_terms, reads)), *self.output_shape))


def factory(config, task, dtype, seed):
    if config["ntm.controller"] != "rnn":
        raise ValueError("pymatntm: only an rnn controller")
    layers = [tuple(int(v) for v in size.split("x")) for size in config["model.layers"].split(",")]
    return MatNTM(layers, (task.input_rows, task.input_cols, task.output_rows, task.output_cols),
                  slots=config["ntm.slots"], slot=(config["ntm.slot_rows"], config["ntm.slot_cols"]),
                  read_heads=config["ntm.read_heads"], write_heads=config["ntm.write_heads"], shift=config["ntm.shift"],
                  dtype=dtype, seed=seed, memory_segment=config["ntm.memory_segment"])


def register(name="pymatntm"):
    if name not in matmem.model_names():
        matmem.register_model(name, factory)
    return name
