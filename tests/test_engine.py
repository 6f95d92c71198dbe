"""The grid engine: determinism across layouts, resume, checkpoints, fast paths, refill."""

from __future__ import annotations

import os

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import scipy.stats
from _grids import FIELDS, assert_same, run_with_devices

import jaxbai
from jaxbai import engine

pytestmark = pytest.mark.integration

INST = jaxbai.bernoulli([0.9, 0.6, 0.5])


def small_jobs(runs: int = 12) -> engine.Jobs:
    """A grid with very different stopping times across cells."""
    return engine.grid_jobs(INST, [0.3, 3.0, 30.0], 0.1, runs)


@pytest.mark.parametrize(
    "name", ["ttucb", "dp_se", pytest.param("adap_tt_star", marks=pytest.mark.slow)]
)  # per-episode AdaP-TT*: tests/test_episodes.py checks lanes and pulls
def test_same_results_for_any_lanes_refill_and_chunks(name):
    """Per-job results do not depend on lanes, refill period, chunk size or tail compaction
    (the second layout shrinks its pool 64 → 16 → 4 lanes as jobs finish), and equal the plain
    vmap-until-all-stop baseline (same keys, same step)."""
    alg, jobs = jaxbai.ALGORITHMS[name](), small_jobs()
    reference = engine.run_vmap(alg, jobs, seed=5)
    for lanes, refill, chunk, shrink in [(4, 1, 7, np.inf), (64, 16, 256, 0.0)]:
        res = engine.run_grid(
            alg,
            jobs,
            seed=5,
            lanes_per_device=lanes,
            refill_every=refill,
            chunk_steps=chunk,
            shrink_after=shrink,
        )
        assert_same(res, reference)
    assert not reference.censored.any()


def test_job_result_does_not_depend_on_the_rest_of_the_grid():
    """A job's key depends on (seed, run, ε, δ) only: the ε = 3 cell alone equals its slice."""
    alg = jaxbai.adap_tt()
    full = engine.run_grid(alg, small_jobs(), seed=1, lanes_per_device=16)
    alone = engine.run_grid(
        alg, engine.grid_jobs(INST, [3.0], 0.1, 12), seed=1, lanes_per_device=16
    )
    cell = full.jobs.epsilon == 3.0
    np.testing.assert_array_equal(full.tau[cell], alone.tau)


SCRIPT = """
import json, sys, numpy as np, jax, jaxbai
from jaxbai import engine
jobs = engine.grid_jobs(jaxbai.bernoulli([0.9, 0.6, 0.5]), [0.3, 3.0, 30.0], 0.1, 12)
out = {"devices": len(jax.devices())}
for name in ("adap_tt_star", "dp_se"):
    res = engine.run_grid(jaxbai.ALGORITHMS[name](), jobs, seed=5, lanes_per_device=8)
    out[name] = {f: np.asarray(getattr(res, f)).tolist() for f in FIELDS}
json.dump(out, sys.stdout)
""".replace("FIELDS", repr(FIELDS))


def test_same_results_on_one_and_four_devices():
    """Sharding jobs over 4 host devices changes nothing, bit for bit."""
    one, four = run_with_devices(SCRIPT, 1), run_with_devices(SCRIPT, 4)
    assert (one["devices"], four["devices"]) == (1, 4)
    assert one["adap_tt_star"] == four["adap_tt_star"]
    assert one["dp_se"] == four["dp_se"]


@pytest.mark.parametrize(("draws", "chunk_steps"), [("per_sample", 1500), ("per_episode", 5120)])
def test_interrupt_and_resume(tmp_path, draws, chunk_steps):
    """Stop after one chunk, resume from the checkpoint: identical to an uninterrupted run.

    (A per-episode step ends at most one episode of each lane: its chunks need more samples.)
    """
    alg = jaxbai.adap_tt().per_episode() if draws == "per_episode" else jaxbai.adap_tt()
    jobs = small_jobs()
    path = str(tmp_path / "grid.npz")
    uninterrupted = engine.run_grid(alg, jobs, seed=2, lanes_per_device=8, draws=draws)
    partial = engine.run_grid(
        alg,
        jobs,
        seed=2,
        lanes_per_device=8,
        chunk_steps=chunk_steps,
        checkpoint=path,
        max_chunks=1,
        draws=draws,
    )
    with np.load(path) as data:
        done = data["done"]
    assert 0 < done.sum() < len(jobs)
    np.testing.assert_array_equal(partial.tau[done], uninterrupted.tau[done])
    resumed = engine.run_grid(
        alg, jobs, seed=2, lanes_per_device=16, checkpoint=path, resume=True, draws=draws
    )
    assert_same(resumed, uninterrupted)
    assert resumed.samples == uninterrupted.tau[~done].sum()


def test_checkpoint_survives_a_crash_mid_write(tmp_path, monkeypatch):
    """A truncated temporary file is ignored; a failed write leaves the last checkpoint intact."""
    alg, jobs = jaxbai.adap_tt(), small_jobs(4)
    path = str(tmp_path / "grid.npz")
    first = engine.run_grid(alg, jobs, seed=3, checkpoint=path)
    with open(path + ".tmp", "wb") as f:
        f.write(b"PK\x03\x04 truncated")

    def crash(*args, **kwargs):
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", crash)
    with pytest.raises(OSError):
        engine.write_checkpoint(path, "anything", {"done": np.zeros(3, bool)})
    monkeypatch.undo()
    resumed = engine.run_grid(alg, jobs, seed=3, checkpoint=path, resume=True)
    assert_same(resumed, first)
    assert resumed.lane_steps == 0


def test_checkpoint_of_another_grid_is_refused_naming_what_changed(tmp_path):
    """Resuming with a different seed, budget, algorithm option or ε is an error, not a
    silent mix, and the message names exactly what changed; a fingerprint without named parts
    (an older jaxbai's) is refused as an older jaxbai's, to be rerun without resuming."""
    from jaxbai.engine import _checkpoint

    path = str(tmp_path / "grid.npz")
    jobs = small_jobs(2)
    engine.run_grid(jaxbai.adap_tt(), jobs, seed=0, checkpoint=path, max_samples=10**5)
    other_eps = engine.grid_jobs(INST, [0.3, 3.0, 31.0], 0.1, 2)
    cases = [
        ((jaxbai.adap_tt(), jobs, 1, 10**5), r"\(the seed changed\)"),
        ((jaxbai.adap_tt(), jobs, 0, 10**6), r"\(the sample budget changed\)"),
        ((jaxbai.adap_tt("theory"), jobs, 0, 10**5), r"\(the algorithm, its options or its "),
        ((jaxbai.adap_tt(), other_eps, 0, 10**5), r"\(the jobs \(instances, ε, δ, runs\) changed"),
        ((jaxbai.adap_tt(), jobs, 2, 10**6), r"\(the seed, the sample budget changed"),
    ]
    for (alg, grid, seed, budget), message in cases:
        with pytest.raises(ValueError, match=message):
            engine.run_grid(alg, grid, seed=seed, checkpoint=path, resume=True, max_samples=budget)
    with np.load(path) as data:
        fingerprint = str(data["fingerprint"])
    assert _checkpoint.fingerprint_changes(fingerprint, fingerprint) == []
    results = engine.read_checkpoint(path, fingerprint, len(jobs), 3)
    engine.write_checkpoint(path, "9f86d081884c7d65", results)  # a version-2 fingerprint
    with pytest.raises(ValueError, match=r"written by an older jaxbai .* rerun without resuming"):
        engine.read_checkpoint(path, fingerprint, len(jobs), 3)


def test_missing_gpu_is_an_error():
    """``device="gpu"`` without a GPU raises, never falls back to the CPU silently."""
    if any(d.platform == "gpu" for d in jax.devices()):
        pytest.skip("a GPU is present")
    with pytest.raises(ValueError, match="gpu"):
        engine.run_grid(jaxbai.ttucb(), small_jobs(1), device="gpu")


def dpse_sample_by_sample(runs: int, seed: int, epsilon: float, delta: float) -> np.ndarray:
    """τ of DP-SE driven one sample at a time through ask/tell (no Binomial fast path)."""
    alg = jaxbai.dp_se()
    params = alg.params(epsilon=epsilon, delta=delta)

    def one(key):
        def body(carry):
            state, key = carry
            key, k_reward, k_update = jax.random.split(key, 3)
            arm = alg.select(state, params)
            reward = INST.sample(k_reward, arm)
            return alg.update(k_update, state, arm, reward, params), key

        state = alg.init(key, params, 3)
        final, _ = jax.lax.while_loop(lambda c: ~alg.stopping(c[0], params)[0], body, (state, key))
        return final.n

    keys = jax.random.split(jax.random.key(seed), runs)
    return np.asarray(jax.jit(jax.vmap(one))(keys))


def test_dpse_epoch_fast_path_matches_sample_by_sample():
    """DP-SE's `step` draws each epoch's sums as one Binomial per arm; τ has the same law as
    pulling sample by sample. τ takes few values (sums of epoch lengths), so we compare their
    frequencies with a χ² test of homogeneity (300 runs each, p > 1e-3); a fast path that
    dropped or doubled an epoch shifts τ by ≥ one epoch and is detected with power ≈ 1."""
    fast = jaxbai.simulate(jaxbai.dp_se(), INST, epsilon=5.0, delta=0.1, runs=300, seed=4).tau
    slow = dpse_sample_by_sample(300, seed=9, epsilon=5.0, delta=0.1)
    values = np.union1d(fast, slow)
    table = np.array([[np.sum(fast == v) for v in values], [np.sum(slow == v) for v in values]])
    table = table[:, table.sum(axis=0) >= 5]
    assert table.shape[1] >= 1
    if table.shape[1] > 1:
        assert scipy.stats.chi2_contingency(table).pvalue > 1e-3


def test_every_job_appears_exactly_once():
    """With more jobs than lanes and mixed lengths, every job finishes and is written once."""
    jobs = engine.grid_jobs(INST, [0.2, 20.0], 0.1, 40)
    res = engine.run_grid(jaxbai.ttucb(), jobs, seed=0, lanes_per_device=8, refill_every=2)
    assert (res.tau > 0).all() and not res.censored.any()
    assert res.samples == res.tau.sum()
    assert res.lane_steps >= res.samples


def test_censoring_at_max_samples():
    """Runs that reach ``max_samples`` are censored, with recommendation −1 and τ = budget."""
    res = jaxbai.simulate(jaxbai.adap_tt(), INST, epsilon=0.01, delta=0.01, runs=8, max_samples=500)
    assert res.censored.all()
    assert (res.recommendation == -1).all() and (res.tau == 500).all()
    assert not res.correct.any()


def test_instances_of_a_grid_must_match():
    """Grids mix instances of one type and K only."""
    with pytest.raises(ValueError, match="number of arms"):
        engine.grid_jobs([INST, jaxbai.bernoulli([0.9, 0.1])], 1.0)
    with pytest.raises(ValueError, match="same type"):
        engine.grid_jobs([INST, jaxbai.gaussian([0.9, 0.1, 0.0])], 1.0)
    assert jnp.asarray(engine.grid_jobs([INST, INST], 1.0).instance.means).shape == (2, 3)


def test_fold_in_step_is_jax_fold_in_bit_for_bit():
    """Step n's key, computed by the unrolled `engine.fold_in_step`, equals
    ``jax.random.fold_in`` on random streams and counts, 0 and 2³¹ − 1 included."""
    streams = jax.random.key_data(jax.random.split(jax.random.key(3, impl="threefry2x32"), 256))
    rng = np.random.default_rng(0)
    n = jnp.asarray(np.r_[0, 1, 2**31 - 1, rng.integers(0, 2**31 - 1, 253)], jnp.int32)

    def reference(stream, count):
        key = jax.random.wrap_key_data(stream, impl="threefry2x32")
        return jax.random.key_data(jax.random.fold_in(key, count))

    expected = jax.vmap(reference)(streams, n)
    np.testing.assert_array_equal(jax.jit(engine.fold_in_step)(streams, n), expected)


PLUGIN_STOP = """
import jaxbai
from jaxbai.toptwo.components import glr_stopping


def capped(alg, state, params):  # the plugin's stopping rule: GLR, or {cap} samples
    stop, best = glr_stopping(alg, state, params)
    return stop | (state.n >= {cap}), best
"""


def test_a_changed_plugin_or_jaxbai_version_refuses_the_resume(tmp_path, monkeypatch):
    """The fingerprint recorded callables by name only, so a plugin whose stopping cap changed
    from 30 to 10⁹ resumed the old τ = 30; it now holds the plugin module's source hash and
    jaxbai's version."""
    import dataclasses
    import importlib
    import sys

    from jaxbai.engine import _checkpoint

    monkeypatch.syspath_prepend(str(tmp_path))
    module = tmp_path / "capped_stop_plugin.py"
    module.write_text(PLUGIN_STOP.replace("{cap}", "30"))
    plugin = importlib.import_module("capped_stop_plugin")
    monkeypatch.setitem(sys.modules, "capped_stop_plugin", plugin)

    def alg():
        return dataclasses.replace(jaxbai.ttucb(), stopping_rule=plugin.capped)

    jobs, path = small_jobs(2), str(tmp_path / "grid.npz")
    first = engine.run_grid(alg(), jobs, seed=0, checkpoint=path)
    assert first.tau.max() <= 30  # the cap is the plugin's
    again = engine.run_grid(alg(), jobs, seed=0, checkpoint=path, resume=True)
    assert_same(again, first)  # unchanged code resumes
    monkeypatch.setattr(_checkpoint, "__version__", "999")
    with pytest.raises(ValueError, match=r"\(jaxbai's version changed\)"):
        engine.run_grid(alg(), jobs, seed=0, checkpoint=path, resume=True)
    monkeypatch.undo()
    monkeypatch.syspath_prepend(str(tmp_path))
    module.write_text(PLUGIN_STOP.replace("{cap}", "10**9"))
    plugin = importlib.reload(plugin)
    with pytest.raises(
        ValueError, match=r"\(the algorithm, its options or its plugin code changed"
    ):
        engine.run_grid(alg(), jobs, seed=0, checkpoint=path, resume=True)
