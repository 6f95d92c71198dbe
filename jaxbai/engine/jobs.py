"""Job lists and per-job keys.

A grid is a flat list of jobs (`Jobs`): one (instance, ε, δ, run index) each. Job j's
randomness depends only on (seed, run, ε, δ) — see `job_key` — so a job's result does not
depend on which other jobs share its grid, on their order, or on how the engine lays them out
over lanes and devices. The instance is not part of the key: the same run index on two
instances shares its random stream, i.e. common random numbers across instances.

Step n of a job uses the key ``fold_in(stream, n)``; `fold_in_step` computes it bit for bit as
one fused elementwise expression (JAX's own lowering of threefry on CPU is a rolled loop of
five iterations, which costs about as much as the rest of a Top Two step).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax.typing import ArrayLike

from jaxbai import checks
from jaxbai.arrays import key_words
from jaxbai.base import Instance
from jaxbai.checks import memory_bytes

__all__ = ["SHARED_DELTA", "Jobs", "fold_in_step", "grid_jobs", "job_key"]

_ROTATIONS = ((13, 15, 26, 6), (17, 29, 16, 24))
"""Threefry-2x32 rotation constants (Salmon et al. 2011), as in JAX's implementation."""


class Jobs(NamedTuple):
    """A list of J jobs. ``instance`` is an instance pytree whose leaves have leading dim J."""

    instance: Instance
    epsilon: np.ndarray
    delta: np.ndarray
    run: np.ndarray

    def __len__(self) -> int:
        return int(self.run.shape[0])


def _float_bits(x: ArrayLike) -> jax.Array:
    """The float32 bit pattern of ``x`` as uint32 (a key coordinate)."""
    return jax.lax.bitcast_convert_type(jnp.asarray(x, jnp.float32), jnp.uint32)


SHARED_DELTA = 0xFFFFFFFF
"""The δ coordinate of the key of a trajectory shared by several δ (docs/semantics.md §31): a
NaN bit pattern, which no valid δ ∈ (0, 1) has."""


def job_key(
    master: jax.Array, run: ArrayLike, epsilon: ArrayLike, delta: ArrayLike | None
) -> jax.Array:
    """The key of one job, from (master key, run index, ε, δ) only.

    ε and δ enter through their float32 bit patterns, so two jobs share a stream exactly when
    they share the run index and the float32 values of ε and δ. ``delta=None`` is the key of
    a trajectory shared by several δ (`SHARED_DELTA`): it depends on (run, ε) only.
    """
    key = jax.random.fold_in(master, jnp.asarray(run, jnp.uint32))
    key = jax.random.fold_in(key, _float_bits(epsilon))
    coordinate = jnp.uint32(SHARED_DELTA) if delta is None else _float_bits(delta)
    return jax.random.fold_in(key, coordinate)


def fold_in_step(stream: jax.Array, n: ArrayLike) -> jax.Array:
    """Key data of ``jax.random.fold_in(wrap_key_data(stream), n)``, bit for bit, unrolled.

    ``stream`` is threefry-2x32 key data, uint32 ``(..., 2)``; ``n`` a count ≥ 0. fold_in hashes
    the block (0, n) with the key: 20 rounds of Threefry-2x32 with a key injection every
    four, written out here so that XLA fuses them with the step instead of running a loop.

    Examples:
        >>> key = jax.random.key(7, impl="threefry2x32")
        >>> bits = fold_in_step(jax.random.key_data(key), 12)
        >>> bool((bits == jax.random.key_data(jax.random.fold_in(key, 12))).all())
        True
    """
    k0, k1 = key_words(stream)
    schedule = (k0, k1, k0 ^ k1 ^ jnp.uint32(0x1BD11BDA))
    x0 = k0
    x1 = jnp.asarray(n).astype(jnp.uint32) + k1
    for block in range(5):
        for r in _ROTATIONS[block % 2]:
            x0 = x0 + x1
            x1 = ((x1 << jnp.uint32(r)) | (x1 >> jnp.uint32(32 - r))) ^ x0
        x0 = x0 + schedule[(block + 1) % 3]
        x1 = x1 + schedule[(block + 2) % 3] + jnp.uint32(block + 1)
    return jnp.stack([x0, x1], axis=-1)


def grid_jobs(
    instances: Instance | Sequence[Instance],
    epsilon: ArrayLike | Sequence[float],
    delta: ArrayLike | Sequence[float] = 0.01,
    runs: int = 1,
) -> Jobs:
    """The Cartesian product instances × ε × δ × runs (runs vary fastest).

    Args:
        instances: one instance or a sequence of instances of the same type and K.
        epsilon: scalar or sequence of ε (``inf`` for non-private algorithms).
        delta: scalar or sequence of δ.
        runs: runs per (instance, ε, δ) cell.

    Examples:
        >>> import jaxbai
        >>> jobs = grid_jobs([jaxbai.bernoulli([0.9, 0.5])], [0.1, 1.0], 0.01, runs=3)
        >>> len(jobs)
        6
    """
    one = hasattr(instances, "means") or isinstance(instances, (str, bytes))
    insts = [instances] if one or not isinstance(instances, Iterable) else list(instances)
    if not insts:
        raise ValueError("instances must not be empty")
    for inst in insts:
        checks.check_instance(inst)
    structure = jax.tree_util.tree_structure(insts[0])
    if any(jax.tree_util.tree_structure(i) != structure for i in insts):
        raise ValueError("all instances of a grid must have the same type")
    if len({np.asarray(i.means).shape for i in insts}) != 1:
        raise ValueError("all instances of a grid must have the same number of arms")
    eps = np.atleast_1d(np.asarray(epsilon, np.float64))
    dlt = np.atleast_1d(np.asarray(delta, np.float64))
    if isinstance(runs, bool) or not isinstance(runs, (int, np.integer)) or runs < 1:
        raise ValueError(f"runs must be a positive integer, got {runs!r}")
    num_arms = int(np.asarray(insts[0].means).shape[-1])
    checks.check_job_count(len(insts) * eps.size * dlt.size * int(runs), num_arms, memory_bytes())
    i_idx, e_idx, d_idx, r_idx = (
        g.ravel()
        for g in np.meshgrid(
            np.arange(len(insts)),
            np.arange(eps.size),
            np.arange(dlt.size),
            np.arange(runs),
            indexing="ij",
        )
    )
    stacked = jax.tree_util.tree_map(lambda *xs: np.stack([np.asarray(x) for x in xs]), *insts)
    instance = jax.tree_util.tree_map(lambda x: x[i_idx], stacked)
    return Jobs(instance, eps[e_idx], dlt[d_idx], r_idx.astype(np.int64))
