"""Tests of the experiments package: the sweep CLI end to end, resume, argument errors, the
claims report's verdict logic on synthetic results, and the statistics it relies on."""

from __future__ import annotations

import dataclasses
import json
import math
import os
import subprocess
import sys

import numpy as np
import pytest

import experiments.plot
import experiments.report
import jaxbai
from experiments import sweep
from experiments.analysis import drawing, markdown_report, overlay, results, stats
from experiments.config import grids
from experiments.sweep import cli

TINY = [
    "--instances", "mu1",
    "--algorithms", "ttucb", "adap_tt",
    "--epsilons", "1", "10",
    "--runs", "5",
    "--max-samples", "20000",
    "--seed", "3",
    "--quiet",
]  # fmt: skip


@pytest.fixture(scope="module")
def tiny_sweep(tmp_path_factory) -> str:
    """Output directory of an uninterrupted tiny sweep."""
    out = str(tmp_path_factory.mktemp("sweep"))
    assert cli.main([*TINY, "--out", out]) == 0
    return out


@pytest.mark.integration
def test_sweep_writes_csv_json_figures_report(tiny_sweep):
    table = results.read_csv(os.path.join(tiny_sweep, "runs.csv"))
    assert list(table) == list(results.RUN_COLUMNS)
    assert results.num_rows(table) == 5 + 2 * 5  # TTUCB once at ε = ∞, AdaP-TT at two ε
    assert set(table["algorithm"]) == {"ttucb", "adap_tt"}
    assert np.isinf(table["epsilon"][table["algorithm"] == "ttucb"]).all()
    assert (table["K"] == 5).all() and (table["seed"] == 3).all()
    assert sorted(set(table["run"].tolist())) == list(range(5))
    assert (table["tau"] > 0).all()
    assert (table["censored"] | (table["tau"] <= 20000)).all()
    counts = results.counts_matrix(table["counts"])  # censored runs too: the budget's counts
    assert counts.shape == (15, 5) and (counts.sum(axis=1) == table["tau"]).all()
    assert np.isnan(table["reported_tau"]).all()  # neither reports another stopping time

    summary = results.read_csv(os.path.join(tiny_sweep, "summary.csv"), stats.SUMMARY_COLUMNS)
    assert list(summary) == list(stats.SUMMARY_COLUMNS)
    assert results.num_rows(summary) == 3

    with open(os.path.join(tiny_sweep, "sweep.json")) as f:
        meta = json.load(f)
    for key in ("versions", "jax", "git_commit", "config", "wall_time_s", "samples_per_s"):
        assert key in meta
    assert meta["config"]["runs"] == 5
    assert meta["config"]["instances"] == [
        {"name": "mu1", "family": "bernoulli", "means": [0.95, 0.9, 0.9, 0.9, 0.5]}
    ]
    assert meta["config"]["algorithms"] == ["ttucb", "adap_tt"]
    assert meta["jax"]["backend"] and meta["jax"]["devices"]
    assert set(meta["engine"]) == {"ttucb", "adap_tt"}

    figures = os.path.join(tiny_sweep, "figures")
    assert not os.path.exists(os.path.join(figures, "tau_vs_epsilon_global_linear.png"))
    for name in ("tau_vs_epsilon_global",):
        for ext in ("png", "pdf"):
            assert os.path.getsize(os.path.join(figures, f"{name}.{ext}")) > 1000
    assert os.path.getsize(os.path.join(figures, "allocations_mu1.png")) > 1000
    assert summary["omega_star"][0] and summary["proportions"][0]
    text = open(os.path.join(tiny_sweep, "report.md")).read()
    assert "| A1 |" in text and "| G5 |" not in text  # G5 compares AdaP-TT*, not run here
    (omitted,) = [line for line in text.splitlines() if line.startswith("Not applicable")]
    assert "G5" in omitted
    assert "## Allocations: empirical proportions against ω*" in text


@pytest.mark.integration
def test_plot_and_report_redraw_from_csv(tiny_sweep, tmp_path, capsys):
    csv_path = os.path.join(tiny_sweep, "runs.csv")
    assert experiments.plot.main([csv_path, "--out", str(tmp_path / "figs")]) == 0
    assert os.path.getsize(tmp_path / "figs" / "tau_vs_epsilon_global.png") > 1000
    assert experiments.report.main([csv_path, "--out", str(tmp_path / "r.md")]) == 0
    assert "| A2 |" in capsys.readouterr().out
    assert (tmp_path / "r.md").read_text().startswith("# Claims")


@pytest.mark.integration
def test_resume_after_interruption_gives_the_same_csv(tiny_sweep, tmp_path):
    out = str(tmp_path / "resumed")
    interrupted = cli.main([*TINY, "--out", out, "--max-chunks", "1", "--chunk-steps", "32"])
    assert interrupted == cli.EXIT_INTERRUPTED
    assert not os.path.exists(os.path.join(out, "runs.csv"))
    assert cli.main([*TINY, "--out", out, "--resume"]) == 0
    with open(os.path.join(out, "runs.csv")) as a, open(os.path.join(tiny_sweep, "runs.csv")) as b:
        assert a.read() == b.read()
    with open(os.path.join(tiny_sweep, "sweep.json")) as f:
        fresh = json.load(f)
    assert fresh["resumed_jobs"] == 0 and fresh["samples"] > 0 and fresh["samples_per_s"] > 0
    assert cli.main([*TINY, "--out", out, "--resume"]) == 0  # every job restored
    with open(os.path.join(out, "sweep.json")) as f:
        again = json.load(f)
    jobs = sum(stats["jobs"] for stats in again["engine"].values())
    assert again["resumed_jobs"] == jobs > 0  # a resumed sweep recorded samples 0, rate 0.0
    assert again["samples"] == 0 and again["samples_per_s"] is None


def _gpu_present() -> bool:
    import jax

    try:
        return bool(jax.devices("gpu"))
    except RuntimeError:
        return False


@pytest.mark.parametrize(
    "args",
    [
        ["--epsilons", "-0.5"],
        ["--preset", "nope"],
        ["--algorithms", "ttucb", "magic"],
        ["--instances", "mu9"],
        ["--deltas", "1.5"],
        ["--runs", "0"],
        ["--epsilons", "abc"],
        ["--device", "gpu"],
    ],
)
def test_bad_arguments_fail_fast_with_one_line(args, tmp_path):
    if "gpu" in args and _gpu_present():
        pytest.skip("a GPU is present")
    proc = subprocess.run(
        [sys.executable, "-m", "experiments.sweep", *args, "--out", str(tmp_path / "o")],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
    )
    assert proc.returncode == cli.EXIT_USAGE
    assert len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    assert "error" in proc.stderr
    assert not (tmp_path / "o").exists()


def _adap_tt_fixed():
    """A user algorithm without options (hence without threshold families): ε-global DP."""
    import jaxbai

    return dataclasses.replace(jaxbai.adap_tt(beta=0.3), name="adap_tt_fixed")


@pytest.fixture
def user_algorithm():
    """``adap_tt_fixed`` registered for the test only."""
    import jaxbai

    jaxbai.register("adap_tt_fixed", _adap_tt_fixed, "AdaP-TT (β = 0.3, fixed)")
    try:
        yield "adap_tt_fixed"
    finally:
        jaxbai.unregister("adap_tt_fixed")


@pytest.mark.integration
def test_registered_algorithm_runs_through_the_sweep_api(user_algorithm, tmp_path):
    fig2 = grids.config_from_preset("fig2", algorithms=(user_algorithm,))
    assert fig2.epsilons_for(user_algorithm) == grids.GLOBAL_EPSILONS
    assert jaxbai.ALGORITHMS[user_algorithm].info().privacy == "global"
    assert jaxbai.ALGORITHMS[user_algorithm].display_name == "AdaP-TT (β = 0.3, fixed)"
    assert sweep.make_algorithm(user_algorithm, "theory") == _adap_tt_fixed()

    out = str(tmp_path / "user")
    argv = ["--instances", "mu1", "--algorithms", user_algorithm, "--epsilons", "10"]
    argv += ["--runs", "3", "--max-samples", "20000", "--quiet", "--out", out]
    assert cli.main(argv) == 0
    table = results.read_csv(os.path.join(out, "runs.csv"))
    assert set(table["algorithm"]) == {user_algorithm}
    assert set(table["privacy"]) == {"global"} and set(table["threshold"]) == {"n/a"}
    assert set(table["epsilon"].tolist()) == {10.0}
    assert os.path.exists(os.path.join(out, "figures", "tau_vs_epsilon_global.png"))


@pytest.mark.integration
def test_a_sweep_builds_its_plan_once(monkeypatch):
    """Once its configuration is validated, a sweep builds each algorithm, each instance, the
    instance groups, each grid's jobs and the summary exactly once (`sweep.SweepGrids`), and
    the engine runs, run table, figures, report and claims read them."""
    from experiments.config import specs
    from experiments.sweep import grids as sweep_grids
    from experiments.sweep import runner

    config = sweep.resolve(  # TINY's grid, whose programs the module has compiled
        {
            "instances": ["mu1"],
            "algorithms": ["ttucb", "adap_tt"],
            "global_epsilons": [1.0, 10.0],
            "runs": 5,
            "max_samples": 20000,
            "seed": 3,
        }
    )
    calls: dict[str, int] = {}

    def counted(name, function):
        def wrapper(*args, **kwargs):
            calls[name] = calls.get(name, 0) + 1
            return function(*args, **kwargs)

        return wrapper

    monkeypatch.setattr(runner, "resolve", lambda validated: validated)  # validated above
    monkeypatch.setattr(
        specs.AlgorithmSpec, "build", counted("algorithm", specs.AlgorithmSpec.build)
    )
    monkeypatch.setattr(specs.InstanceSpec, "build", counted("instance", specs.InstanceSpec.build))
    groups = counted("groups", sweep_grids.instance_groups)
    monkeypatch.setattr(sweep_grids, "instance_groups", groups)
    monkeypatch.setattr(jaxbai.engine, "grid_jobs", counted("jobs", jaxbai.engine.grid_jobs))
    monkeypatch.setattr(stats, "summarize", counted("summary", stats.summarize))
    result = sweep.run(config, progress=False)
    assert calls == {"groups": 1, "instance": 1, "algorithm": 2, "jobs": 2, "summary": 1}
    assert set(result.cells["algorithm"]) == {"ttucb", "adap_tt"}
    assert result.figures and "A1" in result.report


def test_make_algorithm_passes_the_threshold_only_to_families():
    import jaxbai

    assert sweep.make_algorithm("ttucb", "theory") == jaxbai.ttucb(threshold="theory")
    assert sweep.make_algorithm("dp_se", "theory") == jaxbai.dp_se()
    with pytest.raises(ValueError, match="ttucb"):
        sweep.make_algorithm("magic", "heuristic")


def test_plot_keeps_algorithms_the_registry_does_not_know():
    table = results.concat([_runs("adap_tt", "i", 1.0, 100.0), _runs("ttucb", "i", np.inf, 50.0)])
    table["algorithm"] = np.where(table["algorithm"] == "adap_tt", "elsewhere", "ttucb")
    specs = drawing.figure_specs(stats.summarize(table))
    assert [(s.name, s.algorithms) for s in specs] == [("global", ("ttucb", "elsewhere"))]


def test_presets_follow_the_paper_grids():
    fig4 = grids.config_from_preset("fig4")
    assert fig4.instance_names == tuple(jaxbai.PAPER_INSTANCES) and fig4.runs == 1000
    assert fig4.epsilons_for("adap_tt_star") == grids.GLOBAL_EPSILONS
    assert fig4.deltas == (0.01,)
    assert grids.config_from_preset("fig1").epsilons_for("ctb_tt") == grids.LOCAL_EPSILONS
    paper = grids.config_from_preset("paper")
    assert {"ctb_tt", "adap_tt", "adap_tt_star", "dp_se", "ttucb"} == set(paper.algorithm_labels)


# ----------------------------------------------------------------------------- statistics
def test_wilson_interval_known_values():
    lo, hi = stats.wilson_interval(0, 100)
    assert lo == 0.0 and hi == pytest.approx(0.03699, abs=1e-4)
    lo, hi = stats.wilson_interval(50, 100)
    assert (lo, hi) == pytest.approx((0.4038, 0.5962), abs=1e-4)


def test_loglog_slope_recovers_a_power_law():
    eps = np.array([0.01, 0.03, 0.1, 0.3])
    mean = 7.0 * eps**-1.0
    slope = stats.loglog_slope(eps, mean, 0.01 * mean)
    assert slope.value == pytest.approx(-1.0, abs=1e-9)
    assert slope.lo < -1.0 < slope.hi
    assert stats.loglog_slope(eps[:2], mean[:2], mean[:2]) is None


# ----------------------------------------------------------------------------- verdicts
def _runs(algorithm: str, instance: str, eps: float, mean: float, errors=0, censored=0, n=400):
    """n runs around ``mean`` (±1%, deterministic), the first ``errors`` wrong."""
    tau = mean * (1.0 + 0.01 * np.linspace(-1.0, 1.0, n))
    cens = np.arange(n) >= n - censored
    return {
        "algorithm": np.full(n, algorithm, object),
        "privacy": np.full(n, jaxbai.ALGORITHMS[algorithm].info().privacy, object),
        "privacy_measure": np.full(n, jaxbai.ALGORITHMS[algorithm].info().claim, object),
        "instance": np.full(n, instance, object),
        "means": np.full(n, "0.9 0.5", object),
        "K": np.full(n, 2),
        "epsilon": np.full(n, eps),
        "delta": np.full(n, 0.01),
        "threshold": np.full(n, "heuristic", object),
        "seed": np.zeros(n, int),
        "run": np.arange(n),
        "tau": tau.round().astype(np.int64),
        "recommendation": np.zeros(n, int),
        "correct": np.arange(n) >= errors,
        "censored": cens,
        "rounds": np.full(n, -1),  # fully sequential (no rounds figures)
    }


def _context(cells) -> markdown_report.Context:
    summary = stats.summarize(results.concat([_runs(*c) for c in cells]))
    switch = {("i", "local"): 1.0, ("i", "global"): 0.1}
    return markdown_report.Context(summary, switch, np.full(len(summary["mean"]), 50.0))


def _verdicts(ctx) -> dict[str, str]:
    return {c.key: c.verdict for c in markdown_report.evaluate(ctx)}


def test_verdicts_on_results_that_match_the_paper():
    small = [0.001, 0.003, 0.01, 0.03]  # ≤ ε_s/2 = 0.05 (global)
    cells = [("ttucb", "i", np.inf, 1000.0)]
    cells += [("ctb_tt", "i", e, 1000.0) for e in (10.0, 100.0)]  # ≥ 10 ε_s (local)
    cells += [("ctb_tt", "i", e, 1000.0 * e**-2) for e in (0.05, 0.1, 0.2, 0.4)]
    for alg, scale in (("adap_tt", 3.0), ("adap_tt_star", 2.0)):
        cells += [(alg, "i", e, scale * 100.0 / e) for e in small]
        cells += [(alg, "i", e, 3000.0) for e in (1.0, 10.0, 100.0)]
    cells += [("dp_se", "i", e, 1e6) for e in [*small, 1.0, 10.0, 100.0]]
    v = _verdicts(_context(cells))
    assert v["L1"] == v["L2"] == "holds"
    assert v["G1"] == v["G2"] == v["G3"] == v["G4"] == v["G5"] == v["G6"] == "holds"
    assert v["A1"] == v["A2"] == v["A3"] == "holds"


def test_verdicts_on_results_that_contradict_the_paper():
    cells = [("ttucb", "i", np.inf, 1000.0, 30)]  # 7.5% errors at δ = 1%
    cells += [("ctb_tt", "i", e, 2000.0) for e in (10.0, 100.0)]  # twice TTUCB
    cells += [("ctb_tt", "i", e, 1000.0 * e**-1) for e in (0.05, 0.1, 0.2, 0.4)]  # slope −1
    cells += [("adap_tt", "i", e, 100.0 / e) for e in (0.001, 0.01, 0.03)]
    cells += [("adap_tt_star", "i", e, 130.0 / e) for e in (0.001, 0.01, 0.03)]  # slower
    cells += [("adap_tt", "i", e, 9000.0) for e in (1.0, 10.0)]  # 9 × TTUCB
    cells += [("adap_tt_star", "i", 1.0, 2000.0), ("adap_tt_star", "i", 10.0, 2500.0)]
    cells += [("dp_se", "i", 10.0, 1000.0)]  # faster than AdaP-TT
    ctx = _context(cells)
    ctx = ctx._replace(lower_bound=np.full(len(ctx.summary["mean"]), 1e4))
    v = _verdicts(ctx)
    assert v["L1"] == v["L2"] == "fails"
    assert v["G1"] == v["G2"] == v["G5"] == v["G6"] == "fails"
    assert v["A1"] == v["A2"] == v["A3"] == "fails"  # A3: AdaP-TT* grows from ε = 1 to 10


def test_censored_cells_are_never_evidence_in_comparisons():
    cells = [("adap_tt", "i", 0.01, 100.0), ("adap_tt_star", "i", 0.01, 500.0, 0, 10)]
    claims = {c.key: c for c in markdown_report.evaluate(_context(cells))}
    assert claims["G5"].verdict == "inconclusive"
    assert claims["L1"].verdict == "not applicable"  # no CTB-TT ran
    assert "no CTB-TT" in claims["L1"].evidence


def test_claims_are_evaluated_again_on_the_published_variants():
    """Where a sweep holds the published code's variants, G-claims run again with them in the
    paper algorithms' parts (keys ``…p``); claims about CTB-TT or AdaP-TT* are left out there."""
    cells = [("ttucb", "i", np.inf, 1000.0), ("ttucb_published", "i", np.inf, 5000.0)]
    for e in (1.0, 10.0):
        cells += [("adap_tt", "i", e, 3000.0), ("dp_se", "i", e, 1e4)]
        cells += [("adap_tt_published", "i", e, 1.5e4), ("dp_se_published", "i", e, 1e4)]
    claims = {c.key: c for c in markdown_report.evaluate(_context(cells))}
    assert claims["G6"].verdict == "holds" and claims["G6p"].verdict == "fails"
    assert claims["G1p"].verdict == "holds"  # 15 000 ≤ 4 × TTUCB (published) = 20 000
    assert "AdaP-TT (published code)" in claims["G6p"].statement
    assert "AdaP-TT*" not in claims["G6p"].statement
    assert not {"L1p", "L2p", "G2p", "G5p"} & set(claims)
    without = {
        c.key for c in markdown_report.evaluate(_context(cells[:1] + cells[2::4] + cells[3::4]))
    }
    assert not any(key.endswith("p") for key in without)


def test_slope_claims_need_three_epsilons_per_panel():
    """A slope claim fits a line per (instance, δ) only where three uncensored ε lie in its
    regime; with fewer (a sweep over δ at one ε, say) it names no cell instead of one
    "slope n/a" per panel, and says why."""
    from experiments.analysis.verdicts import NO_SLOPE

    cells = [(alg, "i", e, 100.0 / e) for alg in ("adap_tt", "adap_tt_star") for e in (0.01, 0.03)]
    cells += [("ctb_tt", "i", 0.1, 1e5)]
    claims = {c.key: c for c in markdown_report.evaluate(_context(cells))}
    for key in ("L2", "G3", "G4"):
        assert claims[key].verdict == "inconclusive"
        assert claims[key].details == ()
        assert claims[key].evidence == NO_SLOPE


def test_step_ablation_variants_remove_only_their_part():
    """`experiments.bench.ablation`: the floor pulls arm n mod K and never stops; each other
    variant is TTUCB with the one component it names replaced."""
    import jax

    from experiments.bench import ablation

    algs = ablation.variants()
    assert tuple(algs) == ablation.VARIANTS
    full = algs["full"]
    params = full.params(delta=0.01)
    state = full.init(jax.random.key(0), params, num_arms=5)
    key = jax.random.key(1)
    inst = jaxbai.bernoulli([0.9, 0.1, 0.5, 0.5, 0.3])
    for n in range(12):
        assert int(algs["floor"].select(state, params)) == n % 5
        state = algs["floor"].step(jax.random.fold_in(key, n), state, inst, params)
        assert not bool(algs["floor"].stopping(state, params)[0])
    assert state.counts.tolist() == [3, 3, 2, 2, 2]
    names = [f.name for f in dataclasses.fields(full)]
    changed = {
        name: [f for f in names if getattr(alg, f) != getattr(full, f)]
        for name, alg in algs.items()
        if name not in ("floor", "floor + stopping")
    }
    assert changed == {
        "full": [],
        "no stopping": ["stopping_rule"],
        "fixed challenger": ["challenger"],
        "no bonus": ["bonus"],
        "lowest-index ties": ["ties"],
    }
    assert algs["floor + stopping"].stopping_rule is full.stopping_rule


def _dp_tt_cells(dp_tt_scale: float, free_tau: float) -> list[tuple]:
    """DP-TT beside the other ε-global-DP algorithms and EB-TCI on "0.9 0.5" (privacy is free
    from ε = log 9 ≈ 2.2): τ ∝ 1/ε at ε ≤ 0.1, then ``free_tau`` at ε ≥ 3."""
    deep, free = (0.001, 0.01, 0.1), (3.0, 10.0, 100.0)
    cells = [("eb_tci", "i", np.inf, 1000.0)]
    cells += [("dp_tt", "i", e, dp_tt_scale / e) for e in deep]
    cells += [("dp_tt", "i", e, free_tau) for e in free]
    for alg in ("adap_tt", "adap_tt_star", "dp_se"):
        cells += [(alg, "i", e, 100.0 / e) for e in deep]
        cells += [(alg, "i", e, 5000.0) for e in free]
    return cells


def test_dp_tt_claims_hold_where_the_2025_paper_says():
    v = _verdicts(_context(_dp_tt_cells(dp_tt_scale=10.0, free_tau=1500.0)))
    assert v["J1"] == v["J2"] == v["J3"] == v["J4"] == "holds"


def test_dp_tt_claims_fail_where_the_results_contradict_it():
    """DP-TT slower than AdaP-TT at high privacy (J1), τ ∝ ε^-1/2 there (J3) and 3 × EB-TCI
    where privacy is free (J4); without DP-TT in the sweep there is no J-claim at all."""
    cells = _dp_tt_cells(dp_tt_scale=10.0, free_tau=3000.0)
    cells = [c for c in cells if c[0] != "dp_tt" or c[2] > 0.2]
    cells += [("dp_tt", "i", e, 1000.0 / math.sqrt(e)) for e in (0.001, 0.01, 0.1)]
    v = _verdicts(_context(cells))
    assert v["J1"] == v["J3"] == v["J4"] == "fails" and v["J2"] == "holds"
    without = _verdicts(_context([c for c in cells if c[0] != "dp_tt"]))
    assert not {"J1", "J2", "J3", "J4"} & set(without)


def test_a_claim_across_privacy_measures_is_not_applicable():
    """An algorithm in AdaP-TT*'s part stating ε²/2-zCDP: the claims that put it on one ε axis
    with an ε-DP algorithm (G2, G5, G6) are not applicable and say why; the report lists
    every algorithm's claim."""
    small = [0.001, 0.003, 0.01, 0.03]
    cells = [(alg, "i", e, 100.0 / e) for alg in ("adap_tt", "adap_tt_star") for e in small]
    cells += [("dp_se", "i", e, 1e6) for e in small]
    ctx = _context(cells)
    zcdp = "ρ-zCDP (global, ρ = ε²/2) ⇒ (ρ + 2√(ρ log(1/δ)), δ)-DP"
    ctx.summary["privacy_measure"][ctx.summary["algorithm"] == "adap_tt_star"] = zcdp
    claims = {c.key: c for c in markdown_report.evaluate(ctx)}
    for key in ("G2", "G5", "G6"):
        assert claims[key].verdict == "not applicable", key
        assert claims[key].evidence.endswith(f"ε-DP (global, pure); {zcdp}")
    assert _verdicts(_context(cells))["G5"] != "not applicable"
    report = markdown_report.render(list(claims.values()), ctx, "runs.csv")
    assert f"| adap_tt_star | {zcdp} |" in report and "| dp_se | ε-DP (global, pure) |" in report


def test_dp_lower_bound_is_t_star_eps_log_one_over_three_delta():
    means, eps = np.array([0.9, 0.5]), np.array([0.1, 1.0, 0.1])
    bound = overlay.dp_lower_bound(means, eps, 0.01)
    times, _ = jaxbai.theory.t_star_dp(means, np.array([0.1, 1.0]))
    want = np.asarray(times, np.float64)[[0, 1, 0]] * math.log(1 / 0.03)
    np.testing.assert_allclose(bound, want, rtol=1e-6)
    assert bound[0] > bound[1]  # more privacy, more samples
