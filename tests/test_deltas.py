"""Several δ per trajectory (docs/semantics.md §31): eligibility, exactness, layouts, laws."""

from __future__ import annotations

import dataclasses
import json

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from _grids import FIELDS, assert_same, run_with_devices, separate_runs_on_the_shared_stream
from _laws import same_discrete, same_tau

import jaxbai
from jaxbai import engine
from jaxbai.engine.prepare import with_draws
from jaxbai.toptwo import transportation_cost_challenger

pytestmark = pytest.mark.integration

INST = jaxbai.bernoulli([0.9, 0.6, 0.5])
DELTAS = [0.2, 0.05, 0.01]
SHARING = sorted(n for n, f in jaxbai.ALGORITHMS.items() if engine.shares_deltas(f(), INST))
"""Every registered algorithm whose sampling ignores δ."""


@pytest.fixture(autouse=True, scope="module")
def _release_compiled_programs():
    """This module compiles ~40 programs: free them when it ends (a long suite's process
    otherwise holds every executable it ever compiled)."""
    yield
    jax.clear_caches()


def jobs(runs: int = 8, deltas=DELTAS, epsilon=(0.5, 5.0)) -> engine.Jobs:
    return engine.grid_jobs(INST, list(epsilon), deltas, runs)


def draw_modes(name: str) -> list[str]:
    alg = jaxbai.ALGORITHMS[name]()
    episodic = with_draws(alg, INST, "auto") is not alg
    return ["per_sample", "per_episode"] if episodic else ["per_sample"]


CASES = [(name, draws) for name in SHARING for draws in draw_modes(name)]


@pytest.mark.parametrize(("name", "draws"), CASES)
def test_each_delta_is_the_separate_run_of_its_stream(name, draws):
    """Every δ's (τ, â, C, N) of a shared trajectory equals, bit for bit, a run of that δ
    alone driven by the same stream: the sampling rule ignores δ, so the runs coincide
    until each stops. (The law of a separate run does not depend on its key: this is the
    law equality, exactly.)"""
    base = jaxbai.ALGORITHMS[name]()
    alg = with_draws(base, INST, draws)
    grid = jobs(epsilon=(3.0,))
    res = engine.run_grid(base, grid, seed=3, draws=draws, share_deltas=True, lanes_per_device=8)
    assert res.shared_deltas
    tau, rec, stopped, rounds, counts = separate_runs_on_the_shared_stream(alg, grid, 3, 10**9)
    assert stopped.all() and not res.censored.any()
    np.testing.assert_array_equal(res.tau, tau)
    np.testing.assert_array_equal(res.recommendation, rec)
    np.testing.assert_array_equal(res.rounds, rounds)
    np.testing.assert_array_equal(res.counts, counts)
    # τ grows as δ shrinks along each trajectory (thresholds decrease in δ)
    per_cell = res.tau.reshape(len(DELTAS), -1)
    assert (np.diff(per_cell, axis=0) >= 0).all()


def test_censored_deltas_are_reported_censored():
    """A budget that cuts a trajectory leaves its unstopped δ censored with τ = the budget."""
    grid = jobs(runs=6, epsilon=(0.5,))
    res = engine.run_grid(jaxbai.ctb_tt(), grid, seed=1, share_deltas=True, max_samples=700)
    tau, rec, stopped, _, _ = separate_runs_on_the_shared_stream(jaxbai.ctb_tt(), grid, 1, 700)
    assert res.censored.any() and not res.censored.all()
    np.testing.assert_array_equal(res.censored, ~stopped)
    np.testing.assert_array_equal(res.tau, tau)
    np.testing.assert_array_equal(res.recommendation, np.where(stopped, rec, -1))
    assert (res.tau[res.censored] == 700).all()


def test_dp_se_and_delta_reading_components_run_each_delta_separately():
    """DP-SE's epochs depend on δ, and a challenger that reads δ makes a Top Two algorithm
    ineligible by itself: both run per δ, with the separate mode's numbers."""

    def threshold_reading_challenger(alg, state, leader, params):
        challenger = transportation_cost_challenger(alg, state, leader, params)
        other = (leader + 1) % state.counts.shape[0]
        return jnp.where(params.delta < 0.02, other, challenger)

    reading = dataclasses.replace(jaxbai.ttucb(), challenger=threshold_reading_challenger)
    assert engine.shares_deltas(jaxbai.ttucb(), INST)
    assert not engine.shares_deltas(reading, INST)
    assert not engine.shares_deltas(jaxbai.dp_se(), INST)
    grid = jobs(runs=4, epsilon=(5.0,))
    for alg in (jaxbai.dp_se(), reading):
        res = engine.run_grid(alg, grid, seed=2, share_deltas=True)
        assert not res.shared_deltas
        assert_same(res, engine.run_grid(alg, grid, seed=2))


def test_unknown_mode_is_refused():
    with pytest.raises(ValueError, match="share_deltas must be True or False"):
        engine.run_grid(jaxbai.ttucb(), jobs(runs=1), share_deltas="yes")


@pytest.mark.parametrize(("name", "draws"), [("ttucb", "per_sample"), ("adap_tt", "per_episode")])
def test_same_results_for_any_lanes_refill_chunks_and_grid(name, draws):
    """Lanes, refill period, chunk size, tail compaction and the baseline without refill give
    the same shared results; a δ's record does not depend on the other δ of its grid."""
    alg, grid = jaxbai.ALGORITHMS[name](), jobs()
    options = {"seed": 4, "draws": draws, "share_deltas": True}
    reference = engine.run_vmap(alg, grid, **options)
    for lanes, refill, chunk, shrink in [(4, 1, 700, np.inf), (64, 16, 256, 0.0)]:
        res = engine.run_grid(
            alg,
            grid,
            lanes_per_device=lanes,
            refill_every=refill,
            chunk_steps=chunk,
            shrink_after=shrink,
            **options,
        )
        assert_same(res, reference)
    alone = engine.run_grid(alg, jobs(deltas=[0.05, 0.001]), **options)
    middle, kept = reference.jobs.delta == np.float64(0.05), alone.jobs.delta == 0.05
    np.testing.assert_array_equal(reference.tau[middle], alone.tau[kept])
    np.testing.assert_array_equal(reference.counts[middle], alone.counts[kept])


@pytest.mark.parametrize(("draws", "chunk_steps"), [("per_sample", 1500), ("per_episode", 3072)])
def test_interrupt_and_resume(tmp_path, draws, chunk_steps):
    """Stop after one chunk, resume from the checkpoint: identical to an uninterrupted run;
    the samples counted are the resumed trajectories' (once each, not once per δ)."""
    alg, grid = jaxbai.adap_tt(), jobs()
    path = str(tmp_path / "grid.npz")
    options = {"seed": 2, "draws": draws, "share_deltas": True, "lanes_per_device": 8}
    whole = engine.run_grid(alg, grid, **options)
    engine.run_grid(alg, grid, chunk_steps=chunk_steps, checkpoint=path, max_chunks=1, **options)
    with np.load(path) as data:
        done = data["done"]
    assert 0 < done.sum() < len(grid)
    resumed = engine.run_grid(alg, grid, checkpoint=path, resume=True, **options)
    assert_same(resumed, whole)
    pending = ~done.reshape(2, len(DELTAS), -1).any(axis=1)
    longest = whole.tau.reshape(2, len(DELTAS), -1).max(axis=1)
    assert resumed.samples == longest[pending].sum()


def test_a_checkpoint_of_the_other_mode_is_refused(tmp_path):
    path = str(tmp_path / "grid.npz")
    grid = jobs(runs=2)
    engine.run_grid(jaxbai.ttucb(), grid, checkpoint=path)
    with pytest.raises(ValueError, match="different grid"):
        engine.run_grid(jaxbai.ttucb(), grid, checkpoint=path, resume=True, share_deltas=True)


SCRIPT = """
import json, sys, numpy as np, jaxbai
from jaxbai import engine
jobs = engine.grid_jobs(jaxbai.bernoulli([0.9, 0.6, 0.5]), [0.5, 5.0], [0.2, 0.05, 0.01], 6)
res = engine.run_grid(jaxbai.adap_tt(), jobs, seed=5, lanes_per_device=4, share_deltas=True)
json.dump({f: np.asarray(getattr(res, f)).tolist() for f in FIELDS}, sys.stdout)
""".replace("FIELDS", repr(FIELDS))


def test_same_results_on_one_and_four_devices():
    assert run_with_devices(SCRIPT, 1) == run_with_devices(SCRIPT, 4)


@pytest.mark.statistical
@pytest.mark.parametrize(("name", "draws"), [("ttucb", "per_sample"), ("adap_tt", "per_episode")])
def test_law_of_each_delta_equals_a_separate_run(name, draws):
    """Two-sample tests (Welch + KS on τ, χ² on â and C) of each δ's shared record against
    separate runs, with a power check: a 10 % shift of E[τ] would be detected."""
    alg = jaxbai.ALGORITHMS[name]()
    grid = engine.grid_jobs(INST, [1.0], [0.1, 0.001], 1500)
    shared = engine.run_grid(alg, grid, seed=11, draws=draws, share_deltas=True)
    separate = engine.run_grid(alg, grid, seed=12, draws=draws)
    for delta in (0.1, 0.001):
        cell = grid.delta == delta
        same_tau(shared.tau[cell], separate.tau[cell], shift=0.1)
        same_discrete(shared.recommendation[cell], separate.recommendation[cell])
        if name == "adap_tt":
            same_discrete(shared.rounds[cell], separate.rounds[cell])


# ----------------------------------------------------------------------------- bounds and sweeps
def test_practical_bound_is_the_smallest_fixed_point():
    """t = T·log((1 + log t)/δ) solved by bracketing (f < 0 at t = 1, one sign change)."""
    from scipy.optimize import brentq

    from jaxbai import theory, thresholds

    def excess(t: float, time: float, delta: float) -> float:
        return t - time * np.log((1 + np.log(t)) / delta)

    for time, delta in [(10.0, 0.01), (3.0e4, 1e-6), (250.0, 0.3)]:
        expected = brentq(excess, 1.0, 1e9, args=(time, delta), xtol=1e-9, rtol=1e-12)
        got = theory.practical_bound(time, delta, thresholds.heuristic_gaussian_threshold)
        assert abs(got - expected) <= 1e-5 * expected
        assert got > time * np.log(1 / (2.4 * delta))  # above the asymptotic lower bound
    with pytest.raises(ValueError, match="delta"):
        theory.practical_bound(10.0, 1.5, thresholds.heuristic_gaussian_threshold)
    with pytest.raises(ValueError, match="no fixed point"):
        theory.practical_bound(10.0, 0.01, lambda t, d: t)


def test_sweep_with_shared_deltas_writes_rows_figure_claim_and_mode(tmp_path):
    """``--share-deltas``: one row per (run, δ), the mode per algorithm in sweep.json (DP-SE
    runs each δ), the τ-against-log(1/δ) figure and the D1 claim."""
    from experiments.analysis import results
    from experiments.sweep import cli

    out = tmp_path / "d"
    argv = ["--preset", "deltas", "--instances", "mu2", "--algorithms", "ttucb", "dp_se",
            "--runs", "6", "--deltas", "0.1", "0.01", "0.001", "--quiet"]  # fmt: skip
    assert cli.main([*argv, "--out", str(out)]) == 0
    table = results.read_csv(str(out / "runs.csv"))
    assert len(table["tau"]) == 2 * 3 * 6
    sidecar = json.loads((out / "sweep.json").read_text())
    assert sidecar["config"]["share_deltas"] is True
    assert sidecar["engine"]["ttucb"]["shared_deltas"] is True
    assert sidecar["engine"]["dp_se"]["shared_deltas"] is False
    assert (out / "figures" / "tau_vs_log_delta.png").stat().st_size > 1000
    report = (out / "report.md").read_text()
    assert "| D1 |" in report and "ttucb/mu2 (asymptotic bound" in report
    assert cli.main([*argv, "--no-share-deltas", "--out", str(tmp_path / "e")]) == 0
    separate = json.loads((tmp_path / "e" / "sweep.json").read_text())
    assert separate["engine"]["ttucb"]["shared_deltas"] is False
