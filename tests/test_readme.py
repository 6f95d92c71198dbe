"""The README's Python examples run as written (sizes reduced, in a temporary directory).

Each ```python block of README.md is executed in order in one namespace. The only changes are
the size reductions in `SMALLER` (each must match, so an edited README cannot silently escape
the test) and a stand-in for the trial's observation of a participant (dose 0 always works).
"""

from __future__ import annotations

import pathlib
import re

import pytest

import jaxbai

README = pathlib.Path(__file__).resolve().parents[1] / "README.md"

SMALLER = {
    "runs=1000": "runs=16",
    "epsilon=[0.1, 1.0]": "epsilon=[1.0, 10.0]",
    "epsilon=[0.01, 0.1, 1.0]": "epsilon=[1.0]",
}
"""Textual size reductions: the examples' grids at CI size."""


def python_blocks(text: str) -> list[str]:
    """The ```python blocks of a Markdown text, in order."""
    return re.findall(r"```python\n(.*?)```", text, flags=re.S)


def test_readme_python_examples_run(tmp_path, monkeypatch):
    blocks = python_blocks(README.read_text(encoding="utf-8"))
    assert blocks, "README.md has no python examples"
    source = "\n".join(blocks)
    for old, new in SMALLER.items():
        assert old in source, f"README no longer contains {old!r}: update SMALLER"
        source = source.replace(old, new)
    monkeypatch.chdir(tmp_path)
    registered = set(jaxbai.ALGORITHMS)
    namespace = {"give_dose_and_observe": lambda dose: float(dose == 0)}  # dose 0 works
    try:
        exec(compile(source, str(README), "exec"), namespace)
    except Exception as err:  # pragma: no cover - the failure message is the point
        pytest.fail(f"README example failed: {type(err).__name__}: {err}")
    finally:  # the README registers an algorithm: leave the registry as it was
        for name in set(jaxbai.ALGORITHMS) - registered:
            jaxbai.unregister(name)
