"""Monte-Carlo simulation of whole (ε × δ × runs) grids as one compiled program.

Randomness is per job: run ``r`` at (ε, δ) uses the key
``fold_in(fold_in(fold_in(key(seed), r), bits(ε)), bits(δ))``, so a run's trajectory does not
depend on which other ε, δ or runs are simulated alongside it. Within a run, step ``n`` uses
``fold_in(stream_key, n)``.
"""

from __future__ import annotations

import functools
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax.typing import ArrayLike

from jaxbai import _validate
from jaxbai.instances import rewards_in_unit_interval


class SimulationResult(NamedTuple):
    """Per-run outcomes, numpy arrays of shape ``epsilon.shape + delta.shape + (runs,)``.

    Attributes:
        tau: samples drawn when the run stopped (the K initial samples included). For a
            censored run, the samples drawn when it was cut (a lower bound on τ).
        recommendation: recommended arm (−1 if censored).
        correct: recommendation is the best arm (False if censored).
        censored: the run did not stop within ``max_samples`` samples.
        rounds: rounds of adaptivity (DAF: Σ_a k_a; DP-SE: epochs; −1 otherwise).
        epsilon: ε of each cell, broadcast to the result's shape.
        delta: δ of each cell, broadcast likewise.
    """

    tau: np.ndarray
    recommendation: np.ndarray
    correct: np.ndarray
    censored: np.ndarray
    rounds: np.ndarray
    epsilon: np.ndarray
    delta: np.ndarray


def float_bits(x: ArrayLike) -> jax.Array:
    """The float32 bit pattern of ``x`` as uint32 (a key coordinate)."""
    return jax.lax.bitcast_convert_type(jnp.asarray(x, jnp.float32), jnp.uint32)


def job_key(master: jax.Array, run: ArrayLike, epsilon: ArrayLike, delta: ArrayLike) -> jax.Array:
    """The key of one job, from (master seed, run index, ε, δ) only."""
    key = jax.random.fold_in(master, jnp.asarray(run, jnp.uint32))
    key = jax.random.fold_in(key, float_bits(epsilon))
    return jax.random.fold_in(key, float_bits(delta))


def run_one(
    alg: Any, inst: Any, params: Any, key: jax.Array, num_arms: int, max_samples: ArrayLike
) -> Any:
    """One trajectory under `lax.while_loop`, until it stops or draws ``max_samples`` samples."""
    init_key, stream_key = jax.random.split(key)
    state = alg.init(init_key, params, num_arms)

    def running(s: Any) -> jax.Array:
        return ~s.stopped & (s.n < max_samples)

    def body(s: Any) -> Any:
        return alg.step(jax.random.fold_in(stream_key, s.n), s, inst, params)

    return jax.lax.while_loop(running, body, state)


@functools.partial(jax.jit, static_argnames=("alg", "num_arms"))
def _simulate_grid(alg, inst, params, keys, num_arms, max_samples):
    def one(p, k):
        final = run_one(alg, inst, p, k, num_arms, max_samples)
        return final.n, final.stopped, final.recommendation, alg.rounds(final)

    per_cell = jax.vmap(one, in_axes=(None, 0))
    return jax.vmap(per_cell, in_axes=(0, 0))(params, keys)


def check_instance(alg: Any, inst: Any) -> int:
    """Validate an (algorithm, instance) pair; returns the best arm."""
    if alg.unit_interval and not rewards_in_unit_interval(inst):
        raise ValueError(
            f"{alg.name} needs rewards in [0, 1]; got a {type(inst).__name__} instance"
        )
    return _validate.check_unique_best(np.asarray(inst.means))


def simulate(
    alg: Any,
    inst: Any,
    epsilon: ArrayLike | None = None,
    delta: ArrayLike = 0.01,
    runs: int = 1000,
    seed: int = 0,
    max_samples: int = 10**9,
) -> SimulationResult:
    """Run ``runs`` independent trajectories of ``alg`` on ``inst`` for every (ε, δ).

    Everything runs as one jitted, vmapped program; a new ε or δ value of the same shape reuses
    it. Runs that do not stop within ``max_samples`` are reported as censored.

    Args:
        alg: an algorithm (`jaxbai.ttucb`, …, `jaxbai.dp_se`).
        inst: an instance (`jaxbai.bernoulli`, …) with a unique best arm.
        epsilon: scalar or 1-D sequence of privacy budgets (ignored by TTUCB).
        delta: scalar or 1-D sequence of risks.
        runs: runs per (ε, δ) cell.
        seed: master seed.
        max_samples: per-run sample budget (≤ 2³¹ − 1).

    Example:
        >>> import jaxbai
        >>> res = jaxbai.simulate(jaxbai.ttucb(), jaxbai.bernoulli([0.6, 0.2]), runs=4)
        >>> res.tau.shape
        (4,)
    """
    best = check_instance(alg, inst)
    max_samples = _validate.check_max_samples(max_samples)
    if isinstance(runs, bool) or not isinstance(runs, (int, np.integer)) or runs < 1:
        raise ValueError(f"runs must be a positive integer, got {runs!r}")
    eps_in = np.asarray(np.inf if epsilon is None else epsilon, np.float64)
    dlt_in = np.asarray(delta, np.float64)
    if eps_in.ndim > 1 or dlt_in.ndim > 1:
        raise ValueError("epsilon and delta must be scalars or 1-D sequences")
    eps_grid, dlt_grid = np.meshgrid(eps_in.ravel(), dlt_in.ravel(), indexing="ij")
    params = alg.params(
        epsilon=None if epsilon is None else eps_grid.ravel(), delta=dlt_grid.ravel()
    )
    num_arms = int(np.asarray(inst.means).shape[0])
    master = jax.random.key(seed)
    run_ids = jnp.arange(runs)
    keys = jax.vmap(lambda e, d: jax.vmap(lambda r: job_key(master, r, e, d))(run_ids))(
        jnp.asarray(eps_grid.ravel(), jnp.float32), jnp.asarray(dlt_grid.ravel(), jnp.float32)
    )
    n, stopped, rec, rounds = jax.device_get(
        _simulate_grid(alg, inst, params, keys, num_arms, jnp.int32(max_samples))
    )
    shape = eps_in.shape + dlt_in.shape + (runs,)
    censored = ~stopped | (n > max_samples)
    rec = np.where(censored, -1, rec)
    cell = (
        np.broadcast_to(eps_grid.ravel()[:, None], n.shape),
        np.broadcast_to(dlt_grid.ravel()[:, None], n.shape),
    )
    return SimulationResult(
        tau=n.reshape(shape).astype(np.int64),
        recommendation=rec.reshape(shape),
        correct=(rec == best).reshape(shape),
        censored=censored.reshape(shape),
        rounds=rounds.reshape(shape),
        epsilon=cell[0].reshape(shape),
        delta=cell[1].reshape(shape),
    )
