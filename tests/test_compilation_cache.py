"""jaxbai's persistent compilation cache (`jaxbai.compilation`): a second process reads what
the first compiled; another jaxbai, a corrupt entry, ``JAXBAI_NO_CACHE`` and a directory others
may write to each compile afresh. Each process is a fresh interpreter (the cache is a setting of
the whole process), counting JAX's cache events."""

from __future__ import annotations

import importlib
import os
import pathlib
import stat
import subprocess
import sys

import numpy as np
import pytest

from jaxbai import compilation

ROOT = pathlib.Path(__file__).resolve().parents[1]
HIT = "/jax/compilation_cache/cache_hits"
MISS = "/jax/compilation_cache/cache_misses"
PROGRAM = f"""
HIT, MISS = {HIT!r}, {MISS!r}
import sys
import jax
import jaxbai
events = []
jax.monitoring.register_event_listener(lambda name, **_: events.append(name))
where = jaxbai.compilation_cache(sys.argv[1])
assert where is None or jaxbai.compilation_cache() == where  # a rerun cell: the same directory
cost = jax.jit(jaxbai.theory.private_cost)(0.9, 0.5, 1.0, 2.0, 0.5)
print(where, float(cost), events.count(HIT), events.count(MISS))
"""


def _process(base: pathlib.Path, **env: str) -> tuple[str, float, int, int, str]:
    """Run `PROGRAM` in a new interpreter: (directory, C*_ε, hits, misses, stderr)."""
    environment = {**os.environ, "PYTHONPATH": str(ROOT), **env}
    for name in ("JAX_COMPILATION_CACHE_DIR", compilation.ENV_DIRECTORY, compilation.ENV_OFF):
        if name not in env:
            environment.pop(name, None)
    done = subprocess.run(
        [sys.executable, "-c", PROGRAM, str(base)],
        env=environment,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    where, cost, hits, misses = done.stdout.split()
    return where, float(cost), int(hits), int(misses), done.stderr


def _entries(directory: pathlib.Path) -> list[pathlib.Path]:
    return sorted(directory.glob("*-cache"))


def test_a_second_process_reads_what_the_first_compiled(tmp_path):
    where, cost, hits, misses, _ = _process(tmp_path)
    directory = tmp_path / compilation.machine_key() / compilation.jaxbai_key()
    assert where == str(directory)
    assert hits == 0 and misses >= 1 and _entries(directory)
    again = _process(tmp_path)
    assert again[:2] == (where, cost)
    assert again[2] >= 1 and again[3] == 0  # every program read back, none compiled
    for level in (directory.parent, directory):  # made here: 0700
        assert stat.S_IMODE(level.stat().st_mode) == 0o700


def test_a_corrupt_entry_is_compiled_again_with_a_warning(tmp_path):
    where, cost, *_ = _process(tmp_path)
    for entry in _entries(pathlib.Path(where)):
        entry.write_bytes(b"not a compiled program")
    again_where, again_cost, hits, misses, stderr = _process(tmp_path)
    assert (again_where, again_cost) == (where, cost)
    assert hits == 0 and misses >= 1
    assert "Error reading persistent compilation cache entry" in stderr
    assert "Traceback" not in stderr


def test_no_cache_and_a_directory_others_may_write_turn_it_off(tmp_path):
    jax_own = tmp_path / "jax"  # JAX's own variable is turned off too
    off = {compilation.ENV_OFF: "1", "JAX_COMPILATION_CACHE_DIR": str(jax_own)}
    where, cost, hits, misses, _ = _process(tmp_path / "base", **off)
    assert where == "None" and hits == misses == 0 and not any(tmp_path.iterdir())
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o777)
    where, other_cost, hits, _, stderr = _process(shared)
    assert where == "None" and hits == 0 and other_cost == cost and not any(shared.iterdir())
    assert stderr.strip().splitlines() == [
        f"jaxbai: compilation cache off ({shared} is writable by others or not owned by this user)"
    ]


def test_another_source_or_version_gets_another_directory(tmp_path):
    (tmp_path / "a.py").write_text("x = 1\n")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "b.py").write_text("y = 1\n")
    key = compilation.source_key(tmp_path, "1.0")
    assert compilation.source_key(tmp_path, "1.1") != key
    (tmp_path / "sub" / "b.py").write_text("y = 2\n")
    assert compilation.source_key(tmp_path, "1.0") != key
    (tmp_path / "sub" / "b.py").write_text("y = 1\n")
    assert compilation.source_key(tmp_path, "1.0") == key
    (tmp_path / "sub" / "b.py").rename(tmp_path / "sub" / "c.py")  # same bytes, another file
    assert compilation.source_key(tmp_path, "1.0") != key


@pytest.mark.parametrize(
    "command",
    [
        ["experiments.sweep.cli"],
        ["experiments.studies.cli", "dp-tt"],
        ["experiments.audit.cli"],
        ["experiments.bench.cli"],
        ["experiments.bench.cli", "trial"],
        ["jaxbai.trial.cli", "status"],
        ["experiments.plot.cli"],
        ["experiments.report.cli"],
    ],
)
def test_every_command_line_offers_no_cache(command, capsys):
    """Each command line turns the cache on (``from_arguments``) unless ``--no-cache``."""
    module = importlib.import_module(command[0])
    with pytest.raises(SystemExit):
        module.main([*command[1:], "--help"])
    assert "--no-cache" in capsys.readouterr().out


def test_remembered_values_are_computed_once_per_input(tmp_path, monkeypatch):
    """`remembered`: a value is computed once per (name, exact inputs) and read back after;
    an unreadable file is computed again (and replaced); with the cache off, nothing is kept."""
    calls = []

    def square(x: np.ndarray, label: str) -> np.ndarray:
        calls.append(label)
        return x**2

    x = np.array([0.5, 2.0])
    monkeypatch.setitem(compilation._state, "directory", tmp_path)
    first = compilation.remembered("square", square, x, "a")
    again = compilation.remembered("square", square, x, "a")
    np.testing.assert_array_equal(first, [0.25, 4.0])
    np.testing.assert_array_equal(again, first)
    assert calls == ["a"]
    compilation.remembered("square", square, x.astype(np.float32), "a")  # other dtype
    compilation.remembered("square", square, x, "b")  # other argument
    compilation.remembered("cube", square, x, "a")  # other name
    assert calls == ["a", "a", "b", "a"]
    for number, path in enumerate((tmp_path / "values").iterdir()):
        path.write_bytes(b"damaged" if number % 2 else b"")  # damaged or empty
    np.testing.assert_array_equal(compilation.remembered("square", square, x, "a"), first)
    assert calls[-1] == "a" and len(calls) == 5
    np.testing.assert_array_equal(compilation.remembered("square", square, x, "a"), first)
    assert len(calls) == 5  # replaced by the recomputed value
    assert not list((tmp_path / "values").glob("*.tmp"))
    monkeypatch.setitem(compilation._state, "directory", None)
    compilation.remembered("square", square, x, "a")
    assert len(calls) == 6
