"""The README's examples run as written (sizes reduced, in a temporary directory).

Each ```python block of README.md is executed in order in one namespace. The only changes are
the size reductions in `SMALLER` (each must match, so an edited README cannot silently escape
the test). Each `python -m X` command of a ```bash block names an importable module whose
``--help`` works.
"""

from __future__ import annotations

import pathlib
import re
import subprocess
import sys

import pytest

import jaxbai

pytestmark = pytest.mark.integration

ROOT = pathlib.Path(__file__).resolve().parents[1]
README = ROOT / "README.md"

SMALLER = {
    "runs=1000": "runs=16",
    "epsilon=[0.1, 1.0]": "epsilon=[1.0, 10.0]",
}
"""Textual size reductions: the examples' grids at CI size."""


def python_blocks(text: str) -> list[str]:
    """The ```python blocks of a Markdown text, in order."""
    return re.findall(r"```python\n(.*?)```", text, flags=re.S)


def run_blocks(path: pathlib.Path, smaller: dict[str, str], namespace: dict) -> None:
    """Execute the python blocks of ``path`` in one namespace, with ``smaller`` applied."""
    blocks = python_blocks(path.read_text(encoding="utf-8"))
    assert blocks, f"{path.name} has no python examples"
    source = "\n".join(blocks)
    for old, new in smaller.items():
        assert old in source, f"{path.name} no longer contains {old!r}: update its reductions"
        source = source.replace(old, new)
    registered = set(jaxbai.ALGORITHMS)
    try:
        exec(compile(source, str(path), "exec"), namespace)
    except Exception as err:  # pragma: no cover - the failure message is the point
        pytest.fail(f"{path.name} example failed: {type(err).__name__}: {err}")
    finally:  # an example may register an algorithm: leave the registry as it was
        for name in set(jaxbai.ALGORITHMS) - registered:
            jaxbai.unregister(name)


def test_readme_python_examples_run(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    run_blocks(README, SMALLER, {})


def bash_modules(text: str) -> list[str]:
    """The modules X of every ``python -m X`` in the ```bash blocks of a Markdown text."""
    blocks = re.findall(r"```bash\n(.*?)```", text, flags=re.S)
    return sorted({m for b in blocks for m in re.findall(r"python3? -m ([\w.]+)", b)})


def test_readme_commands_have_help():
    modules = bash_modules(README.read_text(encoding="utf-8"))
    assert "experiments.sweep" in modules and "pytest" in modules
    for module in modules:
        done = subprocess.run(
            [sys.executable, "-m", module, "--help"],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert done.returncode == 0, f"python -m {module} --help failed: {done.stderr[-2000:]}"
        assert done.stdout.strip(), f"python -m {module} --help printed nothing"


def console_commands(text: str) -> list[str]:
    """The commands (``$ …`` without their comments) of the ```console blocks of a Markdown text."""
    blocks = re.findall(r"```console\n(.*?)```", text, flags=re.S)
    lines = [line for b in blocks for line in b.splitlines() if line.startswith("$ ")]
    return [line[2:].split("  #")[0].strip() for line in lines]


def test_ci_runs_the_readmes_commands_in_a_fresh_venv():
    """`.ci/run` installs as the README tells a tester to and runs the README's test command,
    both verbatim, inside a virtual environment it creates for the run."""
    readme = README.read_text(encoding="utf-8")
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()
    install = [c for c in console_commands(readme) if "[test]" in c]
    assert install == ['pip install -e ".[test]"']
    two_commands = re.findall(r"```bash\n(.*?)```", readme, flags=re.S)[0].splitlines()
    test = [line.split("  #")[0].strip() for line in two_commands if "pytest" in line]
    assert test == ["python -m pytest -q"]
    venv = next(i for i, line in enumerate(ci) if "-m venv" in line)
    activate = next(i for i, line in enumerate(ci) if "bin/activate" in line)
    assert venv < activate < ci.index(install[0]) < ci.index(test[0])
