"""Every path of the grid engine on a tiny grid, in the fast tier: lane refill, checkpoint
resume, per-episode draws and shared δ (test_engine.py, test_episodes.py and test_deltas.py,
marked integration, check the same properties on larger grids and more layouts).

One grid of AdaP-TT (2 arms; 2 ε × 2 δ × 2 runs per device, τ from 3 to 256) runs in pools of
2 lanes per device, refilled every step: each lane runs 4 jobs on average. The compiled
programs dominate the time (a per-episode one takes twice as long as a per-sample one), so
each is compiled once: the uninterrupted per-sample and per-episode grids are module fixtures,
and the other runs of their programs change only what does not recompile (the chunk size, the
budget, the checkpoint; a resumed grid's smaller job table recompiles where it rounds to
fewer `jaxbai.engine.lane_program.table_slots`).
"""

from __future__ import annotations

import jax
import numpy as np
import pytest
from _grids import assert_same, separate_runs_on_the_shared_stream

import jaxbai
from jaxbai import engine

ALG = jaxbai.adap_tt()
SEED = 5
LANES = 2
LAYOUT = {"seed": SEED, "lanes_per_device": LANES, "refill_every": 1, "shrink_after": np.inf}
"""Seed, lanes and refill period of every grid here (no tail compaction: it recompiles)."""


@pytest.fixture(scope="module")
def jobs() -> engine.Jobs:
    """The grid: 4 jobs per lane whatever the number of devices (JAX starts here, not when
    the module is collected)."""
    runs = 2 * jax.device_count()
    return engine.grid_jobs(jaxbai.bernoulli([0.9, 0.3]), [1.0, 10.0], [0.2, 0.01], runs)


@pytest.fixture(scope="module")
def per_sample(jobs) -> engine.GridResult:
    """The grid with a reward drawn per sample."""
    return engine.run_grid(ALG, jobs, draws="per_sample", **LAYOUT)


@pytest.fixture(scope="module")
def per_episode(jobs) -> engine.GridResult:
    """The grid with one reward sum drawn per arm and episode."""
    return engine.run_grid(ALG, jobs, draws="per_episode", **LAYOUT)


def assert_complete(res: engine.GridResult) -> None:
    """Every job stopped, with counts that sum to its τ, and every sample was counted once."""
    assert not res.censored.any() and (res.tau > 0).all()
    np.testing.assert_array_equal(res.counts.sum(axis=1), res.tau)
    assert res.samples == res.tau.sum()


def test_lane_refill_gives_each_job_its_result_alone(jobs, per_sample):
    """More jobs than lanes: the refilled lanes give every job the result of the vmap
    baseline, which runs each job in a lane of its own until the slowest stops."""
    assert len(jobs) > LANES * jax.device_count()
    assert_complete(per_sample)
    assert per_sample.lane_steps >= per_sample.samples
    assert_same(per_sample, engine.run_vmap(ALG, jobs, seed=SEED, draws="per_sample"))


def test_an_interrupted_grid_resumes_bit_for_bit(jobs, per_sample, tmp_path):
    """Stopped after one chunk of 200 steps and resumed from its checkpoint, the grid equals
    the uninterrupted one; the resumed call draws only the unfinished jobs' samples."""
    path = str(tmp_path / "grid.npz")
    partial = engine.run_grid(
        ALG, jobs, draws="per_sample", chunk_steps=200, checkpoint=path, max_chunks=1, **LAYOUT
    )
    with np.load(path) as data:
        done = data["done"]
    assert 0 < done.sum() < len(jobs)
    np.testing.assert_array_equal(partial.tau[done], per_sample.tau[done])
    resumed = engine.run_grid(ALG, jobs, draws="per_sample", checkpoint=path, resume=True, **LAYOUT)
    assert_same(resumed, per_sample)
    assert resumed.samples == per_sample.tau[~done].sum()


def test_per_episode_draws_do_not_depend_on_chunks(jobs, per_episode):
    """Per-episode draws close every episode (at least phase 0 of both arms) and give the
    same results when the grid returns to the host after every engine step (a chunk of 16
    samples is one step of up to 128 pulls)."""
    assert_complete(per_episode)
    assert (per_episode.rounds >= 2).all()
    chunked = engine.run_grid(ALG, jobs, draws="per_episode", chunk_steps=16, **LAYOUT)
    assert_same(chunked, per_episode)


def test_a_budget_cuts_only_the_runs_that_reach_it(jobs, per_episode):
    """Under a budget of the median τ, the runs that stopped below it are unchanged and the
    others are censored with exactly the budget drawn (neither path tests stopping at
    n = max_samples, docs/semantics.md §25)."""
    budget = int(np.median(per_episode.tau))
    cut = engine.run_grid(ALG, jobs, draws="per_episode", max_samples=budget, **LAYOUT)
    below = per_episode.tau < budget
    assert 0 < below.sum() < len(jobs)
    np.testing.assert_array_equal(cut.censored, ~below)
    np.testing.assert_array_equal(cut.tau[~below], budget)
    np.testing.assert_array_equal(cut.recommendation[~below], -1)
    for field in ("tau", "recommendation", "rounds", "counts"):
        np.testing.assert_array_equal(
            getattr(cut, field)[below], getattr(per_episode, field)[below], err_msg=field
        )


def test_each_shared_delta_is_its_delta_run_alone(jobs):
    """With ``share_deltas=True`` one trajectory per (ε, run) serves both δ: each δ's
    (τ, â, C, N) equals, bit for bit, that δ run alone on the trajectory's stream, and τ does
    not shrink with δ."""
    res = engine.run_grid(ALG, jobs, draws="per_sample", share_deltas=True, **LAYOUT)
    assert res.shared_deltas
    tau, rec, stopped, rounds, counts = separate_runs_on_the_shared_stream(ALG, jobs, SEED, 10**9)
    assert stopped.all() and not res.censored.any()
    np.testing.assert_array_equal(res.tau, tau)
    np.testing.assert_array_equal(res.recommendation, rec)
    np.testing.assert_array_equal(res.rounds, rounds)
    np.testing.assert_array_equal(res.counts, counts)
    by_delta = res.tau.reshape(2, 2, -1)  # (ε, δ, run), δ = 0.2 then 0.01
    assert (by_delta[:, 1] >= by_delta[:, 0]).all()


def test_a_smaller_grid_can_compile_the_larger_grids_program(jobs, per_sample):
    """Job tables are padded to `table_slots`: the ε = 10 half of the grid with ``min_slots``
    of the whole grid's jobs per device runs the program the whole grid compiled (what the
    sweep's ``--plan`` pilot does), with that half's results; without it, its smaller table
    compiles a program of its own."""
    from jaxbai.engine import lane_program

    half = jobs.epsilon == 10.0
    sub = engine.grid_jobs(jaxbai.bernoulli([0.9, 0.3]), [10.0], [0.2, 0.01], len(jobs) // 4)
    per_device = -(-len(jobs) // jax.device_count())
    assert lane_program.table_slots(per_device) > lane_program.table_slots(per_device // 2)
    whole = engine.run_grid(ALG, jobs, draws="per_sample", **LAYOUT)  # its program is loaded
    assert_same(whole, per_sample)  # (a test before this one may have emptied JAX's caches)
    compiled = lane_program.advance._cache_size()
    shared = engine.run_grid(ALG, sub, draws="per_sample", min_slots=per_device, **LAYOUT)
    assert lane_program.advance._cache_size() == compiled
    np.testing.assert_array_equal(shared.tau, per_sample.tau[half])
    np.testing.assert_array_equal(shared.counts, per_sample.counts[half])
    alone = engine.run_grid(ALG, sub, draws="per_sample", **LAYOUT)
    assert lane_program.advance._cache_size() == compiled + 1
    assert_same(alone, shared)


def test_a_simulation_result_is_a_grid_results_outcomes_in_its_shape():
    """`simulate`'s result is built from the engine's (`SimulationResult.of`): the outcome fields
    lead both types, and each run's outcome is its job's, in (ε, δ, run) order."""
    assert engine.GridResult._fields[:6] == jaxbai.SimulationResult._fields[:6] == engine.OUTCOMES
    inst = jaxbai.bernoulli([0.8, 0.4, 0.3])
    got = jaxbai.simulate(jaxbai.ctb_tt(), inst, [0.5, 2.0], [0.1, 0.05, 0.01], runs=3, seed=4)
    grid = engine.run_grid(
        jaxbai.ctb_tt(), engine.grid_jobs(inst, [0.5, 2.0], [0.1, 0.05, 0.01], 3), seed=4
    )
    for field in engine.OUTCOMES:
        want = getattr(grid, field)
        np.testing.assert_array_equal(getattr(got, field), want.reshape((2, 3, 3, *want.shape[1:])))
    np.testing.assert_array_equal(got.epsilon[:, 0, 0], [0.5, 2.0])
    np.testing.assert_array_equal(got.delta[0, :, 0], [0.1, 0.05, 0.01])
