"""The Python examples of tools/python/README.md run as shown."""
import pathlib
import re

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]


def python_blocks(readme):
    return re.findall(r"```python\n(.*?)```", (ROOT / readme).read_text(), re.S)


@pytest.mark.parametrize("readme", ["tools/python/README.md"])
def test_examples_run(readme, capsys):
    blocks = python_blocks(readme)
    assert blocks, f"{readme} shows no Python example"
    scope = {}
    for block in blocks:  # in order, in one scope: a guide's later examples use the earlier ones' names
        exec(compile(block, readme, "exec"), scope)



def backticked(marker, end):
    """The `names` in tools/python/README.md between `marker` and the next `end` after it."""
    readme = (ROOT / "tools/python/README.md").read_text()
    start = readme.index(marker) + len(marker)
    return re.findall(r"`([a-z_]+)`", readme[start:readme.index(end, start)])


def test_gradcheck_report_attributes_are_the_documented_ones():
    import numpy as np

    import matmem
    from matmem import ops

    report = matmem.gradcheck(lambda tape, x: ops.tanh(x), [np.full((1, 2, 2), 0.3)])
    documented = backticked("It returns a `GradcheckReport` (", ")")
    assert documented == ["passed", "max_abs_error", "max_rel_error", "elements_checked", "failures", "failing_op"]
    for name in documented:
        assert hasattr(report, name), name
    assert str(report).startswith("passed")


def test_step_stats_keys_are_the_documented_ones():
    import matmem

    t = matmem.Trainer({"model": "matrnn", "task": "copy", "steps": 1, "model.layers": "3x3", "batch": 2})
    documented = backticked("the step's `stats`:", "\n- ")
    assert documented and set(documented) == set(t.step()), documented
