"""The project's command lines run as real subprocesses, as a user runs them."""

from __future__ import annotations

import os
import pathlib
import subprocess
import sys

__all__ = ["ROOT", "run_module"]

ROOT = pathlib.Path(__file__).resolve().parents[1]
"""The repository root, where ``jaxbai`` and ``experiments`` are imported from."""


def run_module(
    cwd: pathlib.Path, args: list[str], importable: tuple[pathlib.Path, ...] = ()
) -> subprocess.CompletedProcess:
    """``python -m *args`` in ``cwd`` (text output captured, 300 s at most) with ``importable``
    and the repository on ``PYTHONPATH``: nothing else, so ``cwd`` is importable only where
    it is named (a results folder's neighbours must not be)."""
    path = os.pathsep.join(str(p) for p in (*importable, ROOT))
    return subprocess.run(
        [sys.executable, "-m", *args],
        cwd=cwd,
        env={**os.environ, "PYTHONPATH": path},
        capture_output=True,
        text=True,
        timeout=300,
    )
