"""The documentation site: every public name has an API entry, every page is in the nav, the
algorithms table is the registry's, the getting-started examples run, and (where MkDocs is
installed) ``mkdocs build --strict`` passes."""

from __future__ import annotations

import importlib.util
import pathlib
import re
import subprocess
import sys

import pytest
from test_readme import run_blocks

import jaxbai

ROOT = pathlib.Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
API = DOCS / "api"
SUBPACKAGES = ("toptwo", "engine", "theory", "trial", "audit")
EXCLUDED: set[str] = set()
"""Pages of docs/ deliberately left out of the nav (none)."""


def api_identifiers() -> set[str]:
    """Every ``::: identifier`` of the API pages."""
    text = "\n".join(p.read_text(encoding="utf-8") for p in API.glob("*.md"))
    return set(re.findall(r"^::: ([\w.]+)\s*$", text, flags=re.M))


def test_every_public_name_has_an_api_entry():
    identifiers = api_identifiers()
    missing = [n for n in jaxbai.__all__ if f"jaxbai.{n}" not in identifiers]
    assert not missing, f"no API entry (::: jaxbai.NAME) for {missing}"


@pytest.mark.parametrize("name", SUBPACKAGES)
def test_every_subpackage_has_an_api_page(name):
    # a whole-module entry renders the members its __all__ names
    assert f"jaxbai.{name}" in api_identifiers()
    assert getattr(jaxbai, name).__all__


def nav_pages() -> set[str]:
    text = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    nav = text[text.index("\nnav:") :]
    return set(re.findall(r"([\w./-]+\.md)\s*$", nav, flags=re.M))


def test_every_page_is_in_the_nav():
    pages = {p.relative_to(DOCS).as_posix() for p in DOCS.rglob("*.md")}
    assert not (pages - nav_pages() - EXCLUDED), "pages missing from the nav of mkdocs.yml"
    assert not (nav_pages() - pages), "the nav names pages that do not exist"


def table_rows(path: pathlib.Path) -> dict[str, tuple[str, str, str, str]]:
    """registry name → (algorithm, privacy, episodic, thresholds) of the algorithms table."""
    text = path.read_text(encoding="utf-8")
    table = text[text.index("<!-- algorithms-table -->") : text.index("<!-- /algorithms-table -->")]
    rows = {}
    for line in table.splitlines()[3:]:
        cells = (c.strip() for c in line.strip("|").split("|"))
        name, algorithm, privacy, episodic, families = cells
        rows[name.strip("`")] = (algorithm.replace("\\*", "*"), privacy, episodic, families)
    return rows


@pytest.mark.parametrize("path", [DOCS / "algorithms.md", ROOT / "README.md"], ids=lambda p: p.name)
def test_algorithms_table_is_the_registry(path):
    rows = table_rows(path)
    assert list(rows) == list(jaxbai.ALGORITHMS), "one row per registered algorithm, in order"
    for name, entry in jaxbai.ALGORITHMS.items():
        algorithm, privacy, episodic, families = rows[name]
        assert algorithm.startswith(entry.display_name), name
        assert privacy == entry.info().privacy, name
        assert episodic == ("yes" if entry.episodic else "no"), name
        assert families == (", ".join(entry.thresholds) or "—"), name


@pytest.mark.integration
def test_getting_started_examples_run(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    smaller = {"runs=1000": "runs=16", "epsilon=[0.1, 1.0]": "epsilon=[1.0, 10.0]"}
    run_blocks(DOCS / "index.md", smaller, {})


@pytest.mark.integration
@pytest.mark.skipif(
    importlib.util.find_spec("mkdocs") is None,
    reason="mkdocs is not installed (pip install -r docs/requirements.txt)",
)
def test_site_builds_strict(tmp_path):
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-4000:]
    html = (tmp_path / "api" / "jaxbai" / "index.html").read_text(encoding="utf-8")
    for name in jaxbai.__all__:
        if name not in (*SUBPACKAGES, "base", "registry", "simulation"):
            assert f'id="jaxbai.{name}"' in html, f"jaxbai.{name} not rendered"
