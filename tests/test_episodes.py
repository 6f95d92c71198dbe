"""Per-episode simulation (docs/semantics.md §25): exact bookkeeping, same law, engine option.

The per-episode path draws each ended episode's rewards as one sum per arm; it must make the
updates the per-sample path makes (checked exactly on fixed rewards) and give the same law of
(τ, â, C) (two-sample tests on independent seeds, sized to detect a 3 % shift of E[τ]).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from _algorithms import EPISODIC
from _grids import assert_same
from _laws import same_discrete, same_tau

import jaxbai
from jaxbai import engine
from jaxbai.toptwo import PerEpisode


def _params(alg, epsilon=1.0, delta=0.01):
    if alg.info.takes_epsilon:
        return alg.params(epsilon=epsilon, delta=delta)
    return alg.params(delta=delta)


@pytest.mark.parametrize("name", EPISODIC)
def test_ended_is_the_set_the_pull_that_ends_an_episode_closes(name):
    """Along a per-sample trajectory, `ended` after counting a pull (the per-episode view) is
    the set of arms whose episodes the observed pull closes, and is empty once it is observed."""
    alg = jaxbai.ALGORITHMS[name]()
    inst = jaxbai.bernoulli([0.6, 0.5, 0.45])  # no run stops within 600 samples
    params = _params(alg)

    def one(state, key):
        counted, _ = alg.planned_pull(state, params)
        stepped = alg.step(key, state, inst, params)
        due = stepped.estimate.phases > state.estimate.phases
        ended = alg.estimator.ended
        out = (
            due,
            ended(counted.estimate, counted.counts),
            ended(stepped.estimate, stepped.counts),
        )
        return stepped, out

    keys = jax.random.split(jax.random.key(1), 600)
    state = alg.init(jax.random.key(0), params, 3)
    final, (due, pending, after) = jax.jit(lambda s: jax.lax.scan(one, s, keys))(state)
    assert not bool(final.stopped)
    np.testing.assert_array_equal(np.asarray(due), np.asarray(pending))
    assert not np.asarray(after).any()
    assert int(np.asarray(due).any(axis=1).sum()) == int(alg.rounds(final)) + (
        3 - 1 if alg.estimator.episodes == "global" else 0
    )


@pytest.mark.parametrize("name", EPISODIC)
def test_observe_sums_equals_observing_the_episode_one_reward_at_a_time(name):
    """From a mid-run state, counting the planned pulls and folding in their reward sums gives
    the state of observing the same rewards one by one (same noise uniform and key)."""
    alg = jaxbai.ALGORITHMS[name]()
    per_episode = alg.per_episode()
    inst = jaxbai.bernoulli([0.7, 0.5, 0.3])
    params = _params(alg, epsilon=2.0)
    state = alg.init(jax.random.key(3), params, 3)
    for n in range(40):  # a few episodes in, per sample
        state = alg.step(jax.random.fold_in(jax.random.key(4), n), state, inst, params)
    arms, length = alg.plan(state, params, max_len=256)
    arms = np.asarray(arms)[: int(length)]
    rewards = (np.arange(len(arms)) % 3 == 0).astype(np.float32)  # a fixed reward table
    key = jax.random.key(5)
    u = jnp.float32(0.3)

    one_by_one = state
    for arm, z in zip(arms, rewards, strict=True):
        leader, chosen = alg.sampling_rule(one_by_one, params)
        assert int(chosen) == int(arm)
        one_by_one = alg.observe(u, key, alg.count(one_by_one, leader, chosen), chosen, z, params)

    counted = state
    for _ in range(len(arms)):
        counted = per_episode.planned_pull(counted, params, jnp.int32(10**6))
    frozen = per_episode.planned_pull(counted, params, jnp.int32(10**6))
    assert int(frozen.n) == int(counted.n) == int(state.n) + len(arms)  # waits for its sums
    due = alg.estimator.ended(counted.estimate, counted.counts)
    sums = np.zeros(3, np.float32)
    np.add.at(sums, arms, rewards)
    estimate = alg.estimator.observe_sums(
        u, key, counted.estimate, counted.counts, due, jnp.asarray(sums), params
    )
    settled = counted._replace(estimate=estimate)

    for field in ("n", "counts", "local_counts", "leader_counts"):
        np.testing.assert_array_equal(getattr(settled, field), getattr(one_by_one, field))
    for field in ("phase_start", "phases"):
        np.testing.assert_array_equal(
            getattr(settled.estimate, field), getattr(one_by_one.estimate, field)
        )
    np.testing.assert_allclose(settled.means, one_by_one.means, rtol=1e-6, atol=1e-7)


def _both_paths(alg, instances, epsilons, delta, runs, max_samples=10**9):
    """One grid per path, on independent seeds."""
    jobs = engine.grid_jobs(instances, epsilons, delta, runs)
    return [
        engine.run_grid(alg, jobs, seed=seed, max_samples=max_samples, draws=draws)
        for seed, draws in ((0, "per_sample"), (1, "per_episode"))
    ]


@pytest.mark.statistical
def test_per_episode_draws_have_the_per_sample_law():
    """AdaP-TT, three instances × two ε (δ = 0.01): τ (sized for a 3 % shift of E[τ]), â and C
    agree in law between the paths; plus a cell with errors (δ = 0.2) for â."""
    alg = jaxbai.adap_tt()
    instances = [jaxbai.bernoulli(m) for m in ((0.9, 0.5, 0.1), (0.9, 0.6, 0.3), (0.8, 0.5, 0.2))]
    runs = 10_000
    sample, episode = _both_paths(alg, instances, [1.0, 5.0], 0.01, runs)
    assert not (sample.censored.any() or episode.censored.any())
    for cell in range(6):
        part = slice(cell * runs, (cell + 1) * runs)
        same_tau(sample.tau[part], episode.tau[part], shift=0.03)
        same_discrete(sample.rounds[part], episode.rounds[part])
        same_discrete(sample.recommendation[part], episode.recommendation[part])
    sample, episode = _both_paths(alg, instances[1], [1.0], 0.2, runs)
    errors = [int((~res.correct).sum()) for res in (sample, episode)]
    assert min(errors) >= 100  # the cell is informative about â
    same_discrete(sample.recommendation, episode.recommendation)
    same_tau(sample.tau, episode.tau, shift=None)


@pytest.mark.statistical
@pytest.mark.parametrize(
    "name,inst,epsilon",
    [
        ("adap_tt_star_global", jaxbai.bernoulli((0.9, 0.5, 0.1)), 5.0),
        ("ttucb_dpa", jaxbai.gaussian((1.0, 0.0, -0.5), sigma=1.0), None),
        pytest.param(
            "adap_tt_star", jaxbai.bernoulli((0.9, 0.5, 0.1)), 5.0, marks=pytest.mark.slow
        ),
        pytest.param(
            "ttucb_dpa_global",
            jaxbai.gaussian((1.0, 0.0, -0.5), sigma=1.0),
            None,
            marks=pytest.mark.slow,
        ),
    ],
)
def test_per_episode_law_other_episodic_algorithms(name, inst, epsilon):
    """One global episode (K sums at once, heavy-tailed τ: censored at 5000, the censoring
    compared too) and Normal sums of Gaussian arms (DPA), in law. (AdaP-TT* per arm and DPA
    with one global episode: slow, outside CI.)"""
    alg = jaxbai.ALGORITHMS[name]()
    sample, episode = _both_paths(alg, inst, [epsilon or 1.0], 0.01, 4000, max_samples=5000)
    same_tau(sample.tau, episode.tau, shift=None)
    same_discrete(sample.censored, episode.censored)
    same_discrete(sample.rounds, episode.rounds)
    same_discrete(sample.recommendation, episode.recommendation)


def test_draws_option_chooses_and_validates():
    adap = jaxbai.adap_tt()
    bern = jaxbai.bernoulli([0.9, 0.5])
    assert isinstance(engine.with_draws(adap, bern, "auto"), PerEpisode)
    assert engine.with_draws(adap, bern, "per_sample") is adap
    assert engine.with_draws(jaxbai.ttucb(), bern, "auto") == jaxbai.ttucb()
    assert engine.with_draws(adap, jaxbai.beta([2.0, 1.0], [1.0, 2.0]), "auto") is adap
    table = jaxbai.reward_table(np.ones((8, 2)) * [1.0, 0.0])
    assert engine.with_draws(adap, table, "auto") is adap
    with pytest.raises(ValueError, match="ArmSums"):
        engine.with_draws(adap, jaxbai.beta([2.0, 1.0], [1.0, 2.0]), "per_episode")
    with pytest.raises(ValueError, match="fully sequential"):
        engine.with_draws(jaxbai.ttucb(), bern, "per_episode")
    with pytest.raises(ValueError, match="draws must be one of"):
        engine.with_draws(adap, bern, "per_arm")
    with pytest.raises(ValueError, match="pulls"):
        adap.per_episode(0)


@pytest.mark.integration
def test_per_episode_results_do_not_depend_on_pulls_lanes_or_baseline():
    """A job's result depends on its seed only: not on pulls per step, lanes, or run_vmap."""
    alg = jaxbai.adap_tt_star()
    jobs = engine.grid_jobs(jaxbai.bernoulli([0.9, 0.6, 0.3]), [2.0, 20.0], 0.05, 24)
    first = engine.run_grid(alg.per_episode(16), jobs, seed=7, lanes_per_device=4)
    for other in (
        engine.run_grid(alg, jobs, seed=7, lanes_per_device=16, chunk_steps=2048),
        engine.run_vmap(alg, jobs, seed=7),
    ):
        assert_same(first, other)
    assert (first.tau > 0).all() and not first.censored.any()


@pytest.mark.integration
def test_per_episode_budget_censors_at_max_samples():
    """Runs over budget end at exactly max_samples, censored, with every ended episode closed."""
    alg = jaxbai.adap_tt()
    inst = jaxbai.bernoulli([0.55, 0.5])
    jobs = engine.grid_jobs(inst, [0.5], 0.01, 16)
    res = engine.run_grid(alg, jobs, seed=0, max_samples=300, draws="per_episode")
    assert res.censored.all()
    np.testing.assert_array_equal(res.tau, 300)

    per_episode, params = alg.per_episode(), alg.params(epsilon=0.5, delta=0.01)
    budget = jnp.int32(300)

    def run(state):
        def body(s):
            return per_episode.budgeted_step(jax.random.key(2), s, inst, params, budget)

        return jax.lax.while_loop(lambda s: ~s.stopped & (s.n < budget), body, state)

    final = jax.jit(run)(alg.init(jax.random.key(1), params, 2))
    assert int(final.n) == 300 and int(final.counts.sum()) == 300 and not bool(final.stopped)
    assert not np.asarray(alg.estimator.ended(final.estimate, final.counts)).any()
    assert (np.asarray(final.counts) < 2 * np.asarray(final.estimate.phase_start)).all()
    assert int(alg.rounds(final)) == int(np.asarray(final.estimate.phases).sum()) >= 2
