"""The Colab notebooks: executed top to bottom on CPU at test size; committed without outputs.

Each notebook reads its size from ``JAXBAI_NOTEBOOK_SIZE`` (``test`` here: a few runs, two ε,
a small sample budget). The kernel runs in a temporary directory (so nothing is written into the
repository) with the repository root on ``PYTHONPATH`` (so ``experiments`` imports), JAX on CPU
and Matplotlib on its non-interactive Agg backend. A cell that raises fails the test.
"""

from __future__ import annotations

import os
import pathlib
import re
import sys

import nbformat
import pytest
from nbclient import NotebookClient

if sys.version_info >= (3, 11):
    import tomllib
else:
    import tomli as tomllib

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


def configured_repository() -> str:
    """The one configured repository URL: ``[project.urls] Repository`` of pyproject.toml, or
    "" while there is none (jaxbai is not published)."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    return project.get("urls", {}).get("Repository", "")


def urls(text: str) -> list[str]:
    return re.findall(r"https?://[^\s\"'()<>\]]+", text)


@pytest.mark.parametrize("name", NOTEBOOKS)
def test_install_cell_comes_first(name):
    """The first code cell installs jaxbai from an uploaded wheel or from JAXBAI_REPOSITORY,
    which holds the configured repository (none until jaxbai is published), and is skipped
    when jaxbai is importable."""
    first = next(c for c in read(name).cells if c.cell_type == "code")
    assert f'JAXBAI_REPOSITORY = "{configured_repository()}"\n' in first.source
    assert 'find_spec("jaxbai") is None' in first.source  # skipped when already importable
    assert 'glob.glob("jaxbai-*.whl")' in first.source and "pip wheel" in first.source
    assert '"[gpu]"' in first.source  # JAX with CUDA on a GPU runtime: the extra must exist
    assert (
        "gpu"
        in tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    )


@pytest.mark.parametrize("name", NOTEBOOKS)
def test_no_placeholder_urls(name):
    """Every URL of a notebook (cells and metadata) is under the configured repository: with
    none configured, a notebook names no URL at all (no badge, link or install source to a
    placeholder such as OWNER/jaxbai)."""
    text = (COLAB / name).read_text(encoding="utf-8")
    assert "OWNER" not in text
    repository = configured_repository()
    stray = [u for u in urls(text) if not (repository and u.startswith(repository))]
    assert not stray, f"{name}: URLs not under the configured repository: {stray}"


def test_docs_link_no_placeholder_repository():
    """The README and the docs name no placeholder repository, and a Colab badge only opens the
    configured one (none until jaxbai is published)."""
    repository = configured_repository().removeprefix("https://github.com/")
    for path in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        text = path.read_text(encoding="utf-8")
        assert "OWNER" not in text, path.name
        for url in re.findall(r"colab\.research\.google\.com/github/[^\s)]+", text):
            assert repository and url.startswith(f"colab.research.google.com/github/{repository}/")


def test_the_url_check_can_fail():
    assert urls('x = "https://github.com/OWNER/jaxbai"\n') == ["https://github.com/OWNER/jaxbai"]


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
    for cell in nb.cells:
        if cell.cell_type == "code":
            streamed = streamed_bars(cell.outputs)
            assert not streamed, f"{name}: a progress bar written as text: {streamed[0]!r}"


PROGRESS = re.compile(r"\d+/\d+ runs")
"""What a progress bar's text shows (`jaxbai.engine.Progress`)."""


def streamed_bars(outputs: list[dict]) -> list[str]:
    """The stream outputs (text appended per write) that show a progress bar: a bar must be
    one display output updated in place, however many bars a cell shows (one per grid)."""
    return [
        o.get("text", "")
        for o in outputs
        if o.get("output_type") == "stream" and PROGRESS.search(o.get("text", ""))
    ]


def test_a_bar_written_as_text_fails_and_one_display_per_grid_passes():
    updates = [{"output_type": "stream", "name": "stderr", "text": f"{i}/4 runs"} for i in (1, 2)]
    assert len(streamed_bars(updates)) == 2
    two_grids = [{"output_type": "display_data", "data": {"text/plain": "4/4 runs"}}] * 2
    assert streamed_bars(two_grids) == []
