"""The documentation site: every public name has an API entry, every page is in the nav, the
algorithms table is the registry's, the getting-started examples run, and (where MkDocs is
installed) ``mkdocs build --strict`` passes, with every ``Examples:`` section a code block, math
rendered, no Sphinx role left, and every ``§N`` a link to its section of the semantics page."""

from __future__ import annotations

import importlib.util
import pathlib
import posixpath
import re
import subprocess
import sys

import pytest
from test_readme import run_blocks

import jaxbai

ROOT = pathlib.Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
API = DOCS / "api"
SUBPACKAGES = ("toptwo", "engine", "theory", "trial", "audit", "mechanisms")
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


SPHINX_ROLE = re.compile(r":(?:mod|func|class|meth|attr|data|obj|exc|ref):`")
SECTION = re.compile(r"§\d")


def docstring_files() -> list[pathlib.Path]:
    """The Python files whose docstrings the API reference renders."""
    return sorted(p for d in ("jaxbai", "experiments") for p in (ROOT / d).rglob("*.py"))


def test_docstrings_use_examples_sections_and_no_sphinx_roles():
    # Google style as mkdocstrings reads it: `Examples:` is a code block, `Example:` an
    # admonition whose doctest lines become nested quotes; Sphinx roles are shown as typed
    for path in docstring_files():
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            where = f"{path.relative_to(ROOT)}:{number}"
            assert line.strip() != "Example:", f"Example: (not Examples:) at {where}"
            assert SPHINX_ROLE.search(line) is None, f"a Sphinx role at {where}"


def load_hooks():
    """docs/hooks.py as a module (it is not in a package)."""
    spec = importlib.util.spec_from_file_location("docs_hooks", DOCS / "hooks.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


needs_mkdocs = pytest.mark.skipif(
    importlib.util.find_spec("mkdocs") is None,
    reason="mkdocs is not installed (pip install -r docs/requirements.txt)",
)


@needs_mkdocs
@pytest.mark.parametrize(
    ("source", "html"),
    [
        ("T*_{KL,β}(ν)", "T*<sub>KL,β</sub></span>(ν)"),
        ("N^B_B ≤ β L_B", "N<sup>B</sup><sub>B</sub>"),
        ("w_a = 1/Δ_a²", "Δ<sub>a</sub></span>²"),
        ("ω* and μ_{a*}", "ω* and"),
        (
            "the t_star solver, theory.t_star, max_samples",
            "the t_star solver, theory.t_star, max_samples",
        ),
        ("`T_{KL}` in code", "<code>T_{KL}</code>"),
        ("*italic* T*_g", "<em>italic</em>"),
    ],
)
def test_math_notation(source, html):
    import markdown

    rendered = markdown.markdown(source, extensions=[load_hooks().MathNotation()])
    assert html in rendered, rendered
    assert "_{" not in re.sub(r"<code>.*?</code>", "", rendered)


@needs_mkdocs
def test_sections_link_to_their_anchor():
    hooks = load_hooks()
    html = hooks.link_semantics(
        '<p>(docs/semantics.md §25; §18–20)</p><a href="s/">semantics §3</a><pre>§4</pre>', "s/"
    )
    assert '<a href="s/#s25">docs/semantics.md §25</a>' in html
    assert '<a href="s/#s18">§18–20</a>' in html
    assert '<a href="s/#s3">semantics §3</a>' in html
    assert '<a href="s/#s4">§4</a>' in html


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> pathlib.Path:
    """The site, built once with ``mkdocs build --strict``."""
    if importlib.util.find_spec("mkdocs") is None:
        pytest.skip("mkdocs is not installed (pip install -r docs/requirements.txt)")
    out = tmp_path_factory.mktemp("site")
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(out)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-4000:]
    return out


def pages(site: pathlib.Path) -> dict[str, str]:
    """Every page of the built site: its path → its HTML, scripts removed."""
    return {
        p.relative_to(site).as_posix(): re.sub(
            r"<script\b.*?</script>", "", p.read_text(encoding="utf-8"), flags=re.S
        )
        for p in site.rglob("index.html")
    }


def outside(html: str, *tags: str) -> str:
    """`html` without the elements `tags` (and their content)."""
    for tag in tags:
        html = re.sub(rf"<{tag}\b.*?</{tag}>", "", html, flags=re.S)
    return html


@pytest.mark.integration
def test_site_builds_strict(site):
    html = (site / "api" / "jaxbai" / "index.html").read_text(encoding="utf-8")
    for name in jaxbai.__all__:
        if name not in (*SUBPACKAGES, "base", "registry", "simulation"):
            assert f'id="jaxbai.{name}"' in html, f"jaxbai.{name} not rendered"


@pytest.mark.integration
def test_site_examples_are_code_blocks(site):
    for path, html in pages(site).items():
        assert "<summary>Example</summary>" not in html, f"an Example: section on {path}"
        assert "&gt;&gt;&gt;" not in outside(html, "pre", "code"), f"a doctest outside code: {path}"


@pytest.mark.integration
def test_site_has_no_sphinx_roles(site):
    for path, html in pages(site).items():
        text = re.sub(r"</?code>", "`", html)
        assert not SPHINX_ROLE.search(text), f"a Sphinx role on {path}"


@pytest.mark.integration
def test_site_math_is_rendered(site):
    for path, html in pages(site).items():
        text = outside(html, "pre", "code")
        assert not re.search(r"[_^]\{", text), f"raw math (_{{ or ^{{) on {path}"
        assert not re.search(r"<em>_|_</em>", text), f"math taken for italics on {path}"


@pytest.mark.integration
def test_site_section_references_are_links(site):
    htmls = pages(site)
    anchors = set(re.findall(r'id="(s\d+)"', htmls["semantics/index.html"]))
    assert anchors, "the semantics sections have no anchors"
    for path, html in htmls.items():
        unlinked = SECTION.findall(re.sub(r"<[^>]*>", "", outside(html, "a", "title")))
        assert not unlinked, f"a §N that is not a link on {path}"
        for target, anchor in re.findall(r'href="([^"#]*)#(s\d+)"', html):
            page = posixpath.normpath(posixpath.join(posixpath.dirname(path), target or "."))
            if page == "semantics":
                assert anchor in anchors, f"{path} links §{anchor[1:]}, which is no section"
