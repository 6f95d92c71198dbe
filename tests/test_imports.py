"""Every module of `jaxbai` and `experiments` imports without the optional packages.

The optional packages are those that only an extra of `pyproject.toml` installs: the packages
of every extra less everything the core dependencies install (their closure in the installed
metadata; scipy, say, comes with jax). A subprocess makes them unimportable and imports every
module; a module of `experiments` (never of `jaxbai`) may fail only with
`jaxbai.extras.MissingExtra` for a package that the extra it names installs (the numba loops of
`experiments.bench`), and is then skipped at doctest collection (`conftest.py`). A new
top-level ``import numba`` anywhere fails here.
"""

from __future__ import annotations

import importlib.metadata
import json
import os
import pathlib
import re
import subprocess
import sys
import textwrap

import pytest
from packaging.requirements import Requirement

if sys.version_info >= (3, 11):
    import tomllib
else:
    import tomli as tomllib

ROOT = pathlib.Path(__file__).resolve().parents[1]
PACKAGES = ("jaxbai", "experiments")

IMPORT_ALL = textwrap.dedent(
    """
    import importlib, importlib.abc, json, sys

    blocked, modules = set(sys.argv[1].split(",")), sys.argv[2].split(",")

    class Unimportable(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path=None, target=None):
            if name.partition(".")[0] in blocked:
                raise ModuleNotFoundError(f"No module named {name!r} (made unimportable)")
            return None

    sys.meta_path.insert(0, Unimportable())
    failures = {}
    for module in modules:
        try:
            importlib.import_module(module)
        except Exception as err:
            failures[module] = {
                "type": type(err).__name__,
                "message": str(err),
                "package": getattr(err, "package", None),
                "extra": getattr(err, "extra", None),
            }
    print(json.dumps(failures))
    """
)


def _canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _project() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]


def _closure(requirements: list[str]) -> set[str]:
    """The canonical names of ``requirements`` and of everything they install (their installed
    metadata, markers evaluated without extras)."""
    seen: set[str] = set()
    pending = [Requirement(r) for r in requirements]
    while pending:
        req = pending.pop()
        name = _canonical(req.name)
        if name in seen or (req.marker and not req.marker.evaluate({"extra": ""})):
            continue
        seen.add(name)
        try:
            pending += [Requirement(r) for r in importlib.metadata.requires(req.name) or []]
        except importlib.metadata.PackageNotFoundError:
            pass  # not installed (an unmet marker elsewhere): nothing below it to follow
    return seen


def optional_distributions() -> dict[str, set[str]]:
    """Optional distribution → the extras that install it."""
    project = _project()
    core = _closure(project["dependencies"])
    extras: dict[str, set[str]] = {}
    for extra, requirements in project["optional-dependencies"].items():
        for name in _closure(requirements) - core:
            extras.setdefault(name, set()).add(extra)
    return extras


def import_names(distributions: set[str]) -> dict[str, str]:
    """Top-level import name → distribution (installed ones from their metadata, the others by
    their name)."""
    names = {d.replace("-", "_"): d for d in distributions}
    for module, dists in importlib.metadata.packages_distributions().items():
        for dist in dists:
            if _canonical(dist) in distributions and not module.startswith("_"):
                names[module] = _canonical(dist)
    return names


def source_modules(root: pathlib.Path, packages: tuple[str, ...]) -> list[str]:
    """Dotted names of every module of ``packages`` below ``root`` but the ``__main__`` ones
    (a command line runs at import; doctest collection leaves them out too)."""
    modules = []
    for package in packages:
        for path in sorted((root / package).rglob("*.py")):
            if path.name == "__main__.py":
                continue
            parts = path.relative_to(root).with_suffix("").parts
            modules.append(".".join(parts[:-1] if parts[-1] == "__init__" else parts))
    return modules


def import_failures(modules: list[str], blocked: set[str], path: pathlib.Path) -> dict:
    """Import ``modules`` in a fresh interpreter (``path`` first on sys.path) with ``blocked``
    top-level packages unimportable; module → its failure."""
    done = subprocess.run(
        [sys.executable, "-c", IMPORT_ALL, ",".join(sorted(blocked)), ",".join(modules)],
        cwd=path,
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "PYTHONPATH": os.pathsep.join([str(path), str(ROOT)])},
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def allowed(
    module: str, failure: dict, optional: dict[str, set[str]], names: dict[str, str]
) -> bool:
    """A failure is allowed only in experiments (the library itself needs no extra to import),
    as MissingExtra for an optional package of the extra it names."""
    if module.partition(".")[0] == "jaxbai" or failure["type"] != "MissingExtra":
        return False
    distribution = names.get(failure["package"], failure["package"])
    return failure["extra"] in optional.get(distribution, set())


def test_optional_packages_are_found():
    optional = optional_distributions()
    assert optional["numba"] == {"bench"}
    assert "trial" in optional["opendp"] and "test" in optional["opendp"]
    assert "scipy" not in optional  # a core dependency (and jax's)
    assert "xdist" in import_names(set(optional))


def test_every_module_imports_without_optional_packages():
    optional = optional_distributions()
    names = import_names(set(optional))
    modules = source_modules(ROOT, PACKAGES)
    assert len(modules) > 50
    failures = import_failures(modules, set(names), ROOT)
    wrong = {m: f for m, f in failures.items() if not allowed(m, f, optional, names)}
    assert not wrong, f"modules that need an optional package at import: {wrong}"


@pytest.mark.parametrize(
    ("source", "caught"),
    [
        ("import numba\n", True),
        ("import jaxbai\n", False),
        ("from jaxbai.extras import require\nnb = require('numba', extra='bench')\n", False),
        ("from jaxbai.extras import require\nnb = require('numba', extra='trial')\n", True),
        ("def f():\n    import numba\n", False),
    ],
)
def test_a_planted_top_level_import_is_caught(tmp_path, source, caught):
    """The check itself: a module with a top-level optional import fails it; one that imports
    the package where it is used, or declares the right extra, passes."""
    package = tmp_path / "planted"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "module.py").write_text(source)
    optional = optional_distributions()
    names = import_names(set(optional))
    failures = import_failures(["planted.module"], set(names), tmp_path)
    wrong = {m: f for m, f in failures.items() if not allowed(m, f, optional, names)}
    assert bool(wrong) == caught, failures


def test_the_package_states_its_installed_version():
    """`jaxbai.__version__` is the installed distribution's (pyproject.toml's), not a copy."""
    import jaxbai

    assert jaxbai.__version__ == importlib.metadata.version("jaxbai") == _project()["version"]
