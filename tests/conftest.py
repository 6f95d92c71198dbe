"""One persistent compilation cache for a whole test run.

The suite is compile-bound: the same programs (a `simulate`, a grid's lane program, a sweep's)
are compiled by both pytest-xdist workers and by the subprocesses that notebooks, CLI and trial
tests start. The first process that compiles a program writes it to a cache directory that
every later process of the run reads (jaxbai's `compilation_cache`, JAX's persistent cache; a
compiled program is keyed by its HLO, options and backend, so a hit gives the same executable).
The controller turns the cache on with a fresh base directory (``JAXBAI_CACHE_DIR``, removed at
the end, so no state leaks between runs and CI starts cold) and hands its directory to the
workers and subprocesses as ``JAX_COMPILATION_CACHE_DIR``, so that a subprocess that does not
call `compilation_cache` (a ``python -c`` script) shares it too. A base directory set by the
caller (either variable) is kept; ``JAXBAI_NO_CACHE=1`` runs the suite without a cache.

The run also compiles with two compiler options (`SUITE_XLA_FLAGS`, added to ``XLA_FLAGS``
for this process, the workers and the subprocesses):

- LLVM's optimisation level 1: a compile-bound test takes 10–20 % less time than at XLA's
  default level 3, and a long statistical one runs about as fast (level 0 compiles a little
  faster still but runs those twice as slowly);
- XLA CPU's older elementwise emitter (``--xla_cpu_use_fusion_emitters=false``): one engine
  program (AdaP-TT, K = 4) compiles in 2.3 s instead of 4.1 s; TTUCB, AdaP-TT and DP-TT run
  as fast or faster, CTB-TT about 1.3× slower.

They change how XLA's loops are turned into machine code, not what they compute (XLA CPU does
not use fast math), and `tests/test_devices.py` checks that results equal, bit for bit, those
a fresh interpreter computes with XLA's defaults.

The fixtures that several test modules use are defined here (`no_fsync`).
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator

import pytest

CACHE_VARIABLES = {"JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS": "0"}
SUITE_XLA_FLAGS = "--xla_backend_optimization_level=1 --xla_cpu_use_fusion_emitters=false"
_CREATED: list[str] = []


def pytest_configure(config: pytest.Config) -> None:
    """Set the flags and the cache for this process and, through the environment, for the
    xdist workers and every subprocess (the controller runs this before any worker starts)."""
    flags = os.environ.get("XLA_FLAGS", "")
    if SUITE_XLA_FLAGS not in flags:
        os.environ["XLA_FLAGS"] = f"{flags} {SUITE_XLA_FLAGS}".strip()
    if "JAXBAI_CACHE_DIR" not in os.environ:  # the base every process of the run splits
        base = os.environ.get("JAX_COMPILATION_CACHE_DIR")
        if base is None:
            base = tempfile.mkdtemp(prefix="jaxbai-tests-compiled-")
            _CREATED.append(base)
        os.environ["JAXBAI_CACHE_DIR"] = base
    for name, value in CACHE_VARIABLES.items():
        os.environ.setdefault(name, value)
    import jax  # not before the flags and variables above

    from jaxbai import compilation

    seconds = float(os.environ["JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS"])
    jax.config.update("jax_persistent_cache_min_compile_time_secs", seconds)
    where = compilation.compilation_cache()
    if where is not None:  # for a subprocess that does not call compilation_cache: the same
        os.environ["JAX_COMPILATION_CACHE_DIR"] = str(where)  # directory, size-bounded and
        os.environ["JAX_COMPILATION_CACHE_MAX_SIZE"] = str(compilation.MAX_BYTES)  # locked


def pytest_unconfigure(config: pytest.Config) -> None:
    for directory in _CREATED:
        shutil.rmtree(directory, ignore_errors=True)


@pytest.fixture
def no_fsync(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """For tests of a trial's decisions rather than its durability: skip the (slow) fsyncs,
    the store's commits included (`jaxbai.trial.synchronous`). jaxbai is imported here, not at
    the top of this file, which must not start JAX before `pytest_configure` has run."""
    from jaxbai import trial

    monkeypatch.setattr(os, "fsync", lambda fd: None)
    with trial.synchronous("OFF"):
        yield
