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
import pathlib
import re
import subprocess

import pytest
from _commands import run_module

from experiments.analysis import results
from experiments.sweep import cli

pytestmark = pytest.mark.integration

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
    """``python -m *args`` in ``work``, whose modules are not on the path."""
    return run_module(work, list(args))


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


def test_no_figure_or_checkpoint_goes_through_a_planted_directory_link(received):
    """``figures/`` and ``checkpoints/`` of a received folder linked to a directory outside it:
    the figures' default directory was followed; now plot and a resumed sweep refuse the link
    in one line and write nothing where it points."""
    import shutil

    folder, elsewhere = received / "linked", received / "elsewhere"
    shutil.copytree(received / "out", folder, symlinks=True)
    elsewhere.mkdir()
    for name in ("figures", "checkpoints"):
        shutil.rmtree(folder / name, ignore_errors=True)
        (folder / name).symlink_to(elsewhere, target_is_directory=True)
    done = _run(received, "experiments.plot", "linked/runs.csv")
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert "figures is a symbolic link" in done.stderr
    args = ["--instances", "mu1", "--algorithms", "ttucb", "--runs", "2", "--quiet"]
    for name in ("figures", "checkpoints"):  # each refused before anything compiles
        done = _run(received, "experiments.sweep", *args, "--out", "linked", "--resume")
        assert done.returncode == 2 and "Traceback" not in done.stderr
        assert f"{name} is a symbolic link" in done.stderr
        assert len(done.stderr.strip().splitlines()) == 1, done.stderr
        (folder / name).unlink()
    assert not any(elsewhere.iterdir())


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


def _damaged(text: str) -> dict[str, bytes]:
    """A good runs.csv, damaged as a received file may be; each must be refused."""
    lines = text.splitlines(keepends=True)
    fields = lines[0].rstrip("\n").split(",")
    tau = fields.index("tau")

    def drop_tau(line: str) -> str:
        return ",".join(f for i, f in enumerate(line.rstrip("\n").split(",")) if i != tau)

    first = lines[1].rstrip("\n").split(",")

    def replace_first(column: str, value: str) -> str:
        row = list(first)
        row[fields.index(column)] = value
        return "".join([lines[0], ",".join(row) + "\n", *lines[2:]])

    return {
        "truncated": text[: len(lines[0]) + len(lines[1]) // 2].encode(),
        "empty": b"",
        "header only": lines[0].encode(),
        "binary": bytes(range(256)) * 4,
        "missing column": "\n".join(drop_tau(line) for line in lines).encode(),
        "extra fields": "".join([lines[0], lines[1].rstrip("\n") + ",1,2\n"]).encode(),
        "bad tau": replace_first("tau", "abc").encode(),
        "bad flag": replace_first("correct", "maybe").encode(),
        "bad epsilon": replace_first("epsilon", "x").encode(),
        "bad mean": replace_first("mu_0", "zz").encode(),
        "bad count": replace_first("count_0", "1.5e").encode(),
        "quote": (lines[0] + '"' + lines[1]).encode(),
    }


SAYS = {
    "truncated": "fields where the header has",
    "empty": "is empty",
    "header only": "holds no runs",
    "binary": "is not a text CSV",
    "missing column": "lacks columns ['tau']",
    "extra fields": "fields where the header has",
    "bad tau": "tau 'abc' is not an integer",
    "bad flag": "correct 'maybe' is not True or False",
    "bad epsilon": "epsilon 'x' is not a number",
    "bad mean": "a per-arm value that is not a number",
    "bad count": "a per-arm value that is not a number",
    "quote": "fields where the header has",
}


def test_a_damaged_runs_csv_is_refused_saying_where(received, tmp_path):
    good = (received / "out" / "runs.csv").read_text()
    for name, data in _damaged(good).items():
        path = tmp_path / f"{name.replace(' ', '_')}.csv"
        path.write_bytes(data)
        with pytest.raises(ValueError, match=re.escape(SAYS[name])):
            results.read_runs(str(path))


@pytest.mark.parametrize("command", ["experiments.plot", "experiments.report"])
def test_plot_and_report_refuse_a_damaged_csv_in_one_line(received, command):
    damaged = received / "damaged"
    damaged.mkdir(exist_ok=True)
    good = (received / "out" / "runs.csv").read_text()
    (damaged / "runs.csv").write_bytes(_damaged(good)["truncated"])
    done = _run(received, command, "damaged/runs.csv", "--out", "damaged/out")
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert done.stderr.startswith("error: damaged/runs.csv, row 1: ")
    assert SAYS["truncated"] in done.stderr and len(done.stderr.strip().splitlines()) == 1
