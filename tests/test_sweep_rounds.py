"""Rounds of adaptivity in the experiments: summary columns, the Appendix H bounds and their
verdicts, episode modes from the registry and from options, the rounds figures and preset."""

from __future__ import annotations

import math

import numpy as np
import pytest

import jaxbai
from experiments import config
from experiments.analysis import drawing, markdown_report, results, rounds, stats
from experiments.analysis.stats import Z95
from experiments.config import grids

pytestmark = pytest.mark.integration


def _runs(algorithm, instance="i", eps=1.0, delta=0.01, tau=1024, c=(40, 44), censored=0):
    """Runs of one cell: τ constant, rounds cycling through ``c``."""
    n = 2 * len(c)
    rounds_of = np.resize(np.asarray(c), n)
    return {
        "algorithm": np.full(n, algorithm, object),
        "privacy": np.full(n, jaxbai.ALGORITHMS[algorithm].info().privacy, object),
        "privacy_measure": np.full(n, jaxbai.ALGORITHMS[algorithm].info().claim, object),
        "instance": np.full(n, instance, object),
        "means": np.full(n, "0.9 0.5 0.4 0.3 0.2", object),
        "K": np.full(n, 5),
        "epsilon": np.full(
            n, eps if jaxbai.ALGORITHMS[algorithm].info().privacy != "none" else np.inf
        ),
        "delta": np.full(n, delta),
        "threshold": np.full(n, "heuristic", object),
        "seed": np.zeros(n, int),
        "run": np.arange(n),
        "tau": np.full(n, tau, np.int64),
        "recommendation": np.zeros(n, int),
        "correct": np.ones(n, bool),
        "censored": np.arange(n) < censored,
        "rounds": rounds_of,
    }


def test_summary_has_rounds_mean_std_max():
    table = results.concat([_runs("adap_tt", c=(40, 44)), _runs("ttucb", c=(-1,))])
    s = stats.summarize(table)
    assert list(s) == list(stats.SUMMARY_COLUMNS)
    # adap_tt: rounds 40, 44, 40, 44 → mean 42, sample std √(4·4/3), max 44
    assert s["rounds_mean"][0] == 42.0 and s["rounds_max"][0] == 44
    assert s["rounds_std"][0] == pytest.approx(math.sqrt(16 / 3))
    assert np.isnan([s["rounds_mean"][1], s["rounds_max"][1]]).all()  # fully sequential


def test_episode_modes_from_registry_and_options():
    modes = rounds.episode_modes(
        ["adap_tt", "adap_tt_star_global", "ttucb_dpa", "ttucb_dpa_global", "dp_se", "ttucb", "x"]
    )
    assert modes == {
        "adap_tt": "per_arm",
        "adap_tt_star_global": "global",
        "ttucb_dpa": "per_arm",
        "ttucb_dpa_global": "global",
        "dp_se": None,
        "ttucb": None,
        "x": None,
    }
    cfg = config.loads(
        'instances = ["mu1"]\nalgorithms = [{name = "x", algorithm = "adap_tt", '
        'episodes = "global"}]'
    )
    assert rounds.episode_modes(["x"], cfg) == {"x": "global"}


def test_rounds_ratio_against_hand_computed_bounds():
    table = results.concat([_runs("adap_tt", c=(40, 44)), _runs("adap_tt_global", c=(9, 9))])
    s = stats.summarize(table)
    cells = rounds.rounds_ratios(s, rounds.episode_modes(s["algorithm"]))
    per_arm, glob = cells
    # τ = 1024 in every run: E[τ] exact, bounds 5·10 = 50 (per arm) and 10 (global)
    assert per_arm.bound == (50.0, 50.0, 50.0) and glob.bound == (10.0, 10.0, 10.0)
    half = Z95 * math.sqrt(16 / 3) / 2
    assert per_arm.rounds.lo == pytest.approx(42 - half)
    assert per_arm.ratio.value == pytest.approx(42 / 50)
    assert per_arm.ratio.hi == pytest.approx((42 + half) / 50)
    assert glob.ratio == (0.9, 0.9, 0.9)


def _claim(*cells_of) -> str:
    summary = stats.summarize(results.concat(list(cells_of)))
    switch = {("i", "local"): np.nan, ("i", "global"): np.nan}
    modes = rounds.episode_modes(summary["algorithm"])
    ctx = markdown_report.Context(summary, switch, np.full(len(summary["mean"]), np.nan), modes)
    return {c.key: c for c in markdown_report.evaluate(ctx)}["R1"]


def test_rounds_claim_verdicts():
    assert _claim(_runs("adap_tt", c=(40, 44)), _runs("ttucb_dpa_global", c=(9,))).verdict == (
        "holds"
    )
    # one global episode over 1024 samples cannot take 15 > log₂ 1024 rounds
    assert _claim(_runs("adap_tt", c=(40, 44)), _runs("adap_tt_global", c=(15,))).verdict == (
        "fails"
    )
    assert _claim(_runs("adap_tt_global", c=(15,), censored=1)).verdict == "inconclusive"
    dpse = _claim(_runs("dp_se", c=(3,)))  # epochs: no bound in Appendix H
    assert dpse.verdict == "inconclusive" and "no cells" in dpse.evidence


def test_rounds_table_lists_every_cell_with_rounds():
    summary = stats.summarize(
        results.concat([_runs("adap_tt"), _runs("dp_se", c=(3,)), _runs("ttucb", c=(-1,))])
    )
    ctx = markdown_report.Context(
        summary, {}, np.full(3, np.nan), rounds.episode_modes(["adap_tt"])
    )
    rows = [line for line in markdown_report.rounds_table(ctx) if line.startswith("| adap_tt ")]
    assert rows and "| 50 | 10 | K log₂ E[τ] | 0.84 [" in rows[0]
    assert any(line.startswith("| dp_se ") and line.endswith("| — | — |") for line in
               markdown_report.rounds_table(ctx))  # fmt: skip
    assert not any(line.startswith("| ttucb ") for line in markdown_report.rounds_table(ctx))


def test_rounds_figures_exclude_fully_sequential_algorithms_and_draw_the_bounds():
    cells = [_runs(a, eps=e, delta=d) for a in ("adap_tt", "adap_tt_global") for e in (0.1, 1.0)
             for d in (0.1, 0.01)]  # fmt: skip
    cells += [_runs("dp_se", eps=e, c=(3,)) for e in (0.1, 1.0)]
    cells += [_runs(a, delta=d, c=c) for a, c in (("ttucb", (-1,)), ("ttucb_dpa", (30,)))
              for d in (0.1, 0.01)]  # fmt: skip
    summary = stats.summarize(results.concat(cells))
    specs = {(s.name, s.delta): s.algorithms for s in drawing.figure_specs(summary)}
    assert specs[("rounds_global", 0.01)] == ("adap_tt", "dp_se", "adap_tt_global")
    assert specs[("rounds_global", 0.1)] == ("adap_tt", "adap_tt_global")
    assert specs[("rounds_nonprivate", None)] == ("ttucb_dpa",)
    assert ("nonprivate", None) not in specs  # private algorithms ran: ε figures instead
    fig = drawing.draw_figure(summary, drawing.FigureSpec("rounds_global", "global",
                           specs[("rounds_global", 0.01)], "log", 0.01, True))  # fmt: skip
    bounds = {
        line.get_linestyle(): set(line.get_ydata())
        for line in fig.axes[0].get_lines()
        if line.get_linestyle() in ("--", ":")
    }
    assert bounds == {"--": {50.0}, ":": {10.0}}  # K log₂ 1024 and log₂ 1024; none for DP-SE


def test_rounds_preset_holds_the_batched_algorithms():
    import jaxbai

    cfg = grids.config_from_preset("rounds")
    episodic = {a for a in cfg.algorithm_labels if jaxbai.ALGORITHMS[a].episodic}
    assert episodic == {
        "adap_tt", "adap_tt_star", "adap_tt_global", "adap_tt_star_global", "ttucb_dpa",
        "ttucb_dpa_global",
    }  # fmt: skip
    assert set(cfg.algorithm_labels) - episodic == {"dp_se"}
    assert len(cfg.deltas) >= 2  # TTUCB-DPA is drawn against δ
