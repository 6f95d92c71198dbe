"""The protocols of `jaxbai.base` are the whole contract.

Every registered algorithm is rebuilt from components that have *only* the members their
protocols declare — its estimator (Top Two) narrowed to `Estimator` and the estimator
capabilities it has, then the algorithm narrowed to `Algorithm` and its capabilities, its
per-episode simulation to `Algorithm`, `Rounds` and `Budgeted` — and run through
`jaxbai.simulate` (both draw modes where episodic), `jaxbai.engine.run_grid`, `jaxbai.trial`
(ask/tell, and cohorts where episodic) and `experiments.sweep`; a trial must publish exactly
what the algorithm it narrows publishes.
"""

from __future__ import annotations

import csv
import dataclasses
import functools
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxbai
from experiments.sweep import cli
from jaxbai import base, engine
from jaxbai.toptwo import TopTwo
from jaxbai.trial import Trial

ESTIMATOR_CAPABILITIES = (base.ReleasingEstimator, base.EpisodicEstimator)
ALGORITHM_CAPABILITIES = (base.Rounds, base.Releasing, base.Episodic)
NAMES = list(jaxbai.ALGORITHMS)
INSTANCE = jaxbai.bernoulli([0.8, 0.5, 0.3])
RUNS, BUDGET = 4, 4000


def narrowed(component, protocols, **overrides):
    """An object whose public members are exactly those of ``protocols``: the component's own
    values and bound methods (``overrides`` replace some of them)."""
    members = set().union(*(base.protocol_members(p) for p in protocols))
    namespace = {}
    for name in members:
        value = overrides[name] if name in overrides else getattr(component, name)
        namespace[name] = staticmethod(value) if callable(value) else value
    obj = type(f"Only{type(component).__name__}", (), namespace)()
    assert {m for m in dir(obj) if not m.startswith("_")} == members
    return obj


def capabilities(component, candidates):
    return [p for p in candidates if isinstance(component, p)]


def narrowed_algorithm(alg, name):
    """``alg`` with its estimator (Top Two) and itself narrowed to their protocols."""
    if isinstance(alg, TopTwo):
        est = alg.estimator
        protocols = [base.Estimator, *capabilities(est, ESTIMATOR_CAPABILITIES)]
        alg = dataclasses.replace(alg, estimator=narrowed(est, protocols))
    overrides = {"name": name}
    if isinstance(alg, base.Episodic):
        simulation = narrowed(alg.per_episode(), [base.Algorithm, base.Rounds, base.Budgeted])
        overrides["per_episode"] = lambda: simulation
    return narrowed(alg, [base.Algorithm, *capabilities(alg, ALGORITHM_CAPABILITIES)], **overrides)


@functools.cache
def pair(name):
    """(the registered algorithm, its narrowed twin registered as ``only_<name>``)."""
    alg = jaxbai.ALGORITHMS[name]()
    twin = narrowed_algorithm(alg, f"only_{name}")
    jaxbai.register(twin.name, lambda: twin, f"narrowed {name}", replace=True)
    return alg, twin


@pytest.fixture(scope="module", autouse=True)
def _unregister():
    yield
    for name in NAMES:
        if f"only_{name}" in jaxbai.ALGORITHMS:
            jaxbai.unregister(f"only_{name}")
    pair.cache_clear(), simulated.cache_clear()
    jax.clear_caches()  # the twins' programs are needed by no other test


def _epsilon(alg):
    return 2.0 if alg.info.takes_epsilon else None


def test_narrowing_leaves_only_the_protocol_members():
    """The narrowed estimator of AdaP-TT lacks what its protocols do not declare."""
    _, twin = pair("adap_tt")
    assert not hasattr(twin, "estimator") and not hasattr(twin, "sampling_rule")
    assert isinstance(twin, base.Episodic) and isinstance(twin, base.Releasing)
    assert not isinstance(pair("ttucb")[1], base.Episodic)
    assert not isinstance(pair("dp_se")[1], base.Episodic)


def _draws(alg):
    return ["per_sample", "per_episode"] if isinstance(alg, base.Episodic) else ["per_sample"]


@functools.cache
def simulated(name, draws):
    """`jaxbai.engine.run_grid` of the narrowed ``name`` on the test grid."""
    alg, twin = pair(name)
    jobs = engine.grid_jobs(INSTANCE, np.asarray(_epsilon(alg) or np.inf), 0.1, RUNS)
    return engine.run_grid(twin, jobs, seed=3, max_samples=BUDGET, draws=draws)


@pytest.mark.integration
@pytest.mark.parametrize("name", NAMES)
def test_narrowed_algorithm_simulates(name):
    """`simulate` and `run_grid` run it in every draw mode it has, with the same results, and
    report rounds exactly when it counts them."""
    alg, twin = pair(name)
    for draws in _draws(alg):
        options = {"seed": 3, "max_samples": BUDGET, "draws": draws}
        got = jaxbai.simulate(twin, INSTANCE, _epsilon(alg), 0.1, runs=RUNS, **options)
        grid = simulated(name, draws)
        for field in ("tau", "recommendation", "censored", "rounds", "counts"):
            np.testing.assert_array_equal(getattr(got, field), getattr(grid, field))
        assert (grid.tau > 0).all() and ((grid.recommendation == -1) == grid.censored).all()
        assert ((grid.rounds >= 0) == isinstance(alg, base.Rounds)).all()


def _trial_record(path, name, cohorts):
    """Publication of a short rehearsal of ``name`` (Bernoulli outcomes from a fixed stream)."""
    entry = jaxbai.ALGORITHMS[name]
    local = entry.info().participant_mechanism is not None
    rng = np.random.default_rng(0)
    with Trial.create(
        path,
        name,
        3,
        epsilon=2.0 if entry.info().takes_epsilon else None,
        delta=0.1,
        seed=1,
        noise="prng",
        outcomes="unit" if local else "binary",
    ) as trial:
        for _ in range(12):
            if trial.status().stopped:
                break
            batch = trial.next_batch() if cohorts else [(None, trial.next_arm())]
            outcomes = [(p, a, float(rng.random() < (0.8, 0.5, 0.3)[a])) for p, a in batch]
            for p, a, r in reversed(outcomes):
                trial.record(a, r, participant=p)
        record = trial.publish()
    # the twin is registered here, not by jaxbai: its record names this module as where it
    # comes from (the original's says null), the rest must be the same
    assert (record["plugin"] is None) == (name in jaxbai.registry.BUILT_IN_NAMES)
    return {k: v for k, v in record.items() if k not in ("algorithm", "plugin")}


@pytest.mark.integration
@pytest.mark.parametrize("name", NAMES)
def test_narrowed_algorithm_runs_a_trial_exactly_as_its_original(name, tmp_path):
    alg, twin = pair(name)
    for cohorts in [False, True] if isinstance(alg, base.Episodic) else [False]:
        got = _trial_record(tmp_path / f"twin{cohorts}.trial", twin.name, cohorts)
        want = _trial_record(tmp_path / f"alg{cohorts}.trial", name, cohorts)
        assert got == want and len(got["actions"]) > 3


@pytest.mark.integration
def test_narrowed_algorithms_sweep(tmp_path):
    """The sweep runs every narrowed algorithm (registered; from an experiment file) and writes
    the engine's results: the same jobs give the same τ as `run_grid` in its default draws."""
    twins = ", ".join(f'"{pair(name)[1].name}"' for name in NAMES)
    grid = tmp_path / "contract.toml"
    grid.write_text(
        'instances = [{name = "contract", means = [0.8, 0.5, 0.3]}]\n'
        f"algorithms = [{twins}]\n"
        f"epsilons = [2.0]\ndeltas = [0.1]\nruns = {RUNS}\nmax_samples = {BUDGET}\nseed = 3\n"
        '[plot]\nfigures = ["global"]\nformats = ["png"]\n'
    )
    argv = ["--config", str(grid), "--out", str(tmp_path / "out"), "--quiet"]
    assert cli.main(argv) == 0
    with open(tmp_path / "out" / "runs.csv") as f:
        rows = list(csv.DictReader(f))
    for name in NAMES:
        tau = [int(r["tau"]) for r in rows if r["algorithm"] == f"only_{name}"]
        want = simulated(name, _draws(pair(name)[0])[-1]).tau
        assert tau == want.tolist(), name


class DrawOnlyTable(NamedTuple):
    """A reward table that answers only `draw` and `sample_sum` (how the engine reads rewards):
    its `sample` is NaN, so a step that samples a random participant instead of reading the
    t-th participant's row never stops on it."""

    table: jax.Array
    unit_interval = True
    means = jaxbai.RewardTable.means
    draw = jaxbai.RewardTable.draw
    sample_sum = jaxbai.RewardTable.sample_sum

    def sample(self, key, arm):
        del key, arm
        return jnp.float32(jnp.nan)


class SamplesInsteadOfDrawing(NamedTuple):
    """What a step that calls ``inst.sample`` sees: every draw is a sample."""

    inner: jaxbai.RewardTable
    unit_interval = True

    @property
    def means(self):
        return self.inner.means

    def draw(self, u, key, arm, index):
        del u, index
        return self.inner.sample(key, arm)


TABLE = jaxbai.reward_table(
    (np.random.default_rng(7).random((BUDGET, 3)) < np.array([0.8, 0.5, 0.3])).astype(np.float32)
)


def _on_table(alg, inst, draws="per_sample"):
    jobs = engine.grid_jobs(inst, np.asarray(_epsilon(alg) or np.inf), 0.1, RUNS)
    return engine.run_grid(alg, jobs, seed=3, max_samples=BUDGET, draws=draws)


def _reads_rows(alg) -> bool:
    """Whether ``alg`` gives the same runs on `TABLE` and on its draw-only twin."""
    want, got = _on_table(alg, TABLE), _on_table(alg, DrawOnlyTable(TABLE.table))
    return all(
        np.array_equal(getattr(got, f), getattr(want, f))
        for f in ("tau", "recommendation", "censored", "counts")
    )


@pytest.mark.integration
@pytest.mark.parametrize("name", NAMES)
def test_every_step_reads_rewards_through_draw(name):
    """On a reward table the t-th pull reads row t: the same runs when `sample` is NaN."""
    alg = jaxbai.ALGORITHMS[name]()
    assert _reads_rows(alg)
    assert (_on_table(alg, TABLE).tau > 0).all()


@pytest.mark.integration
def test_a_step_that_samples_is_caught():
    """The check itself: a TTUCB whose step samples instead of drawing fails it."""
    ttucb = jaxbai.ttucb()

    def step(key, state, inst, params):
        return ttucb.step(key, state, SamplesInsteadOfDrawing(inst), params)

    planted = narrowed(ttucb, [base.Algorithm], name="sampling_ttucb", step=step)
    assert not _reads_rows(planted)


def test_a_component_without_a_protocol_member_is_refused():
    """An estimator missing a core member is named at construction, not deep in a trace."""
    est = narrowed(jaxbai.MLE(), [base.Estimator])
    partial = type("Partial", (), {"privacy": "none", "observe": est.observe})()
    with pytest.raises(ValueError, match="init, measure, participant_mechanism, unit_observations"):
        dataclasses.replace(jaxbai.ttucb(), estimator=partial)
    with pytest.raises(ValueError, match="EpisodicTopTwo"):
        dataclasses.replace(jaxbai.ttucb(), estimator=jaxbai.DAF())
