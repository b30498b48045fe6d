# Config and Trainer from Python (tools/python/training_bindings.cpp): checkpoints as dicts resume bit for bit,
# the callback, save/resume through files, and the example script that draws the MatNTM's learning curve.
import os
import runpy
import sys

import numpy as np
import pytest

import matmem

EXAMPLES = os.path.join(os.path.dirname(__file__), "..", "..", "tools", "python", "examples")
sys.path.insert(0, EXAMPLES)
import matrnn  # noqa: E402

BASE = {"model": "matntm", "task": "copy", "steps": 12, "batch": 4, "seed": 7, "ntm.slots": 16,
        "task.max_length": 5, "lr": 1e-3}


def run(trainer, n):
    return [trainer.step()["loss"] for _ in range(n)]


@pytest.mark.parametrize("extra", [{}, {"optimizer": "adam"},
                                   {"curriculum.threshold": 100.0, "curriculum.window": 2}])
def test_checkpoint_dict_resumes_bit_for_bit(extra):
    cfg = dict(BASE, **extra)
    whole = run(matmem.Trainer(cfg), 10)
    first = matmem.Trainer(cfg)
    head = run(first, 4)
    ckpt = first.checkpoint()
    assert any(k.startswith("optim/") for k in ckpt) and "meta/rng" in ckpt and ckpt["meta/step"] == "4"
    assert all(isinstance(v, np.ndarray) for k, v in ckpt.items() if not k.startswith("meta/"))
    resumed = matmem.Trainer.from_checkpoint(ckpt)
    assert resumed.steps_done == 4
    assert head + run(resumed, 6) == whole
    if extra.get("curriculum.threshold"):
        assert resumed.figures["curriculum_level"] == matmem.Trainer.from_checkpoint(resumed.checkpoint()).figures["curriculum_level"]


def test_checkpoint_dict_of_a_python_model_resumes_bit_for_bit():
    name = matrnn.register()
    cfg = dict(BASE, model=name, **{"model.layers": "6x6"})
    whole = run(matmem.Trainer(cfg), 8)
    first = matmem.Trainer(cfg)
    head = run(first, 3)
    assert head + run(matmem.Trainer.from_checkpoint(first.checkpoint()), 5) == whole


def test_save_and_resume_through_files(tmp_path):
    whole = run(matmem.Trainer(BASE), 6)
    t = matmem.Trainer(BASE)
    head = run(t, 2)
    t.save(str(tmp_path))
    assert head + run(matmem.Trainer.resume(str(tmp_path)), 4) == whole


def test_a_bad_checkpoint_dict_is_refused():
    ckpt = matmem.Trainer(BASE).checkpoint()
    bad = {k: v for k, v in ckpt.items() if k != "meta/rng"}
    with pytest.raises(matmem.Error, match="rng"):
        matmem.Trainer.from_checkpoint(bad)
    with pytest.raises(KeyError):
        matmem.Trainer.from_checkpoint(dict(ckpt, stray=1))


def test_callback_every_n_steps_and_stop():
    seen = []
    t = matmem.Trainer(dict(BASE, steps=20))
    losses = t.train(callback=lambda tr, stats: seen.append((tr.steps_done, stats["loss"])), every=5)
    assert [s for s, _ in seen] == [5, 10, 15, 20] and len(losses) == 20
    assert [l for _, l in seen] == [losses[4], losses[9], losses[14], losses[19]]
    t2 = matmem.Trainer(dict(BASE, steps=20))
    t2.train(callback=lambda tr, stats: tr.steps_done < 6, every=3)
    assert t2.steps_done == 6


def test_an_exception_in_the_callback_stops_train():
    t = matmem.Trainer(BASE)

    def cb(tr, stats):
        raise RuntimeError("stop here")

    with pytest.raises(RuntimeError, match="stop here"):
        t.train(callback=cb)
    assert t.steps_done == 1


def test_config_keys_and_values():
    c = matmem.Config({"model": "matntm", "task": "copy"})
    assert c["ntm.slots"] == 120 and c["batch"] == 16  # the preset's
    assert matmem.Config({"model": "matntm", "task": "copy", "batch": 3})["batch"] == 3
    assert "lr" in matmem.Config.keys()
    with pytest.raises(matmem.Error):
        matmem.Config({"batch": "many"})


def test_train_ntm_example_draws_its_learning_curve(tmp_path):
    out = tmp_path / "curve.png"
    mod = runpy.run_path(os.path.join(EXAMPLES, "train_ntm.py"))
    losses = mod["main"](["--steps", "300", "--every", "10", "--out", str(out)])
    assert len(losses) == 30
    assert np.mean(losses[-5:]) < np.mean(losses[:5])
    assert out.stat().st_size > 1000 and out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
