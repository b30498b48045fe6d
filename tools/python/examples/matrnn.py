"""A matrix RNN written in Python (models/rnn's MatRNN): per layer H_t = tanh(U_xᵀ X_t V_x + U_hᵀ H_{t−1} V_h + B),
the logits Y_t = U_yᵀ H_t V_y + B_y. Registered as `pymatrnn`; the config's model.layers gives the layers."""
import numpy as np

import matmem
from matmem import ops


class MatRNN(matmem.Model):
    def __init__(self, layers, io, dtype=np.float32, seed=1, name="pyrnn"):
        super().__init__(name, dtype, seed)
        self.set_io(*io)
        self.layers = list(layers)
        self.paths = [f"{name}/l{k + 1}" for k in range(len(self.layers))]
        self.states_ = [f"h{k + 1}" for k in range(len(self.layers))]
        self.out = f"{name}/out"
        for state, (r, c) in zip(self.states_, self.layers):
            self.declare_state(state, (1, r, c))

    def step(self, s):
        x = s.input()
        for path, state, (r, c) in zip(self.paths, self.states_, self.layers):
            x = ops.tanh(s.mat(path, [("x", x), ("h", s.state(state))], r, c))
            s.next(state, x)
        s.output(s.mat(self.out, [("h", x)], *self.output_shape))


def layers_of(config):
    return [tuple(int(v) for v in size.split("x")) for size in config["model.layers"].split(",")]


def factory(config, task, dtype, seed):
    return MatRNN(layers_of(config), (task.input_rows, task.input_cols, task.output_rows, task.output_cols),
                  dtype, seed)


def register(name="pymatrnn"):
    if name not in matmem.model_names():
        matmem.register_model(name, factory)
    return name
