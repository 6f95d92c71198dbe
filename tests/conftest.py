"""One persistent compilation cache for a whole test run.

The suite is compile-bound: the same programs (a `simulate`, a grid's lane program, a sweep's)
are compiled by both pytest-xdist workers and by the subprocesses that notebooks, CLI and trial
tests start. The first process that compiles a program writes it to a cache directory that
every later process of the run reads (JAX's persistent cache; a compiled program is keyed by
its HLO, options and backend, so a hit gives the same executable). The directory is fresh per
run, so no state leaks between runs. ``JAX_COMPILATION_CACHE_DIR`` set by the caller is kept.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile

import pytest

CACHE_VARIABLES = {"JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS": "0"}
_CREATED: list[str] = []


def pytest_configure(config: pytest.Config) -> None:
    """Set the cache for this process and, through the environment, for the xdist workers and
    every subprocess (the controller runs this before any worker starts)."""
    if "JAX_COMPILATION_CACHE_DIR" not in os.environ:
        directory = tempfile.mkdtemp(prefix="jaxbai-tests-compiled-")
        _CREATED.append(directory)
        os.environ["JAX_COMPILATION_CACHE_DIR"] = directory
        for name, value in CACHE_VARIABLES.items():
            os.environ.setdefault(name, value)
    if "jax" in sys.modules:  # imported before this hook: set the options directly
        jax = sys.modules["jax"]
        jax.config.update("jax_compilation_cache_dir", os.environ["JAX_COMPILATION_CACHE_DIR"])
        seconds = float(os.environ.get("JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS", "1"))
        jax.config.update("jax_persistent_cache_min_compile_time_secs", seconds)


def pytest_unconfigure(config: pytest.Config) -> None:
    for directory in _CREATED:
        shutil.rmtree(directory, ignore_errors=True)
