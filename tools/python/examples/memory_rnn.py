"""A matrix RNN with a content-addressed memory, written in Python (tools/examples/user_project/memory_rnn.hpp):
  w = softmax(β cos(K, M_{t−1})) for a read key and a write key K = mat(X_t, H_{t−1}),  R_t = Σ_i w_i M_{t−1,i},
  H_t = tanh(mat(X_t, H_{t−1}, R_t)),  M_t = M_{t−1} ⊙ (1 − w' E) + w' A,  E = σ(mat(H_t)), A = tanh(mat(H_t)),
  Y_t = mat(H_t, R_t),  β = softplus(θ);  H_0 and M_0 learned. Registered as `pymemrnn`."""
import numpy as np

import matmem
from matmem import ops


class MemoryRNN(matmem.Model):
    def __init__(self, io, hidden=(8, 8), slots=8, slot=(4, 4), dtype=np.float32, seed=1, name="memrnn"):
        super().__init__(name, dtype, seed)
        self.set_io(*io)
        self.h, self.slot = hidden, slot
        self.declare_state("h", (1, *hidden), start="learned", learned_init=matmem.Init.normal(0, 0.1))
        self.declare_state("memory", (1, slots, *slot), start="learned", learned_init=matmem.Init.normal(0, 0.5))

    def step(self, s):
        x, h, m = s.input(), s.state("h"), s.state("memory")
        beta = ops.softplus(s.parameter("memrnn", "", "beta", (1, 1, 1), matmem.Init.constant(2.0)))

        def address(key):
            k = s.mat(key, [("x", x), ("h", h)], *self.slot)
            return ops.softmax(ops.hadamard(ops.cosine_similarity(k, m), beta))

        w_read, w_write = address("memrnn/read_key"), address("memrnn/write_key")
        read = ops.memory_read(m, w_read)
        h_next = ops.tanh(s.mat("memrnn/cell", [("x", x), ("h", h), ("r", read)], *self.h))
        erase = ops.sigmoid(s.mat("memrnn/erase", [("h", h_next)], *self.slot))
        add = ops.tanh(s.mat("memrnn/add", [("h", h_next)], *self.slot))
        s.next("h", h_next)
        s.next("memory", ops.memory_write(m, w_write, erase, add))
        if s.output_needed:
            s.output(s.mat("memrnn/out", [("h", h_next), ("r", read)], *self.output_shape))


def factory(config, task, dtype, seed):
    return MemoryRNN((task.input_rows, task.input_cols, task.output_rows, task.output_cols), dtype=dtype, seed=seed)


def register(name="pymemrnn"):
    if name not in matmem.model_names():
        matmem.register_model(name, factory)
    return name
