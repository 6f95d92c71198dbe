"""Test collection: every docstring example in `jaxbai` and `experiments` runs as a doctest.

A module made only of code for an optional package (`jaxbai.extras.require` at its top) is
skipped at collection when that package is missing, with the message that names the extra to
install; any other import error fails the collection as usual.

Every test, doctests included, also keeps the process's compiled code bounded
(`_bounded_compiled_code`): a long-lived pytest-xdist worker would otherwise map more code than
the kernel allows and die in the middle of a compilation.
"""

from __future__ import annotations

import gc
import importlib
import pathlib
import sys
from collections.abc import Iterator

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


def _memory_maps() -> int | None:
    """The number of memory mappings of this process (None where /proc is missing)."""
    try:
        with open("/proc/self/maps", "rb") as maps:
            return sum(1 for _ in maps)
    except OSError:
        return None


def _map_budget() -> int:
    """A third of the kernel's limit on a process's memory mappings (``vm.max_map_count``)."""
    try:
        with open("/proc/sys/vm/max_map_count") as limit:
            return int(limit.read()) // 3
    except (OSError, ValueError):
        return 65530 // 3


_MAP_BUDGET = _map_budget()


@pytest.fixture(autouse=True)
def _bounded_compiled_code() -> Iterator[None]:
    """After a test, drop JAX's compiled programs once this process maps too much code.

    XLA's CPU backend maps each compiled program's code into memory in a few hundred regions, and
    a pytest-xdist worker that runs many test modules keeps every program it compiled: past the
    kernel's ``vm.max_map_count`` (65 530 here) the next compilation fails to map its code and
    the worker dies with a segmentation fault. Clearing JAX's caches frees them; the suite's
    persistent compilation cache (`tests/conftest.py`) makes the recompilation cheap.
    """
    yield
    jax = sys.modules.get("jax")
    maps = _memory_maps()
    if jax is not None and maps is not None and maps > _MAP_BUDGET:
        jax.clear_caches()
        gc.collect()
