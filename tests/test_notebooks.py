"""The Colab notebooks: executed top to bottom on CPU at test size; committed without outputs.

Each notebook reads its size from ``JAXBAI_NOTEBOOK_SIZE`` (``test`` here: a few runs, two ε,
a small sample budget). The kernel runs in a temporary directory (so nothing is written into the
repository) with the repository root on ``PYTHONPATH`` (so ``experiments`` imports), JAX on CPU
and Matplotlib on its non-interactive Agg backend. A cell that raises fails the test.
"""

from __future__ import annotations

import os
import pathlib

import nbformat
import pytest
from nbclient import NotebookClient

ROOT = pathlib.Path(__file__).resolve().parents[1]
COLAB = ROOT / "colab"
NOTEBOOKS = (
    "01_quickstart.ipynb",
    "02_reproduce_paper.ipynb",
    "03_your_own_algorithm.ipynb",
)
CELL_TIMEOUT_S = 300
"""A cell running longer has hung (at test size each notebook takes well under a minute)."""


def read(name: str) -> nbformat.NotebookNode:
    return nbformat.read(COLAB / name, as_version=4)


def test_every_notebook_is_tested():
    assert sorted(p.name for p in COLAB.glob("*.ipynb")) == sorted(NOTEBOOKS)


@pytest.mark.parametrize("name", NOTEBOOKS)
def test_committed_without_outputs(name):
    nb = read(name)
    nbformat.validate(nb)
    for cell in nb.cells:
        if cell.cell_type == "code":
            assert cell.outputs == [], f"{name}: a code cell has stored outputs"
            assert cell.execution_count is None, f"{name}: a code cell has an execution count"
    assert "widgets" not in nb.metadata, f"{name}: stored widget state"


@pytest.mark.parametrize("name", NOTEBOOKS)
def test_install_cell_comes_first(name):
    first = next(c for c in read(name).cells if c.cell_type == "code")
    assert "JAXBAI_SOURCE = " in first.source
    assert 'find_spec("jaxbai") is None' in first.source  # skipped when already importable


@pytest.mark.integration
@pytest.mark.parametrize("name", NOTEBOOKS)
def test_notebook_runs(name, tmp_path, monkeypatch):
    """Executes a notebook at test size, top to bottom; a cell that raises or runs past
    `CELL_TIMEOUT_S` fails it."""
    monkeypatch.setenv("JAXBAI_NOTEBOOK_SIZE", "test")
    monkeypatch.setenv("MPLBACKEND", "Agg")
    monkeypatch.setenv("JAX_PLATFORMS", "cpu")
    path = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p)
    monkeypatch.setenv("PYTHONPATH", path)
    nb = read(name)
    client = NotebookClient(
        nb,
        timeout=CELL_TIMEOUT_S,
        kernel_name="python3",
        resources={"metadata": {"path": str(tmp_path)}},
    )
    client.execute()
