"""The fused lane kernel (``kernel="fused"``, docs/semantics.md §32).

On this CPU the kernel runs in Pallas' interpret mode, the same kernel body executed by XLA:
its results must equal the XLA lane program's, job for job. Its GPU form is checked by
lowering it for CUDA with the Triton backend (no GPU needed), and the coverage each registered
algorithm declares (`jaxbai.engine.fused_refusal`) by that lowering too.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from _grids import assert_same

import jaxbai
from experiments.bench.kernels import lane_pool
from jaxbai import engine
from jaxbai.engine import fused_kernel, lane_program, prepare

NAMES = tuple(jaxbai.ALGORITHMS)
ARMS = (2, 3, 5, 8, 13)
"""Each algorithm's equality check runs at one of these K, in turn (a compile each)."""


def instance(num_arms: int) -> jaxbai.Instance:
    """A best arm well ahead of the others, so that some jobs stop and some are censored."""
    return jaxbai.bernoulli(np.r_[0.9, np.linspace(0.45, 0.1, num_arms - 1)])


def per_sample(name: str) -> jaxbai.Algorithm:
    return engine.with_draws(jaxbai.ALGORITHMS[name](), instance(2), "per_sample")


@pytest.mark.integration
@pytest.mark.parametrize("name", NAMES)
def test_fused_grid_equals_xla_grid_or_is_refused(name: str) -> None:
    """Every job's (τ, â, rounds, N, censored) are those of the XLA program, with refill
    (8 lanes for 24 jobs) and tail compaction active and censored jobs among them, and the
    arms padded to a power of two where K is not one (3 → 4, 5 → 8, 13 → 16); an
    algorithm the kernel does not cover is refused, with its reason, before it runs.
    ``kernel="auto"`` is the XLA program."""
    num_arms = ARMS[NAMES.index(name) % len(ARMS)]
    jobs = engine.grid_jobs(instance(num_arms), [1.0, 10.0], [0.1, 0.01], 6)
    alg = jaxbai.ALGORITHMS[name]()
    options = dict(seed=3, draws="per_sample", lanes_per_device=8, chunk_steps=64)
    reason = engine.fused_unsupported(
        alg, jobs, platform="cpu", lanes_per_device=8, draws="per_sample"
    )
    if reason is not None:
        with pytest.raises(ValueError, match="kernel='fused' cannot run"):
            engine.run_grid(alg, jobs, kernel="fused", **options)
        return
    # The same compiled program at a budget that censors about half of the jobs.
    uncut = engine.run_grid(alg, jobs, kernel="xla", max_samples=10**6, **options)
    options.update(max_samples=int(np.median(uncut.tau)), shrink_after=0.0)
    xla = engine.run_grid(alg, jobs, kernel="auto", **options)
    fused = engine.run_grid(alg, jobs, kernel="fused", **options)
    assert (xla.kernel, fused.kernel) == ("xla", "fused")
    assert 0 < xla.censored.sum() < len(jobs), "the grid must mix stopped and censored jobs"
    assert_same(fused, xla)
    assert fused.lane_steps == xla.lane_steps


@pytest.mark.integration
def test_fused_grid_with_shared_deltas_equals_xla_grid() -> None:
    """Trajectories shared by three δ: the kernel steps them as the XLA program does (a test
    that fires holds its lane; the rows are written between kernel calls), so every δ's
    record is the same, with refill, tail compaction and censored trajectories."""
    jobs = engine.grid_jobs(instance(4), [1.0], [0.1, 0.01, 0.001], 8)
    alg = jaxbai.adap_tt()
    options = dict(seed=5, draws="per_sample", share_deltas=True, lanes_per_device=4)
    uncut = engine.run_grid(alg, jobs, chunk_steps=64, **options)
    options.update(chunk_steps=64, shrink_after=0.0, max_samples=int(np.median(uncut.tau)))
    xla = engine.run_grid(alg, jobs, **options)
    fused = engine.run_grid(alg, jobs, kernel="fused", **options)
    assert xla.shared_deltas and fused.shared_deltas
    assert 0 < xla.censored.sum() < len(jobs), "the grid must mix stopped and censored jobs"
    assert_same(fused, xla)


def test_blocks_of_lanes_equal_the_xla_loop() -> None:
    """Several programs of 4 lanes, each stopping early once its lanes are done: every leaf
    of the pool equals the XLA loop's after as many steps."""
    jobs = engine.grid_jobs(instance(4), [1.0], 0.01, 16)
    lanes, step = lane_pool(per_sample("adap_tt"), jobs, 4)
    limit = jnp.int32(300)
    xla_step = lane_program.lanes_step(step.args[0], limit, lambda ln: ln)
    xla = jax.jit(lambda p: jax.lax.fori_loop(0, 400, lambda _, ln: xla_step(ln), p))(lanes)
    fused = jax.jit(lambda p: fused_kernel.fused_steps(step, limit, 400, p, True, block=4))(lanes)
    assert bool(jnp.all(xla.state.stopped | (xla.state.n >= 300)))
    for a, b in zip(jax.tree_util.tree_leaves(xla), jax.tree_util.tree_leaves(fused), strict=True):
        np.testing.assert_array_equal(a, b)


def lowers_for_cuda(alg: jaxbai.Algorithm, jobs: engine.Jobs, num_arms: int) -> bool:
    """Whether the fused kernel of ``alg`` on ``jobs`` lowers for CUDA (Triton backend)."""
    lanes, step = lane_pool(alg, jobs, num_arms)
    kernel = jax.jit(lambda p: fused_kernel.fused_steps(step, jnp.int32(10**6), 16, p, False))
    triton = jax.export.DisabledSafetyCheck.custom_call("__gpu$xla.gpu.triton")
    try:
        jax.export.export(kernel, platforms=["cuda"], disabled_checks=[triton])(lanes)
    except (NotImplementedError, ValueError, TypeError, jax.errors.JAXTypeError):
        return False
    return True


@pytest.mark.integration
@pytest.mark.parametrize("name", NAMES)
def test_declared_coverage_is_what_lowers_for_cuda(name: str) -> None:
    """What the fused kernel accepts for a GPU lowers for CUDA (Triton), the arms padded to a
    power of two where K is not one (3 → 4, 5 → 8, 13 → 16); what `jaxbai.engine.fused_refusal`
    refuses (at K = 4) does not lower, so no refusal is stale."""
    alg = per_sample(name)
    for num_arms in ARMS:
        jobs = engine.grid_jobs(instance(num_arms), [1.0], 0.01, 16)
        fused = prepare._fused_grid(alg, jobs, np.arange(16), "gpu", 16)
        if not isinstance(fused, str):
            assert lowers_for_cuda(*fused), f"{name} at K = {num_arms} does not lower"
    refusal = engine.fused_refusal(jaxbai.ALGORITHMS[name]())
    if refusal is not None:
        jobs = engine.grid_jobs(instance(4), [1.0], 0.01, 16)
        assert not lowers_for_cuda(alg, jobs, 4), f"{name} lowers, yet is refused: {refusal}"


def test_lowered_primitives_have_triton_rules() -> None:
    """Each primitive the kernel admits has a lowering rule in Pallas' Triton backend."""
    lowering = pytest.importorskip("jax._src.pallas.triton.lowering")
    rules = {str(p) for p in lowering.triton_lowering_rules}
    assert fused_kernel.LOWERED_PRIMITIVES <= rules, sorted(fused_kernel.LOWERED_PRIMITIVES - rules)


def test_refusals_name_their_reason() -> None:
    jobs5 = engine.grid_jobs(instance(5), [1.0], [0.1, 0.01], 2)
    ttucb, adap = jaxbai.ttucb(), jaxbai.adap_tt()
    assert engine.fused_unsupported(ttucb, jobs5, platform="gpu") is None  # padded to 8
    dpa_global = jaxbai.ALGORITHMS["ttucb_dpa_global"]()
    assert "global episode" in engine.fused_unsupported(dpa_global, jobs5, draws="per_sample")
    jobs4 = engine.grid_jobs(instance(4), [1.0], 0.01, 2)
    assert engine.fused_unsupported(dpa_global, jobs4, draws="per_sample") is None
    assert engine.fused_unsupported(ttucb, jobs4, platform="gpu") is None
    assert "pool of 12 lanes" in engine.fused_unsupported(
        ttucb, jobs4, platform="gpu", lanes_per_device=12
    )
    assert "per-episode" in engine.fused_unsupported(adap, jobs4, draws="per_episode")
    jobs4x2 = engine.grid_jobs(instance(4), [1.0], [0.1, 0.01], 2)
    assert "(2, 7) per lane" in engine.fused_unsupported(ttucb, jobs4x2, share_deltas=True)
    assert engine.fused_unsupported(ttucb, jobs4x2, platform="cpu", share_deltas=True) is None
    assert "SharedDeltas" in engine.fused_unsupported(ttucb, jobs5, share_deltas=True)
    with pytest.raises(ValueError, match="per-episode"):  # draws="auto" is per episode here
        engine.run_grid(adap, jobs4, kernel="fused")
    with pytest.raises(ValueError, match="kernel must be one of"):
        engine.run_grid(ttucb, jobs4, kernel="pallas")


@pytest.mark.integration
def test_kernel_benchmark_measures_both_programs() -> None:
    """`experiments.bench.kernels` (a smoke test at 128 lanes): both lane programs move every
    lane by every step, and a refusal reaches the table with its reason; the engine rate of
    `experiments.bench` runs the fused kernel (interpreted) or reports its refusal."""
    from experiments import bench
    from experiments.bench import kernels

    costs = {k: kernels.launch_cost(k, 128, 4, "cpu") for k in ("xla", "fused")}
    jobs = engine.grid_jobs(instance(3), [1.0], 0.1, 4)
    rate = bench.engine_rate(jaxbai.adap_tt(), jobs, "cpu", draws="per_sample", kernel="fused")
    assert rate["samples"] > 0 and rate["censored"] == 0
    assert "refused" in bench.engine_rate(jaxbai.adap_tt(), jobs, "cpu", kernel="fused")
    for cost in costs.values():
        assert cost["lane_steps_per_s"] * cost["us_per_step"] * 1e-6 == pytest.approx(128)
    refused = {"fused": {"refused": "ttucb: an array of shape (5,) per lane"}}
    table = kernels.markdown({"measurements": {"tail": {"xla": costs["xla"], **refused}}})
    assert "refused: ttucb: an array of shape (5,)" in table
