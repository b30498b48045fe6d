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
