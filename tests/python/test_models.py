# Models defined in Python (tools/python/model_bindings.cpp, tools/python/examples): unrolled and gradchecked in
# float64, trained by the C++ Trainer on a bundled task and on user data, bundled models by name, errors.
import os
import sys

import numpy as np
import pytest

import matmem
from matmem import ops

EXAMPLES = os.path.join(os.path.dirname(__file__), "..", "..", "tools", "python", "examples")
sys.path.insert(0, EXAMPLES)
import matntm  # noqa: E402
import matrnn  # noqa: E402
import memory_rnn  # noqa: E402


def frames(tape, rng, steps, batch, rows, cols):
    return [tape.input(rng.uniform(-1, 1, (batch, rows, cols))) for _ in range(steps)]


@pytest.mark.parametrize("make", [
    lambda: matrnn.MatRNN([(3, 4)], (2, 3, 2, 2), dtype=np.float64, seed=5),
    lambda: memory_rnn.MemoryRNN((2, 3, 2, 2), hidden=(3, 3), slots=4, slot=(2, 2), dtype=np.float64, seed=5),
    lambda: matntm.MatNTM([(4, 4)], (2, 3, 2, 2), slots=5, slot=(2, 2), dtype=np.float64, seed=5),
])
def test_python_model_gradcheck_unrolled(make):
    model = make()
    model.build()
    assert len(model.params) > 0
    rng = np.random.default_rng(0)
    xs = [rng.uniform(-1, 1, (2, 2, 3)) for _ in range(3)]

    def loss(tape, *x):
        ys = matmem.run_steps(model, tape, list(x))
        total = ops.sum(ops.hadamard(ys[0], ys[0]))
        for y in ys[1:]:
            total = ops.add(total, ops.sum(ops.hadamard(y, y)))
        return total

    report = matmem.gradcheck(loss, xs, params=model.params, atol=1e-6, rtol=1e-5)
    assert report, str(report)


def test_gradcheck_fails_on_a_wrong_gradient():
    # The check can fail: a float32 model's store is refused, and a step that breaks the chain rule is caught.
    model = matrnn.MatRNN([(3, 3)], (2, 3, 2, 2), dtype=np.float64, seed=5)
    model.build()
    rng = np.random.default_rng(0)
    xs = [rng.uniform(-1, 1, (2, 2, 3)) for _ in range(2)]

    def detached(tape, *x):
        ys = matmem.run_steps(model, tape, list(x))
        # the value of y, but the gradient of a constant: backward sees none
        frozen = tape.input(ys[-1].value())
        return ops.sum(ops.hadamard(frozen, ys[0]))

    assert not matmem.gradcheck(detached, xs, params=model.params)


def test_python_model_trains_until_its_loss_falls():
    name = matrnn.register()
    t = matmem.Trainer({"model": name, "task": "copy", "steps": 300, "lr": 3e-3, "seed": 2, "task.max_length": 3,
                        "model.layers": "8x8"})
    losses = t.train()
    assert len(losses) == 300
    assert np.mean(losses[-30:]) < 0.8 * np.mean(losses[:30])


def test_python_matntm_equals_the_bundled_one_step_for_step():
    name = matntm.register()
    base = {"task": "copy", "steps": 5, "seed": 4, "batch": 4, "ntm.slots": 16, "task.max_length": 4}
    a = matmem.Trainer(dict(base, model="matntm"))
    b = matmem.Trainer(dict(base, model=name))
    for _ in range(4):
        assert a.step()["loss"] == b.step()["loss"]


def test_memory_rnn_trains_on_user_data(tmp_path):
    name = memory_rnn.register()
    rng = np.random.default_rng(1)
    part = tmp_path / "train"
    part.mkdir()
    x = rng.uniform(0, 1, (64, 4, 2, 3)).astype(np.float32)
    np.save(part / "inputs.npy", x)
    np.save(part / "targets.npy", (x[:, :, :, :2] > 0.5).astype(np.float32))
    t = matmem.Trainer({"model": name, "task": "data", "task.data": str(tmp_path), "batch": 8, "steps": 200,
                        "optimizer": "adam", "lr": 1e-2, "seed": 1})
    losses = t.train()
    assert np.mean(losses[-20:]) < 0.8 * np.mean(losses[:20])


@pytest.mark.parametrize("model", ["matrnn", "matlstm", "matgru", "matntm", "matdnc"])
def test_bundled_models_by_name(model):
    assert model in matmem.model_names()
    t = matmem.Trainer({"model": model, "task": "copy", "steps": 3, "batch": 4, "task.max_length": 3})
    stats = t.step()
    assert np.isfinite(stats["loss"]) and t.steps_done == 1
    assert t.model_name in ("ntm", model) or t.model_name


def test_make_model_and_tasks_by_name():
    assert {"copy", "recall", "data"} <= set(matmem.task_names())
    m = matmem.make_model(matmem.Config({"model": "matrnn", "task": "copy"}), np.float64)
    m.build()
    assert m.dtype == np.float64 and "out" in " ".join(m.params.names())


def test_an_exception_in_a_python_step_arrives_as_itself():
    class Broken(matmem.Model):
        def __init__(self, config, task, dtype, seed):
            super().__init__("broken", dtype, seed)
            self.set_io(task.input_rows, task.input_cols, task.output_rows, task.output_cols)

        def step(self, s):
            raise KeyError("no such thing in step")

    matmem.register_model("pybroken", Broken)
    with pytest.raises(KeyError, match="no such thing in step"):
        matmem.Trainer({"model": "pybroken", "task": "copy", "steps": 1})
    # the interpreter is usable afterwards
    assert matmem.Trainer({"model": "matrnn", "task": "copy", "steps": 1, "batch": 4}).step()["loss"] > 0


def test_bad_model_inputs_are_refused():
    with pytest.raises(TypeError, match="expected a matmem.Model"):
        matmem.register_model("pynotamodel", lambda c, t, d, s: 42)
        matmem.Trainer({"model": "pynotamodel", "task": "copy", "steps": 1})
    m = matrnn.MatRNN([(3, 3)], (2, 3, 2, 2))
    with pytest.raises(matmem.Error, match="declared twice"):
        m.declare_state("h1", (1, 3, 3))
    with pytest.raises(matmem.Error):
        matmem.register_model("matntm", matntm.factory)
    with pytest.raises(matmem.Error, match="no_such_key"):
        matmem.Config({"no_such_key": 1})


def test_a_step_is_valid_only_during_the_call():
    kept = []

    class Keeper(matrnn.MatRNN):
        def step(self, s):
            kept.append(s)
            super().step(s)

    m = Keeper([(3, 3)], (2, 3, 2, 2))
    m.build()
    with pytest.raises(matmem.Error, match="valid only during"):
        kept[0].input()


@pytest.mark.parametrize("threads", [2])
def test_python_model_under_threads_equals_one_thread(threads):
    name = matrnn.register()
    base = {"model": name, "task": "copy", "steps": 5, "batch": 8, "seed": 3, "task.max_length": 4}
    one = matmem.Trainer(dict(base, threads=1))
    two = matmem.Trainer(dict(base, threads=threads))
    assert two.threads == threads
    for _ in range(4):
        a, b = one.step()["loss"], two.step()["loss"]
        assert a == pytest.approx(b, rel=1e-5, abs=1e-7)


def test_python_op_in_a_python_model_under_threads():
    if "pysquare3" not in matmem.op_names():
        matmem.register_op("pysquare3", lambda x: x * x, lambda x, y, g: (2 * x * g,), sample_shapes=[(2, 3, 3)])

    class Squared(matrnn.MatRNN):
        def step(self, s):
            h = ops.tanh(s.mat(self.paths[0], [("x", s.input()), ("h", s.state("h1"))], *self.layers[0]))
            h = matmem.ops.pysquare3(h)
            s.next("h1", h)
            s.output(s.mat(self.out, [("h", h)], *self.output_shape))

    matmem.register_model("pysquared", lambda c, t, d, s: Squared(
        [(4, 4)], (t.input_rows, t.input_cols, t.output_rows, t.output_cols), d, s))
    base = {"model": "pysquared", "task": "copy", "steps": 3, "batch": 8, "seed": 3, "task.max_length": 3}
    a = [matmem.Trainer(dict(base, threads=n)).train() for n in (1, 2)]
    np.testing.assert_allclose(a[0], a[1], rtol=1e-5)


def test_capacity_functions():
    n = 3
    rng = np.random.default_rng(0)
    q, _ = np.linalg.qr(rng.normal(size=(n, n)))
    u = 0.9 * q  # normal and convergent
    v = 0.8 * np.eye(n)
    w = rng.normal(size=(n, n))
    exact = matmem.capacity.fmc_exact(u, v, w, k=5)
    paper = matmem.capacity.fmc_eq12(u, v, w, k=5)
    assert exact["relative"] == pytest.approx(1.0, rel=1e-8)  # normal convergent U, V: J_tot = I(W)
    assert paper["relative"] < 1.0 and len(paper["j"]) == 6
    assert matmem.capacity.spectral_radius(u) == pytest.approx(0.9)


def test_a_python_model_reads_its_own_config_key():
    if "pywide.rows" not in matmem.Config.keys():
        matmem.register_config_key("pywide.rows", 3, "rows of pywide's hidden state")

    def factory(config, task, dtype, seed):
        r = config["pywide.rows"]
        return matrnn.MatRNN([(r, 4)], (task.input_rows, task.input_cols, task.output_rows, task.output_cols),
                             dtype, seed)

    matmem.register_model("pywide", factory)
    t = matmem.Trainer({"model": "pywide", "task": "copy", "steps": 1, "batch": 4, "pywide.rows": 5})
    assert "pyrnn/l1/h/U" in t.params and t.params["pyrnn/l1/h/U"].shape == (1, 5, 5)


def test_user_data_validation_is_evaluated(tmp_path):
    name = memory_rnn.register()
    rng = np.random.default_rng(2)
    for part, n in (("train", 32), ("validation", 16)):
        (tmp_path / part).mkdir()
        x = rng.uniform(0, 1, (n, 3, 2, 3)).astype(np.float32)
        np.save(tmp_path / part / "inputs.npy", x)
        np.save(tmp_path / part / "targets.npy", (x[:, :, :, :2] > 0.5).astype(np.float32))
    t = matmem.Trainer({"model": name, "task": "data", "task.data": str(tmp_path), "batch": 8, "steps": 4})
    t.train()
    r = t.evaluate("validation")
    assert r["count"] == 16 and 0 < r["loss"] < 5
    with pytest.raises(matmem.Error, match="no data parts"):
        matmem.Trainer({"model": "matrnn", "task": "copy", "steps": 1}).evaluate()


def test_an_exception_in_a_python_step_under_threads_arrives_as_itself():
    armed = []

    class Fails(matrnn.MatRNN):
        def step(self, s):
            if armed and s.time == 1:
                raise ZeroDivisionError("step failed in a worker")
            super().step(s)

    matmem.register_model("pyfails", lambda c, t, d, s: Fails(
        [(4, 4)], (t.input_rows, t.input_cols, t.output_rows, t.output_cols), d, s))
    t = matmem.Trainer({"model": "pyfails", "task": "copy", "steps": 3, "batch": 8, "threads": 2,
                        "task.min_length": 2, "task.max_length": 3})
    assert t.threads == 2
    armed.append(True)
    with pytest.raises(ZeroDivisionError, match="step failed in a worker"):
        t.step()
    armed.clear()
    assert np.isfinite(t.step()["loss"])  # the trainer and the interpreter go on
