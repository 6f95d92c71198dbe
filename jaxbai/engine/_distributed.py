"""Grids over the processes of a `jax.distributed` job: who runs which job, and the gather.

With JAX's multi-controller runtime initialised (``jax.distributed.initialize()``), every
process calls `jaxbai.engine.run_grid` with the same grid. Then:

1. The processes check that they all run the same grid (`check_same_grid`) and pool the
   finished jobs of their checkpoint shards (`union`), so a resumed grid reruns only what no
   process has finished.
2. The pending jobs are split over the processes by `assign`: greedy longest-first by
   `predicted_cost`, each job to the process whose load per device would be smallest. Process
   0's split is broadcast, so every process runs exactly the jobs assigned to it, whatever
   floating-point differences its machine has.
3. Each process runs its share on its own devices with the lane engine (no communication
   while it runs) and writes its own checkpoint shard.
4. `union` gathers every process's results: every process returns the whole grid. A job's
   result depends only on its key, so this is bitwise what one process would have computed.

A process that dies is detected by JAX's coordination service (missed heartbeats, see
``jax.distributed.initialize(heartbeat_timeout_seconds=...)``), which terminates the others
with an error naming the dead process; rerunning every process with ``resume=True`` finishes
the grid from the shards with identical results.
"""

from __future__ import annotations

import hashlib
from typing import NamedTuple

import jax
import numpy as np
from jax.experimental import multihost_utils

from jaxbai.engine.jobs import Jobs

__all__ = [
    "RESULT_FIELDS",
    "Team",
    "assign",
    "check_same_grid",
    "my_jobs",
    "predicted_cost",
    "team_of",
    "union",
]

RESULT_FIELDS = ("done", "tau", "stopped", "recommendation", "rounds", "counts")
"""The per-job host results, in the order they are gathered (``counts``: K rows, one per arm)."""


class Team(NamedTuple):
    """The processes of a grid and this process's place among them.

    Attributes:
        index: this process (``jax.process_index()``).
        size: number of processes (1 without `jax.distributed`).
        devices: this process's devices of the grid's platform.
        capacity: devices of the platform per process, shape ``(size,)``.
    """

    index: int
    size: int
    devices: list[jax.Device]
    capacity: np.ndarray


def team_of(devices: list[jax.Device]) -> Team:
    """The `Team` running on ``devices`` (the platform's devices of every process)."""
    index, size = jax.process_index(), jax.process_count()
    owners = np.array([d.process_index for d in devices], np.int64)
    local = [d for d in devices if d.process_index == index]
    return Team(index, size, local, np.bincount(owners, minlength=size))


def predicted_cost(privacy: str, jobs: Jobs) -> np.ndarray:
    """Relative expected samples of each job, for balancing only (never changes a result).

    log(1/δ) Σ_a w_a over the arms, with gaps Δ_a = μ* − μ_a and Δ_{a*} = Δ_min: w_a = 1/Δ_a²
    without privacy; 1/Δ_a² + 1/(εΔ_a) under global DP (the two terms of the relaxed bound of
    Corollary 18); (1 + 2/(e^ε − 1))²/Δ_a² under local DP (the factor of CTB-TT, Eq. 5).

    Examples:
        >>> import jaxbai
        >>> from jaxbai.engine import grid_jobs
        >>> jobs = grid_jobs(jaxbai.bernoulli([0.9, 0.5]), [0.1, 10.0], 0.01, runs=1)
        >>> cost = predicted_cost("global", jobs)  # Δ = 0.4: 2 (1/0.4² + 1/(0.4ε)) log 100
        >>> (cost / np.log(100.0)).round(3).tolist()
        [62.5, 13.0]
    """
    means = np.asarray(jobs.instance.means, np.float64)
    top = np.sort(means, axis=-1)
    gaps = top[:, -1:] - means
    gaps = np.where(gaps > 0, gaps, top[:, -1:] - top[:, -2:-1])
    weights = 1.0 / gaps**2
    epsilon = np.asarray(jobs.epsilon, np.float64)[:, None]
    if privacy == "global":
        weights = weights + 1.0 / (epsilon * gaps)
    elif privacy == "local":
        weights = weights * (1.0 + 2.0 / np.expm1(epsilon)) ** 2
    return weights.sum(axis=-1) * np.log(1.0 / np.asarray(jobs.delta, np.float64))


def assign(cost: np.ndarray, capacity: np.ndarray) -> np.ndarray:
    """The process of every job: longest first, each to the process that would finish first.

    Greedy longest-processing-time scheduling on processes of ``capacity`` devices each (a
    process's finish time is its load per device); ties go to the lower process index.
    Deterministic.

    Examples:
        >>> assign(np.array([1.0, 8.0, 4.0, 4.0]), np.array([1, 1])).tolist()
        [0, 0, 1, 1]
        >>> assign(np.array([3.0, 3.0, 3.0]), np.array([2, 1])).tolist()
        [0, 0, 1]
    """
    cost = np.asarray(cost, np.float64)
    capacity = np.asarray(capacity, np.float64)
    load = np.zeros(len(capacity))
    owner = np.empty(len(cost), np.int32)
    with np.errstate(divide="ignore"):
        for j in np.argsort(-cost, kind="stable"):
            p = int(np.argmin((load + cost[j]) / capacity))  # a process without devices: inf
            owner[j] = p
            load[p] += cost[j]
    return owner


def my_jobs(team: Team, privacy: str, jobs: Jobs, pending: np.ndarray) -> np.ndarray:
    """The pending jobs this process runs: `assign` by `predicted_cost`, as process 0 sees it."""
    if team.size == 1 or not len(pending):
        return pending
    owner = assign(predicted_cost(privacy, jobs)[pending], team.capacity)
    owner = np.asarray(multihost_utils.broadcast_one_to_all(owner))
    return pending[owner == team.index]


def check_same_grid(fingerprint: str) -> None:
    """Check that every process runs the grid of ``fingerprint`` (a collective).

    Raises:
        ValueError: on every process, if any process runs another grid.
    """
    words = np.frombuffer(hashlib.sha256(fingerprint.encode()).digest()[:8], np.int32)
    if not (np.asarray(multihost_utils.process_allgather(words)) == words).all():
        raise ValueError(
            "the processes of this jax.distributed job run different grids (algorithm, jobs, "
            "seed or budget): every process must call run_grid with the same arguments"
        )


def union(results: dict[str, np.ndarray], count: int) -> tuple[dict[str, np.ndarray], int]:
    """Every process's finished jobs (collective), and the sum of ``count`` over processes.

    Results travel as int32 rows (τ, N_a ≤ 2³¹ − 1; the counts as K rows); ``count`` as two
    31-bit words.
    """
    arrays = [np.asarray(results[f]).astype(np.int32) for f in RESULT_FIELDS]
    rows = [a[None] if a.ndim == 1 else a.T for a in arrays]
    widths = [len(r) for r in rows]
    fields = np.concatenate(rows)
    words = np.array([count >> 31, count & (2**31 - 1)], np.int32)
    gathered, counters = multihost_utils.process_allgather((fields, words))
    gathered, counters = np.asarray(gathered), np.asarray(counters, np.int64)
    source = np.argmax(gathered[:, 0] != 0, axis=0)  # a process that finished the job, if any
    picked = gathered[source, :, np.arange(gathered.shape[-1])]  # (J, rows)
    starts = np.cumsum([0, *widths])
    merged = {
        name: picked[:, starts[i] : starts[i + 1]]
        .reshape(results[name].shape)
        .astype(results[name].dtype)
        for i, name in enumerate(RESULT_FIELDS)
    }
    return merged, int(((counters[:, 0] << 31) + counters[:, 1]).sum())
