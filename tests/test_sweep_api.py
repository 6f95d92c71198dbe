"""The sweep's Python API, `experiments.sweep.run`: tables equal to the CLI's CSV files, nothing
written without ``out``, every form of configuration, clear errors; and importing the
experiments packages starts no JAX backend."""

import os
import subprocess
import sys

import pandas as pd
import pytest
from matplotlib.figure import Figure

from experiments import sweep
from experiments.analysis.verdicts import Claim
from experiments.config import grids
from experiments.sweep import cli

pytestmark = pytest.mark.integration

# the quick preset, reduced to one algorithm (one engine program and one characteristic-time
# solver to compile: most of the time) on its two instances
ARGV = ["--preset", "quick", "--runs", "4", "--algorithms", "ttucb", "--max-samples", "200000"]
OVERRIDES = {"runs": 4, "algorithms": ("ttucb",), "max_samples": 200_000}
TOML = """name = "api"
instances = ["mu1", "mu2"]
algorithms = ["ttucb"]
runs = 4
max_samples = 200_000
"""
MAPPING = {
    "name": "api",
    "instances": ["mu1", "mu2"],
    "algorithms": ["ttucb"],
    "runs": 4,
    "max_samples": 200_000,
}


def read_csv(path) -> pd.DataFrame:
    """A CSV of `experiments.analysis.results.write_csv` as pandas reads it: text kept as
    text (``n/a`` is not a missing value), an empty field (not applicable) as NaN."""
    return pd.read_csv(path, keep_default_na=False, na_values=[""])


def test_run_returns_the_tables_the_cli_writes(tmp_path):
    out = tmp_path / "cli"
    assert cli.main([*ARGV, "--quiet", "--out", str(out)]) == 0
    result = sweep.run(grids.config_from_preset("quick", **OVERRIDES), progress=False)
    pd.testing.assert_frame_equal(result.runs, read_csv(out / "runs.csv"))
    pd.testing.assert_frame_equal(result.cells, read_csv(out / "summary.csv"))
    assert len(result.runs) == 2 * 4  # instances × runs (ε = ∞)
    assert result.report + "\n" == (out / "report.md").read_text()
    assert result.config.runs == 4 and result.config.algorithm_labels == ("ttucb",)
    assert result.paths == {}
    assert result.figures and all(isinstance(f, Figure) for f in result.figures.values())
    on_disk = {os.path.splitext(name)[0] for name in os.listdir(out / "figures")}
    assert set(result.figures) == on_disk
    assert result.claims and all(isinstance(c, Claim) for c in result.claims)
    assert list(result.claims_frame()["key"]) == [c.key for c in result.claims]


def test_no_figures_writes_tables_and_report_and_plot_draws_them_later(tmp_path, capsys):
    """``--no-figures``: the same runs and report, no figure; ``experiments.plot`` then draws
    from runs.csv the figures a full sweep draws."""
    out = tmp_path / "bare"
    assert cli.main([*ARGV, "--quiet", "--no-figures", "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert f"figures: not drawn (python -m experiments.plot {out / 'runs.csv'}" in printed
    assert not list((out / "figures").glob("*")) and (out / "report.md").exists()
    result = sweep.run(
        grids.config_from_preset("quick", **OVERRIDES), progress=False, figures=False
    )
    assert result.figures == {}
    pd.testing.assert_frame_equal(result.runs, read_csv(out / "runs.csv"))
    assert result.report + "\n" == (out / "report.md").read_text()
    from experiments.plot import cli as plot_cli

    assert plot_cli.main([str(out / "runs.csv")]) == 0
    drawn = {os.path.splitext(name)[0] for name in os.listdir(out / "figures")}
    full = sweep.run(grids.config_from_preset("quick", **OVERRIDES), progress=False)
    assert drawn == set(full.figures)
    (out / "figures" / "notes.txt").write_text("mine")  # not a figure: kept
    assert cli.main([*ARGV, "--quiet", "--no-figures", "--overwrite", "--out", str(out)]) == 0
    assert os.listdir(out / "figures") == ["notes.txt"]  # the earlier sweep's figures: gone


def test_mapping_and_file_give_the_same_sweep_and_write_nothing(tmp_path, monkeypatch):
    work = tmp_path / "cwd"
    work.mkdir()
    monkeypatch.chdir(work)
    from_mapping = sweep.run(MAPPING, progress=False)
    assert os.listdir(work) == []  # no results/, no checkpoints
    path = tmp_path / "api.toml"
    path.write_text(TOML)
    from_file = sweep.run(str(path), progress=False)
    assert from_file.config == from_mapping.config
    pd.testing.assert_frame_equal(from_file.runs, from_mapping.runs)
    pd.testing.assert_frame_equal(from_file.cells, from_mapping.cells)
    assert os.listdir(work) == []


@pytest.mark.parametrize(
    ("config", "options", "message"),
    [
        ("no_such_preset", {}, "unknown preset 'no_such_preset'"),
        ("quick", {"resume": True}, "resume=True .* give out"),
        ({"instances": ["mu1"], "algorithms": ["ttucb"], "runs": 0}, {}, "runs: must be"),
        (42, {}, "a configuration, preset, path or mapping"),
    ],
)
def test_bad_input_raises_value_error(config, options, message):
    with pytest.raises(ValueError, match=message):
        sweep.run(config, progress=False, **options)


def test_importing_the_experiments_starts_no_jax_backend():
    """The sweep sets the host device count or initialises jax.distributed after importing
    its modules, which a started backend would forbid."""
    modules = [
        "experiments.config",
        "experiments.config.grids",
        "experiments.sweep",
        "experiments.sweep.cli",
        "experiments.sweep.plan",
        "experiments.analysis.drawing",
        "experiments.analysis.markdown_report",
        "experiments.audit",
        "experiments.bench",
        "experiments.plot",
        "experiments.report",
    ]
    code = "import importlib, sys\n"
    code += f"for m in {modules!r}: importlib.import_module(m)\n"
    code += "from jax._src import xla_bridge\nsys.exit(len(xla_bridge._backends))\n"
    assert subprocess.run([sys.executable, "-c", code], timeout=120).returncode == 0
