"""What a grid runs as, decided before the host loop (`jaxbai.engine.run`) starts.

The devices and the lane pool size (`select_devices`, `default_lanes`); the checks of a grid
before anything compiles; the algorithm as the engine runs it, with per-episode draws
(`DRAWS`, `with_draws`) and several δ per trajectory (`with_shared_deltas`), and the units its
lanes run; the grid as the fused kernel runs it, or why it cannot (`fused_unsupported`,
`fused_refusal`).
"""

from __future__ import annotations

from functools import partial
from typing import Any

import jax
import numpy as np

from jaxbai import checks, instances
from jaxbai.base import Algorithm, ArmSums, Budgeted, Episodic, Instance
from jaxbai.engine._shared import SharedDeltas, in_lanes, shared, shares_deltas, trajectories
from jaxbai.engine.fused_kernel import BLOCK_LANES, padded, padded_width, unsupported
from jaxbai.engine.jobs import Jobs, grid_jobs
from jaxbai.engine.lane_program import block_step, device_tables, initial_carry

__all__ = [
    "DRAWS",
    "default_lanes",
    "fused_refusal",
    "fused_unsupported",
    "select_devices",
    "with_draws",
    "with_shared_deltas",
]


def select_devices(device: str | None) -> list[jax.Device]:
    """The devices of a platform (``"cpu"``, ``"gpu"``) or JAX's default ones.

    Raises:
        ValueError: the platform is not available to JAX (never a silent CPU fallback).
    """
    if device is None:
        return jax.devices()
    if device not in ("cpu", "gpu"):
        raise ValueError(f"device must be 'cpu' or 'gpu', got {device!r}")
    try:
        return jax.devices(device)
    except RuntimeError as err:
        raise ValueError(
            f"device={device!r} was requested but JAX sees no {device.upper()} "
            f"(available: {[d.platform for d in jax.devices()]}); for a GPU, install JAX with "
            'CUDA: pip install -e ".[gpu]" (docs/index.md, GPU)'
        ) from err


def default_lanes(platform: str, jobs_per_device: int) -> int:
    """Lane pool size: about a quarter of a device's jobs, as a power of two, clipped.

    Enough jobs per lane keep refill busy (few idle lanes while long jobs finish), and on CPU
    the pool stays small enough for the cache (32–256 lanes; a step is fastest at 128–512);
    GPUs want wide pools (1024–32768 lanes).

    Examples:
        >>> default_lanes("cpu", 1000), default_lanes("gpu", 10)
        (256, 1024)
    """
    low, high = (32, 256) if platform == "cpu" else (1024, 32768)
    quarter = max(1, -(-jobs_per_device // 4))
    return int(min(high, max(low, 1 << (quarter - 1).bit_length())))


def _check_grid(alg: Algorithm, jobs: Jobs, max_samples: int) -> np.ndarray:
    """Validate a grid before compiling; returns each job's best arm."""
    checks.check_algorithm(alg)
    max_samples = checks.check_max_samples(max_samples)
    if alg.info.unit_interval and not jobs.instance.unit_interval:
        raise ValueError(f"{alg.name} needs rewards in [0, 1]; got {type(jobs.instance).__name__}")
    means = np.asarray(jobs.instance.means, np.float64)
    checks.check_num_arms(means.shape[-1])
    best = checks.check_unique_best(means)
    alg.params(epsilon=jobs.epsilon, delta=jobs.delta)  # validates ε and δ
    return best


DRAWS = ("auto", "per_sample", "per_episode")
"""How rewards are drawn (docs/semantics.md §25): ``"per_sample"`` (every step draws one
reward), ``"per_episode"`` (an episodic algorithm draws one sum per arm and episode, same law),
``"auto"`` (per episode where possible: a `jaxbai.base.Episodic` algorithm on an instance with
`jaxbai.base.ArmSums`)."""


def with_draws(alg: Algorithm, instance: Instance, draws: str) -> Algorithm:
    """The algorithm the engine runs for ``draws`` (one of `DRAWS`).

    Raises:
        ValueError: an unknown mode, or ``"per_episode"`` for an algorithm that is not
            `jaxbai.base.Episodic` or an instance without `jaxbai.base.ArmSums` (a Beta
            instance or a reward table).
    """
    if draws not in DRAWS:
        raise ValueError(f"draws must be one of {DRAWS}, got {draws!r}")
    if draws == "per_sample" or isinstance(alg, Budgeted):
        return alg
    episodic, arm_sums = isinstance(alg, Episodic), isinstance(instance, ArmSums)
    if draws == "auto" and not (episodic and arm_sums):
        return alg
    if not episodic:
        raise ValueError(
            f"{alg.name} is fully sequential (not episodic): it has no per-episode draws"
        )
    if not arm_sums:
        raise ValueError(
            f"per-episode draws need an instance whose reward sums are drawn exactly "
            f"(ArmSums: Bernoulli, Gaussian), not {type(instance).__name__}"
        )
    return alg.per_episode()


def with_shared_deltas(alg: Algorithm, jobs: Jobs, share: bool) -> Algorithm:
    """The algorithm the engine runs (docs/semantics.md §31): with ``share``, an algorithm that
    `shares_deltas` wrapped into `jaxbai.engine.SharedDeltas` (one trajectory per (instance, ε,
    run), tested against each of its δ); any other (DP-SE, whose epochs depend on δ) as it is,
    each δ run separately.

    Raises:
        ValueError: ``share`` is not a bool.
    """
    if not isinstance(share, bool):
        raise ValueError(f"share_deltas must be True or False, got {share!r}")
    if not share:
        return alg
    first = jax.tree_util.tree_map(lambda x: np.asarray(x)[0], jobs.instance)
    return shared(alg) if shares_deltas(alg, first) else alg


def _units(alg: Algorithm, jobs: Jobs, pending: np.ndarray) -> np.ndarray:
    """What the lanes run: the pending jobs ``(P,)``, or their shared trajectories ``(T, D)``."""
    return trajectories(jobs, pending) if isinstance(alg, SharedDeltas) else pending


def _fused_grid(
    alg: Algorithm, jobs: Jobs, units: np.ndarray, platform: str, lanes: int
) -> tuple[Algorithm, Jobs, int] | str:
    """``alg`` and ``jobs`` as the fused kernel runs them: the arms padded to a power of two
    (`jaxbai.engine.fused_kernel.padded`; the instance's per-arm arrays with zeros), and their
    number; or why the kernel cannot run them (`jaxbai.engine.fused_kernel.unsupported`; only
    the first job is loaded, the step is only traced)."""
    num_arms = int(np.asarray(jobs.instance.means).shape[-1])
    wide, width = padded(alg, num_arms), padded_width(num_arms)
    if isinstance(wide, str):
        return wide

    def pad(x: Any) -> Any:
        x = np.asarray(x)
        if x.ndim < 2 or x.shape[-1] != num_arms:
            return x
        return np.pad(x, [(0, 0)] * (x.ndim - 1) + [(0, width - num_arms)])

    if width > num_arms:
        # Not jobs._replace: a Jobs' len() is its number of jobs, which _replace checks.
        instance = jax.tree_util.tree_map(pad, jobs.instance)
        jobs = Jobs(instance, jobs.epsilon, jobs.delta, jobs.run)
    table, _ = device_tables(jobs, units[:1], 1)
    pool = initial_carry(wide, width, np.uint32(0), table, lanes, 1)[0]
    reason = unsupported(wide, partial(block_step, in_lanes(wide)), pool, platform)
    return (wide, jobs, width) if reason is None else reason


def fused_unsupported(
    alg: Algorithm,
    jobs: Jobs,
    *,
    platform: str = "gpu",
    lanes_per_device: int = BLOCK_LANES,
    draws: str = "auto",
    share_deltas: bool = False,
) -> str | None:
    """Why ``run_grid(alg, jobs, kernel="fused", …)`` on ``platform`` would be refused, or None
    if the fused kernel runs it (docs/semantics.md §32); the arguments are `run_grid`'s.

    Examples:
        >>> import jaxbai
        >>> from jaxbai.engine import grid_jobs
        >>> jobs = grid_jobs(jaxbai.bernoulli([0.9, 0.7, 0.5, 0.3]), [1.0], runs=1)
        >>> fused_unsupported(jaxbai.adap_tt(), jobs, draws="per_sample") is None
        True
        >>> "per-episode draws" in fused_unsupported(jaxbai.adap_tt(), jobs, draws="per_episode")
        True
    """
    alg = with_shared_deltas(with_draws(alg, jobs.instance, draws), jobs, share_deltas)
    units = _units(alg, jobs, np.arange(len(jobs)))
    fused = _fused_grid(alg, jobs, units, platform, lanes_per_device)
    return fused if isinstance(fused, str) else None


def fused_refusal(alg: Algorithm) -> str | None:
    """Whether the fused GPU kernel runs ``alg``: None if it runs it on a probe grid (4 arms,
    one δ, per-sample draws), else the reason it is refused (`fused_unsupported`; found by
    tracing its step, nothing runs).

    Examples:
        >>> import jaxbai
        >>> fused_refusal(jaxbai.adap_tt()) is None
        True
        >>> "gather" in fused_refusal(jaxbai.dp_se())
        True
    """
    jobs = grid_jobs(instances.bernoulli([0.8, 0.6, 0.4, 0.2]), [1.0], [0.01], 1)
    return fused_unsupported(alg, jobs, draws="per_sample")
