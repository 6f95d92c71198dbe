"""Test collection: every docstring example in `jaxbai` and `experiments` runs as a doctest.

A module made only of code for an optional package (`jaxbai.extras.require` at its top) is
skipped at collection when that package is missing, with the message that names the extra to
install; any other import error fails the collection as usual.
"""

from __future__ import annotations

import importlib
import pathlib

import pytest


def _module_name(path: pathlib.Path, root: pathlib.Path) -> str | None:
    """The dotted name of a source file below ``root`` inside packages, else None."""
    try:
        parts = list(path.relative_to(root).with_suffix("").parts)
    except ValueError:
        return None
    if not (root / parts[0] / "__init__.py").is_file():
        return None
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


@pytest.hookimpl(tryfirst=True)
def pytest_make_collect_report(collector: pytest.Collector) -> pytest.CollectReport | None:
    """A skipped report for a source module whose optional package is missing."""
    if not isinstance(collector, pytest.File) or collector.path.suffix != ".py":
        return None
    name = _module_name(collector.path, collector.config.rootpath)
    if name is None or name.split(".")[0] not in {"jaxbai", "experiments"}:
        return None
    from jaxbai.extras import MissingExtra

    try:
        importlib.import_module(name)
    except MissingExtra as missing:
        reason = (str(collector.path), 1, f"Skipped: {missing}")
        return pytest.CollectReport(collector.nodeid, "skipped", reason, [])
    except Exception:  # the collector reports it in full
        return None
    return None
