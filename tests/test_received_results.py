"""A results folder someone sends you is data: reading it runs no code and writes through no
link it holds.

One small sweep's folder is doctored as a hostile sender would: its ``sweep.json`` names plugin
modules (the standard library's ``this``, which prints on import, and a module of the working
directory that leaves a mark when imported), and its ``report.md`` is a link to a file outside
the folder. ``plot``, ``report`` and ``sweep --config sweep.json --plan`` then run as real
subprocesses from that working directory.
"""

from __future__ import annotations

import json
import os
import pathlib
import subprocess
import sys

import pytest

from experiments.sweep import cli

pytestmark = pytest.mark.integration

ROOT = pathlib.Path(__file__).resolve().parents[1]
ZEN = "Beautiful is better than ugly"


@pytest.fixture(scope="module")
def received(tmp_path_factory) -> pathlib.Path:
    """The working directory: ``out/`` a doctored results folder, ``planted.py`` a module that
    writes ``imported.mark`` when imported, ``outside.md`` the target of ``out/report.md``."""
    work = tmp_path_factory.mktemp("received")
    out = work / "out"
    args = ["--instances", "mu1", "--algorithms", "ttucb", "--runs", "2", "--quiet"]
    assert cli.main([*args, "--out", str(out)]) == 0
    sidecar = json.loads((out / "sweep.json").read_text())
    sidecar["config"]["plugins"] = ["this", "planted"]
    (out / "sweep.json").write_text(json.dumps(sidecar))
    (work / "planted.py").write_text("open('imported.mark', 'w').close()\n")
    (work / "outside.md").write_text("untouched\n")
    (out / "report.md").unlink()
    (out / "report.md").symlink_to(work / "outside.md")
    return work


def _run(work: pathlib.Path, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run(
        [sys.executable, "-m", *args],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


def _no_code_ran(work: pathlib.Path, done: subprocess.CompletedProcess) -> None:
    assert ZEN not in done.stdout + done.stderr
    assert not (work / "imported.mark").exists()
    assert "Traceback" not in done.stderr


def test_plot_imports_nothing_the_sidecar_names(received):
    done = _run(received, "experiments.plot", "out/runs.csv", "--out", "figures")
    _no_code_ran(received, done)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "names plugin modules this, planted" in done.stderr
    assert "--plugin this --plugin planted" in done.stderr
    assert any((received / "figures").iterdir())


def test_report_imports_nothing_and_writes_no_link(received):
    done = _run(received, "experiments.report", "out/runs.csv")
    _no_code_ran(received, done)
    assert done.returncode == 0, done.stderr[-2000:]
    assert (received / "outside.md").read_text() == "untouched\n"
    report = received / "out" / "report.md"
    assert not report.is_symlink() and "claim" in report.read_text().lower()


def test_a_sweep_json_as_config_imports_nothing(received):
    done = _run(received, "experiments.sweep", "--config", "out/sweep.json", "--plan")
    _no_code_ran(received, done)
    assert done.returncode == 2
    assert "--plugin this --plugin planted" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1, done.stderr


@pytest.mark.parametrize(
    ("module", "says"),
    [
        (".planted", "a plugin is an absolute module name"),
        ("raising", "failed while being imported: RuntimeError: refused"),
    ],
)
def test_a_failing_plugin_is_one_line(received, module, says):
    (received / "raising.py").write_text("raise RuntimeError('refused')\n")
    done = _run(received, "experiments.sweep", "--plugin", module, "--plan")
    assert done.returncode == 2
    assert says in done.stderr and "Traceback" not in done.stderr
    assert len(done.stderr.strip().splitlines()) <= 2, done.stderr  # usage line + error
