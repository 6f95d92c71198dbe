"""Experiment files: the schema, validation errors, presets as files, inline instances, mixed
families and K merged transparently, reruns from sweep.json, family-aware theory overlays."""

from __future__ import annotations

import math
import os
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

from experiments import config
from experiments.analysis import overlay
from experiments.config import ConfigError, grids
from experiments.sweep import cli

pytestmark = pytest.mark.integration

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

MIXED = """
description = "K = 3 Gaussian, K = 8 Beta, K = 5 Bernoulli"
runs = 3
seed = 11
deltas = [0.05]
max_samples = 20_000
instances = [
  {name = "g3", family = "gaussian", means = [0.5, 0.2, 0.0], sigma = 0.3},
  {name = "b8", family = "beta", means = [0.9, 0.6, 0.55, 0.5, 0.45, 0.4, 0.35, 0.3], concentration = 4},
  "mu1",
]
algorithms = [{name = "ttucb_b03", algorithm = "ttucb", beta = 0.3, threshold = "theory"}]
"""  # noqa: E501


def _lines(path: str) -> list[str]:
    with open(path) as f:
        return f.read().splitlines()


@pytest.fixture(scope="module")
def mixed(tmp_path_factory) -> tuple[str, str]:
    """(experiment file, output directory) of the mixed-family sweep."""
    root = tmp_path_factory.mktemp("mixed")
    path = root / "mixed.toml"
    path.write_text(MIXED)
    out = str(root / "out")
    assert cli.main(["--config", str(path), "--out", out, "--quiet"]) == 0
    return str(path), out


# ----------------------------------------------------------------------------- end to end
def test_mixed_k_equals_three_separate_sweeps(mixed, tmp_path):
    """Each instance's rows are those of a sweep of it alone; the combined table has per-arm
    columns up to the largest K, empty beyond a row's own K."""
    path, out = mixed
    combined = _frame(os.path.join(out, "runs.csv"))
    separate = []
    for name in ("g3", "b8", "mu1"):
        one = str(tmp_path / name)
        assert cli.main(["--config", path, "--instances", name, "--out", one, "--quiet"]) == 0
        separate.append(_frame(os.path.join(one, "runs.csv")))
    together = pd.concat(separate, ignore_index=True)[combined.columns]
    pd.testing.assert_frame_equal(combined, together, check_dtype=False)
    assert len(combined) == 3 * 3  # three instances × one cell × three runs
    assert set(combined["algorithm"]) == {"ttucb_b03"}  # the label, not the registry name
    assert set(combined["threshold"]) == {"theory"}  # the algorithm's own threshold option
    assert combined["K"].tolist() == [3] * 3 + [8] * 3 + [5] * 3
    assert combined.loc[combined["K"] == 3, "count_3":"count_7"].isna().all().all()


def _frame(path: str) -> pd.DataFrame:
    """A runs.csv as pandas reads it: empty fields are NaN."""
    return pd.read_csv(path, keep_default_na=False, na_values=[""])


def test_rerun_from_sweep_json_is_identical(mixed, tmp_path):
    _, out = mixed
    again = str(tmp_path / "again")
    sidecar = os.path.join(out, "sweep.json")
    assert cli.main(["--config", sidecar, "--out", again, "--quiet"]) == 0
    assert _lines(os.path.join(again, "runs.csv")) == _lines(os.path.join(out, "runs.csv"))


def test_report_and_figures_follow_the_families(mixed):
    _, out = mixed
    text = open(os.path.join(out, "report.md")).read()
    assert "- gaussian (g3): the non-private lower bound T*_KL with the Gaussian KL" in text
    assert "- beta (b8): nothing" in text
    assert "evaluated without g3, b8" in text
    a2 = next(line for line in text.splitlines() if line.startswith("| A2 |"))
    assert "g3" in a2 and "mu1" in a2 and "b8" not in a2  # no lower bound for Beta arms
    assert "| g3 | n/a | n/a |" in text  # no regime switch for Gaussian arms
    figures = os.path.join(out, "figures")
    assert os.path.getsize(os.path.join(figures, "tau_vs_delta_nonprivate.png")) > 1000


# ----------------------------------------------------------------------------- presets
PAPER_GLOBAL = ("adap_tt", "adap_tt_star", "dp_se", "ttucb")
PAPER_LOCAL = ("ctb_tt", "ttucb")
SIX = ("mu1", "mu2", "mu3", "mu4", "mu5", "mu6")
G = (0.001, 0.005, 0.01, 0.05, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1, 10, 100, 1000)
L = (0.01, 0.05, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1, 10, 100)
EXPECTED = {  # instances, algorithms, local ε, global ε, runs, budget (Appendix I)
    "quick": (("mu1", "mu2"), ("ttucb", "adap_tt", "adap_tt_star", "dp_se"), L,
              (0.05, 0.1, 0.2, 0.5, 1, 10, 100), 100, 10**7),
    "fig1": (("mu1", "mu2"), PAPER_LOCAL, L, G, 1000, 10**9),
    "fig2": (("mu1", "mu2"), PAPER_GLOBAL, L, G, 1000, 10**9),
    "fig3": (SIX, PAPER_LOCAL, L, G, 1000, 10**9),
    "fig4": (SIX, PAPER_GLOBAL, L, G, 1000, 10**9),
    "fig5": (SIX, PAPER_GLOBAL, L, G, 1000, 10**9),
    "paper": (SIX, ("ttucb", "ctb_tt", "adap_tt", "adap_tt_star", "dp_se"), L, G, 1000, 10**9),
    "local-high-privacy": (SIX, PAPER_LOCAL, (0.005, 0.01, 0.02, 0.05), G, 100, 2 * 10**7),
    "published": (("mu1", "mu2"), ("ttucb", "ctb_tt", "adap_tt", "adap_tt_star", "dp_se",
                                   "ttucb_published", "adap_tt_published", "dp_se_published"),
                  L, G, 200, 10**9),
    "dptt": (("mu1", "mu2"), ("eb_tci", "dp_se", "adap_tt", "adap_tt_star", "dp_tt"), L,
             (0.001, 0.0046, 0.021, 0.097, 0.45, 2.1, 9.5, 43.0, 200.0), 1000, 10**9),
}  # fmt: skip


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_preset_files_hold_the_paper_grids(name):
    cfg = grids.config_from_preset(name)
    instances, algorithms, local, glob, runs, budget = EXPECTED[name]
    assert cfg.instance_names == instances and cfg.algorithm_labels == algorithms
    assert all(a.options == () for a in cfg.algorithms)
    assert cfg.local_epsilons == local and cfg.global_epsilons == glob
    assert (cfg.runs, cfg.max_samples, cfg.deltas, cfg.seed) == (runs, budget, (0.01,), 0)
    assert cfg.threshold == "heuristic" and cfg.out == f"results/{name}"
    from_file = cli.config_from_args(cli.build_parser().parse_args(
        ["--config", os.path.join(ROOT, "experiments", "config", "grids", f"{name}.toml")]
    ))  # fmt: skip
    assert from_file == cfg


def test_preset_and_its_file_write_the_same_runs_csv(tmp_path):
    tiny = ["--instances", "mu1", "--algorithms", "ttucb", "--runs", "2", "--max-samples",
            "20000", "--seed", "4", "--quiet"]  # fmt: skip
    fig2 = os.path.join(ROOT, "experiments", "config", "grids", "fig2.toml")
    assert cli.main(["--preset", "fig2", *tiny, "--out", str(tmp_path / "p")]) == 0
    assert cli.main(["--config", fig2, *tiny, "--out", str(tmp_path / "f")]) == 0
    preset = (tmp_path / "p" / "runs.csv").read_bytes()
    assert preset == (tmp_path / "f" / "runs.csv").read_bytes()
    assert preset.count(b"\n") == 3  # header and two runs


def test_every_shipped_file_is_a_preset():
    names = {f[: -len(".toml")] for f in os.listdir(grids.GRID_DIR) if f.endswith(".toml")}
    assert names == set(grids.PRESETS) == set(EXPECTED) | {"rounds", "deltas"}


def test_the_deltas_preset_shares_six_deltas():
    cfg = grids.config_from_preset("deltas")
    assert cfg.instance_names == ("mu1", "mu2")
    assert cfg.algorithm_labels == ("ttucb", "ctb_tt", "adap_tt")
    assert cfg.deltas == tuple(10.0**-k for k in range(1, 7)) and cfg.share_deltas
    assert cfg.local_epsilons == cfg.global_epsilons == (1.0,)
    assert cfg.plot.figures == ("log_delta", "allocations")


def test_resolved_config_round_trips():
    cfg = config.loads(MIXED, name="mixed")
    again = config.parse(cfg.to_dict())
    assert again == cfg
    b8 = cfg.instances[1]
    assert b8.a[0] == pytest.approx(3.6) and b8.b[0] == pytest.approx(0.4)
    assert b8.means[0] == pytest.approx(0.9, abs=1e-15)


# ----------------------------------------------------------------------------- overrides
def _args(*argv: str):
    return cli.config_from_args(cli.build_parser().parse_args(list(argv)))


def test_inline_instances_from_the_command_line():
    cfg = _args("--algorithms", "ttucb", "--means", "0.31", "0.30", "0.12")
    (inst,) = cfg.instances
    assert (inst.name, inst.family, inst.means) == ("bernoulli_K3", "bernoulli", (0.31, 0.3, 0.12))
    assert cfg.out == "results/bernoulli_K3"  # not the preset's directory
    cfg = _args("--algorithms", "ttucb", "--family", "gaussian", "--sigma", "0.3",
                "--means", "1", "0.8", "0.5", "--instances", "mu1")  # fmt: skip
    assert cfg.instance_names == ("mu1", "gaussian_K3_sigma0.3")
    assert cfg.instances[1].sigma == 0.3
    beta = _args("--algorithms", "ttucb", "--family", "beta", "--means", "0.6", "0.5",
                 "--concentration", "10").instances[0]  # fmt: skip
    assert (beta.name, beta.a, beta.b) == ("beta_K2_c10", (6.0, 5.0), (4.0, 5.0))
    shapes = _args("--algorithms", "ttucb", "--family", "beta", "--beta-a", "2", "1",
                   "--beta-b", "1", "1").instances[0]  # fmt: skip
    assert shapes.means == (2 / 3, 0.5) and shapes.name == "beta_K2"


@pytest.mark.parametrize(
    ("argv", "flag"),
    [
        (["--means", "1.5", "0.2"], "--means"),
        (["--sigma", "0.3", "--means", "0.5", "0.2"], "--sigma"),
        (["--family", "gaussian", "--means", "1", "0.5"], "--sigma"),
        (["--family", "beta", "--means", "0.6", "0.5"], "--concentration: is required"),
        (["--family", "beta", "--means", "1.0", "0.5", "--concentration", "2"], "--means"),
        (["--family", "gaussian"], "--family"),
        (["--instances", "mine"], "--instances"),
        (["--deltas", "2"], "--deltas"),
        (["--algorithms", "magic"], "--algorithms"),
        (["--draws", "per_arm"], "--draws"),
    ],
)
def test_command_line_errors_name_the_flag(argv, flag):
    with pytest.raises(ConfigError) as err:
        _args("--algorithms", "ttucb", *argv)
    assert str(err.value).startswith(f"{flag}"), str(err.value)


def test_draws_flag_is_recorded_in_the_configuration():
    assert _args("--algorithms", "adap_tt").draws == "auto"
    cfg = _args("--algorithms", "adap_tt", "--draws", "per_sample")
    assert cfg.draws == "per_sample" and cfg.to_dict()["draws"] == "per_sample"
    assert config.parse(cfg.to_dict()) == cfg


def test_threshold_flag_overrides_every_algorithm(tmp_path):
    path = tmp_path / "g.toml"
    path.write_text(MIXED)
    cfg = _args("--config", str(path), "--threshold", "heuristic")
    assert cfg.algorithms[0].options == (("beta", 0.3),)
    assert cfg.algorithms[0].threshold_of(cfg.threshold) == "heuristic"


def test_per_algorithm_options_build_the_factories_algorithms():
    import jaxbai

    cfg = config.loads(
        'instances = ["mu1"]\n'
        "algorithms = [\n"
        '  {name = "adap_tt_b03", algorithm = "adap_tt", beta = 0.3},\n'
        '  {name = "adap_tt_star", threshold = "theory", leader_bonus = "eq11"},\n'
        '  {name = "dpa1", algorithm = "ttucb_dpa", episodes = "global"},\n'
        '  "dp_se",\n'
        "]\n"
    )
    built = [a.build(cfg.threshold) for a in cfg.algorithms]
    assert built[0] == jaxbai.adap_tt(beta=0.3)
    assert built[1] == jaxbai.adap_tt_star(threshold="theory", leader_bonus="eq11")
    assert built[2] == jaxbai.ttucb_dpa(episodes="global")
    assert [a.threshold_of("heuristic") for a in cfg.algorithms] == [
        "heuristic", "theory", "heuristic", "n/a",
    ]  # fmt: skip
    assert cfg.algorithms[0].display_name() == "AdaP-TT (β = 0.3)"
    assert cfg.epsilons_for("adap_tt_b03") == config.GLOBAL_EPSILONS
    assert cfg.epsilons_for("dpa1") == (math.inf,)


# ----------------------------------------------------------------------------- validation
def _grid(instances: str = '["mu1"]', algorithms: str = '["ttucb"]', extra: str = "") -> str:
    return f"instances = {instances}\nalgorithms = {algorithms}\n{extra}"


BAD = [  # (file text, key named, part of the valid range)
    (_grid(extra="runz = 3\n"), "grid.toml:3: runz", "valid: ["),
    (_grid('[{name = "x", means = [0.5, 0.2], sigmaa = 1}]'), "instances[0].sigmaa", "valid"),
    (_grid('[{name = "x", means = [1.2, 0.5]}]'), "instances[0].means", "in [0, 1]"),
    (_grid('[{name = "x", family = "beta", means = [1.0, 0.5], concentration = 2}]'),
     "instances[0].means", "in (0, 1)"),
    (_grid('[{name = "x", family = "gaussian", means = [1.0, 0.5], sigma = -1}]'),
     "instances[0].sigma", "> 0"),
    (_grid('[{name = "x", means = [0.5]}]'), "instances[0].means", "K >= 2"),
    (_grid('[{name = "t", means = [0.9, 0.9, 0.1]}]'), "instances[0].means", "tied best arm"),
    (_grid(algorithms='[{name = "a", algorithm = "adap_tt", beta = 1.5}]'),
     "algorithms[0].beta", "(0, 1)"),
    (_grid(algorithms='[{name = "dp_se", beta = 0.3}]'), "algorithms[0].beta", "takes options"),
    (_grid(algorithms='[{name = "a", algorithm = "adap_tt", episodes = "all"}]'),
     "algorithms[0].episodes", "per_arm"),
    (_grid(algorithms='[{name = "a", algorithm = "adap_tt", beta = "0.3"}]'),
     "algorithms[0].beta", "must be a float"),
    (_grid('[{name = "g", family = "gaussian", means = [1.0, 0.5], sigma = 0.3}]',
           '["adap_tt"]'), "algorithms[0]", "needs rewards in [0, 1]"),
    (_grid('[{name = "g", family = "gaussian", means = [1.0, 0.5], sigma = 2}]'),
     "algorithms[0].sigma", "sigma >= 2"),
    (_grid(extra='threshold = "magic"\n'), "threshold", "heuristic"),
    (_grid(extra="epsilons = [0.5, -1]\n"), "epsilons", ">= 1e-12"),
    (_grid(extra="deltas = [0.5, 1]\n"), "deltas", "in (0, 1)"),
    (_grid(extra="max_samples = 0\n"), "max_samples", "[1, 2147483647]"),
    (_grid(extra='draws = "sometimes"\n'), "draws", "per_episode"),
    (_grid(algorithms='["ttucb", "ttucb"]'), "algorithms[1].name", "twice"),
    (_grid(algorithms='["magic"]'), "algorithms[0].algorithm", "ttucb"),
    (_grid(extra='[plot]\nfigures = ["pie"]\n'), "grid.toml:4: plot.figures", "global"),
    ('runs = 3\ninstances = ["mu1",, "mu2"]\n', "grid.toml: invalid TOML", "line 2"),
]  # fmt: skip


@pytest.mark.parametrize(("text", "key", "valid"), BAD)
def test_validation_names_the_key_and_the_valid_range(text, key, valid):
    with pytest.raises(ConfigError) as err:
        config.loads(text, source="grid.toml")
    message = str(err.value)
    assert key in message and valid in message, message
    assert "\n" not in message


def test_errors_carry_the_line_of_the_key():
    text = '# my grid\ninstances = ["mu1"]\n\n[[algorithms]]\nname = "ttucb"\n\n'
    text += '[[algorithms]]\nname = "a"\nalgorithm = "adap_tt"\nbeta = 1.5\n'
    with pytest.raises(ConfigError, match=r"^grid\.toml:10: algorithms\[1\]\.beta: beta must"):
        config.loads(text, source="grid.toml")
    inline = 'instances = [\n  "mu1",  # [paper], "quoted"\n  {name = "a", means = [0.5, 0.2]},'
    inline += ' {name = "b", means = [0.5, 0.5]},\n]\nalgorithms = ["ttucb"]\n'
    with pytest.raises(ConfigError, match=r"^grid\.toml:3: instances\[2\]\.means: tied best"):
        config.loads(inline, source="grid.toml")  # entry 2 starts on line 3, after a comment


def test_cli_reports_a_bad_file_in_one_line(tmp_path):
    path = tmp_path / "bad.toml"
    path.write_text(_grid(algorithms='[{name = "a", algorithm = "adap_tt", beta = 1.5}]'))
    proc = subprocess.run(
        [sys.executable, "-m", "experiments.sweep", "--config", str(path), "--out", str(tmp_path)],
        capture_output=True, text=True, timeout=120, cwd=ROOT,
    )  # fmt: skip
    assert proc.returncode == cli.EXIT_USAGE
    assert proc.stderr.strip().count("\n") == 0, proc.stderr
    assert f"{path}:2: algorithms[0].beta: beta must lie in (0, 1)" in proc.stderr
    assert not (tmp_path / "runs.csv").exists()


def test_a_file_that_is_not_utf8_or_has_a_tiny_epsilon_is_located(tmp_path):
    """A non-UTF-8 file gave the decoder's message without the file; ε = 1e-40 gave a numpy
    array repr without file or line."""
    path = tmp_path / "grid.toml"
    path.write_bytes(b'instances = ["mu1"]\n# caf\xe9\nalgorithms = ["ttucb"]\n')
    with pytest.raises(ConfigError, match=rf"^{path}:2: not UTF-8 text \(byte 0xe9\)"):
        config.load(str(path))
    path.write_text('instances = ["mu1"]\nalgorithms = ["adap_tt"]\nepsilons = [1, 1e-40]\n')
    with pytest.raises(ConfigError, match=rf"^{path}:3: epsilons: .*>= 1e-12.*1e-40 is not$"):
        config.load(str(path))


# ----------------------------------------------------------------------------- theory
def test_gaussian_overlay_is_the_gaussian_kl_bound():
    # two Gaussian arms, gap Δ, variance σ²: T*_KL = 8σ²/Δ² (ω = 1/2 each, common mean midway)
    lb = overlay.lower_bound([1.0, 0.5], "none", np.array([np.inf]), 0.01, "gaussian", 0.5)
    assert lb[0] == pytest.approx(8 * 0.25 / 0.25 * math.log(1 / 0.024), rel=1e-4)
    assert math.isnan(overlay.regime_switch([1.0, 0.5], "global", "gaussian"))
    assert np.isnan(overlay.lower_bound([1.0, 0.5], "global", np.ones(1), 0.01, "gaussian", 1))
    assert np.isnan(overlay.lower_bound([0.6, 0.4], "none", np.ones(1), 0.01, "beta")).all()
