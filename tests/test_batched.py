"""Appendix H: TTUCB-DPA (Alg. 11), one global episode, rounds of adaptivity, plans.

Trajectory equality with the transcription of Alg. 11 and of the global episode, and plans
against `select`, are in `test_reference_trajectories.py`. Statistical tests use fixed seeds and
state their tolerance.
"""

from __future__ import annotations

import functools

import jax
import numpy as np
import pytest
import scipy.stats
from _algorithms import EPISODIC

import jaxbai


def assert_delta_correct(res: jaxbai.SimulationResult, delta: float) -> None:
    """No run censored, empirical error ≤ δ, and the one-sided 99% Clopper–Pearson lower bound
    of the error below δ (a δ-correct algorithm fails this second check with probability < 1%)."""
    runs = res.correct.size
    assert not res.censored.any()
    errors = int((~res.correct).sum())
    lower = scipy.stats.beta.ppf(0.01, errors, runs - errors + 1) if errors else 0.0
    assert errors / runs <= delta
    assert lower < delta


@pytest.mark.statistical
@pytest.mark.parametrize("threshold", ["heuristic", "theory"])
@pytest.mark.parametrize("means", [(0.7, 0.5, 0.3), (0.6, 0.5, 0.5, 0.4)], ids=["easy", "close"])
def test_ttucb_dpa_is_delta_correct(means, threshold):
    """1000 runs at δ = 0.05 (`assert_delta_correct`)."""
    delta, runs = 0.05, 1000
    res = jaxbai.simulate(
        jaxbai.ttucb_dpa(threshold=threshold),
        jaxbai.bernoulli(means),
        delta=delta,
        runs=runs,
        seed=3,
        max_samples=10**7,
    )
    assert_delta_correct(res, delta)


@pytest.mark.statistical
@pytest.mark.parametrize("threshold", ["heuristic", pytest.param("theory", marks=pytest.mark.slow)])
@pytest.mark.parametrize(
    "name",
    [
        "adap_tt_star_global",
        pytest.param("ttucb_dpa_global", marks=pytest.mark.slow),
        pytest.param("adap_tt_global", marks=pytest.mark.slow),
    ],
)
def test_global_episode_is_delta_correct(name, threshold):
    """One global episode (with the leader on global counts, docs/semantics.md §18) keeps the
    GLR stopping rule of its per-arm algorithm, so it must stay δ-correct: 1000 runs at
    δ = 0.1, ε = 1 (`assert_delta_correct`). (Theory thresholds: ~2 min each; the other two
    global variants: ~12 s each; slow.)"""
    delta, runs = 0.1, 1000
    res = jaxbai.simulate(
        jaxbai.ALGORITHMS[name](threshold=threshold),
        jaxbai.bernoulli((0.7, 0.5, 0.3)),
        epsilon=1.0,
        delta=delta,
        runs=runs,
        seed=11,
        max_samples=10**8,
    )
    assert_delta_correct(res, delta)


@pytest.mark.integration
@pytest.mark.parametrize("name", EPISODIC)
def test_rounds_never_exceed_the_possible_doublings(name):
    """k_a ≤ log₂ N_a + 1 per arm, so C ≤ K(log₂ τ + 1) with per-arm episodes; a global
    episode doubles every count, so C − 1 ≤ log₂(τ/K) (docs/semantics.md §20)."""
    num_arms = 3
    res = jaxbai.simulate(
        jaxbai.ALGORITHMS[name](),
        jaxbai.bernoulli((0.7, 0.5, 0.3)),
        epsilon=1.0,
        delta=0.1,
        runs=128,
        seed=4,
    )
    assert not res.censored.any()
    tau = res.tau.astype(np.float64)
    if name.endswith("_global"):
        assert (res.rounds >= 1).all()
        assert (res.rounds - 1 <= np.log2(tau / num_arms)).all()
    else:
        assert (res.rounds >= num_arms).all()
        assert (res.rounds <= num_arms * (np.log2(tau) + 1)).all()


@functools.partial(jax.jit, static_argnames=("alg", "steps"))
def advance(alg, inst, params, stream, state, steps):
    """``steps`` calls of `step` from ``state`` (one compilation per algorithm and count)."""

    def body(_, s):
        return alg.step(jax.random.fold_in(stream, s.n), s, inst, params)

    return jax.lax.fori_loop(0, steps, body, state)


def first_rewards_then_run(alg, inst, params, seed, max_steps):
    """One trajectory under `step`: (means after the K initial pulls, final state)."""
    num_arms = inst.means.shape[0]
    stream = jax.random.key(seed)
    state = alg.init(jax.random.key(seed + 1), params, num_arms)
    initial = advance(alg, inst, params, stream, state, num_arms)
    return initial.means, advance(alg, inst, params, stream, initial, max_steps)


@pytest.mark.parametrize("name", ["ttucb_dpa", "ttucb_dpa_global"])
def test_global_episode_stops_when_every_first_reward_ties(name):
    """Bernoulli arms whose first rewards all equal 1: the means tie exactly, yet the run stops
    (with one global episode a frozen tie would otherwise stall the episode forever)."""
    inst = jaxbai.bernoulli([1.0, 0.9, 0.9, 0.9])
    alg = jaxbai.ALGORITHMS[name]()
    params = alg.params(delta=0.05)
    tied = 0
    for seed in range(12):
        means, final = first_rewards_then_run(alg, inst, params, seed, 200_000)
        if not np.all(np.asarray(means) == 1.0):
            continue
        tied += 1
        assert bool(final.stopped), f"seed {seed}: every first reward tied and it never stopped"
        assert int(final.recommendation) == 0
    assert tied >= 4  # P(all first rewards are 1) = 0.9³ ≈ 0.73 per seed


def test_plan_rejects_dp_se():
    """DP-SE is not planned by episodes: it is not `Episodic` (no plan to get wrong), and the
    per-episode draws name that clearly."""
    alg = jaxbai.dp_se()
    assert not isinstance(alg, jaxbai.base.Episodic) and not hasattr(alg, "plan")
    with pytest.raises(ValueError, match="not episodic"):
        jaxbai.engine.with_draws(alg, jaxbai.bernoulli([0.9, 0.5]), "per_episode")
