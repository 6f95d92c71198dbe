"""The engine runs of a sweep: one engine grid per algorithm and group of instances, and the
per-run table of its results.

`run_algorithm` runs one algorithm of a configuration on its ε grid, one engine grid per group
of instances of the same family and K (`experiments.config.specs.instance_groups`), each with
its checkpoint; `run_table` merges their rows back in the configuration's instance order (the
columns of ``runs.csv``, `experiments.analysis.results.RUN_COLUMNS`); `engine_stats` sums
their wall time and throughput. `check_kernel` refuses a fused-kernel grid before anything
runs. `jaxbai` is imported when first needed.

Examples:
    >>> make_algorithm("dp_se", "theory").info.privacy
    'global'
    >>> reported_tau(make_algorithm("ttucb", "theory"), [[3, 4], [5, 6]])
    array([nan, nan])
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from experiments.analysis import results
from experiments.config import SweepConfig
from experiments.config.specs import AlgorithmSpec, InstanceSpec, instance_groups
from jaxbai.simulation import optional_ints

if TYPE_CHECKING:  # at run time jaxbai is imported when first needed
    from jaxbai.base import Algorithm
    from jaxbai.engine import GridResult, Progress

__all__ = [
    "check_kernel",
    "engine_stats",
    "make_algorithm",
    "rate",
    "reported_tau",
    "restored_note",
    "run_algorithm",
    "run_table",
    "total_runs",
    "unfinished",
]


def make_algorithm(name: str, threshold: str) -> Algorithm:
    """The registered algorithm ``name``, with the stopping-threshold family ``threshold`` if its
    entry has threshold families (DP-SE has none).

    Raises:
        ValueError: ``name`` is not registered.
    """
    return AlgorithmSpec(name, name).build(threshold)


def reported_tau(alg: Algorithm, counts: np.ndarray) -> np.ndarray:
    """``reported_tau`` of runs with final ``counts`` ``(n, K)``: the algorithm's
    `jaxbai.base.ReportsSamples.reported_samples` where it has one, else NaN (float64 ``(n,)``,
    `experiments.analysis.results.OptionalInt`)."""
    from jaxbai.base import ReportsSamples

    counts = np.asarray(counts, np.int64)
    if not isinstance(alg, ReportsSamples):
        return np.full(len(counts), np.nan)
    return np.asarray(alg.reported_samples(counts), np.float64).reshape(len(counts))


def _instance_rows(
    spec: AlgorithmSpec, sweep_config: SweepConfig, instance: InstanceSpec, res, rows: slice
) -> results.Table:
    """The per-run rows of one instance's block of a grid result (order: ε, δ, run)."""
    jobs = res.jobs
    n = len(jobs.run[rows])
    alg = spec.build(sweep_config.threshold)
    counts = np.asarray(res.counts[rows], np.int64)
    return {
        "algorithm": np.full(n, spec.label, dtype=object),
        "privacy": np.full(n, alg.info.privacy, dtype=object),
        "instance": np.full(n, instance.name, dtype=object),
        "means": np.full(n, results.format_means(instance.means), dtype=object),
        "K": np.full(n, instance.num_arms, np.int64),
        "epsilon": np.asarray(jobs.epsilon[rows], np.float64),
        "delta": np.asarray(jobs.delta[rows], np.float64),
        "threshold": np.full(n, spec.threshold_of(sweep_config.threshold), dtype=object),
        "seed": np.full(n, sweep_config.seed, np.int64),
        "run": np.asarray(jobs.run[rows], np.int64),
        "tau": np.asarray(res.tau[rows], np.int64),
        "recommendation": optional_ints(res.recommendation[rows]),
        "correct": np.asarray(res.correct[rows], bool),
        "censored": np.asarray(res.censored[rows], bool),
        "rounds": optional_ints(res.rounds[rows]),
        "counts": results.format_counts(counts),
        "reported_tau": reported_tau(alg, counts),
    }


def run_table(
    spec: AlgorithmSpec, sweep_config: SweepConfig, grid_results: Sequence[GridResult]
) -> results.Table:
    """The per-run rows of one algorithm in the configuration's instance order (then ε, δ,
    run), from its grid results (one per group of `instance_groups`).

    The ``threshold`` column is ``"n/a"`` for an algorithm without threshold families.
    """
    blocks = {}
    for group, res in zip(instance_groups(sweep_config.instances), grid_results, strict=True):
        per_instance = len(res.jobs) // len(group)
        for k, i in enumerate(group):
            rows = slice(k * per_instance, (k + 1) * per_instance)
            blocks[i] = _instance_rows(spec, sweep_config, sweep_config.instances[i], res, rows)
    return results.concat([blocks[i] for i in range(len(sweep_config.instances))])


def _grid_name(sweep_config: SweepConfig, label: str, group: tuple[int, ...]) -> str:
    """``<label>``; with several groups, ``<label>.<family>-K<K>``."""
    if len(instance_groups(sweep_config.instances)) == 1:
        return label
    first = sweep_config.instances[group[0]]
    return f"{label}.{first.family}-K{first.num_arms}"


def _checkpoint(sweep_config: SweepConfig, label: str, group: tuple[int, ...]) -> str:
    """``checkpoints/<label>.npz``; with several groups, one file per family and K."""
    name = _grid_name(sweep_config, label, group)
    return os.path.join(sweep_config.out, "checkpoints", f"{name}.npz")


def run_algorithm(
    spec: AlgorithmSpec,
    sweep_config: SweepConfig,
    *,
    checkpoints: bool = True,
    resume: bool = False,
    progress: bool | Progress = True,
    chunk_steps: int = 1 << 15,
    max_chunks: int | None = None,
) -> list[GridResult]:
    """One engine grid per group of instances (same family and K), each with its checkpoint in
    ``sweep_config.out`` if ``checkpoints``; stops after a group that did not finish
    (``max_chunks``). ``resume``, ``chunk_steps`` and ``max_chunks`` are those of `run`;
    ``progress``: a bar per grid, or a `jaxbai.engine.Progress` bar that follows them all
    (named by the algorithm's label, and the family and K where there are several groups)."""
    from jaxbai import engine

    alg = spec.build(sweep_config.threshold)
    eps = sweep_config.epsilons_for(spec)
    grid_results = []
    for group in instance_groups(sweep_config.instances):
        instances = [sweep_config.instances[i].build() for i in group]
        jobs = engine.grid_jobs(instances, eps, sweep_config.deltas, sweep_config.runs)
        if isinstance(progress, engine.Progress):
            progress.name = _grid_name(sweep_config, spec.label, group)
        res = engine.run_grid(
            alg,
            jobs,
            seed=sweep_config.seed,
            max_samples=sweep_config.max_samples,
            draws=sweep_config.draws,
            share_deltas=sweep_config.share_deltas,
            kernel=sweep_config.kernel,
            device=sweep_config.device,
            checkpoint=_checkpoint(sweep_config, spec.label, group) if checkpoints else None,
            resume=resume,
            progress=progress,
            chunk_steps=chunk_steps,
            max_chunks=max_chunks,
        )
        grid_results.append(res)
        if unfinished(res):
            break
    return grid_results


def total_runs(sweep_config: SweepConfig) -> int:
    """The runs of every algorithm's grids (instances × its ε × δ × runs)."""
    epsilons = sum(len(sweep_config.epsilons_for(spec)) for spec in sweep_config.algorithms)
    return len(sweep_config.instances) * epsilons * len(sweep_config.deltas) * sweep_config.runs


def restored_note(sweep_config: SweepConfig) -> str:
    """The line a resumed sweep prints: the cells (and runs) its checkpoints hold as finished
    (`jaxbai.engine.finished_jobs`; checked when each grid runs)."""
    from jaxbai import engine

    runs, cells = 0, 0
    for spec in sweep_config.algorithms:
        for group in instance_groups(sweep_config.instances):
            size = len(group) * len(sweep_config.epsilons_for(spec)) * len(sweep_config.deltas)
            checkpoint = _checkpoint(sweep_config, spec.label, group)
            done = engine.finished_jobs(checkpoint, size * sweep_config.runs)
            if done is not None:
                runs += int(done.sum())
                cells += int(done.reshape(size, sweep_config.runs).all(axis=1).sum())
    total = total_runs(sweep_config)
    where = os.path.join(sweep_config.out, "checkpoints")
    return (
        f"resume: restored {cells} of {total // sweep_config.runs} cells ({runs} of {total} "
        f"runs) from {where}"
    )


def check_kernel(sweep_config: SweepConfig) -> None:
    """With ``kernel = "fused"``, ValueError naming every algorithm and instance group the
    fused kernel would refuse (`jaxbai.engine.fused_unsupported`), before any of them runs."""
    from jaxbai import engine

    if sweep_config.kernel != "fused":  # "auto" is "xla"
        return
    platform = engine.select_devices(sweep_config.device)[0].platform
    refused = []
    for spec in sweep_config.algorithms:
        alg = spec.build(sweep_config.threshold)
        for group in instance_groups(sweep_config.instances):
            instances = [sweep_config.instances[i].build() for i in group]
            eps = sweep_config.epsilons_for(spec)[:1]
            jobs = engine.grid_jobs(instances, eps, sweep_config.deltas, 1)
            reason = engine.fused_unsupported(
                alg,
                jobs,
                platform=platform,
                draws=sweep_config.draws,
                share_deltas=sweep_config.share_deltas,
            )
            if reason is not None:
                refused.append(f"{spec.label}: {reason}")
    if refused:
        raise ValueError("kernel='fused' cannot run " + "; ".join(refused) + "; use kernel='xla'")


def rate(samples: int, wall: float) -> float | None:
    """Samples per second, or None where no sample was drawn (every job resumed): no rate was
    measured, and 0.0 would read as one.

    Examples:
        >>> rate(10, 2.0), rate(0, 3.0)
        (5.0, None)
    """
    return samples / max(wall, 1e-9) if samples else None


def engine_stats(grid_results: Sequence[GridResult]) -> dict:
    """Wall time and throughput of one algorithm's engine calls, together; ``resumed_jobs``
    were restored from checkpoints, so their samples are not in ``samples``."""
    samples = sum(r.samples for r in grid_results)
    wall = sum(r.wall_time for r in grid_results)
    lane_steps = sum(r.lane_steps for r in grid_results)
    return {
        "jobs": sum(len(r.jobs) for r in grid_results),
        "resumed_jobs": sum(r.resumed for r in grid_results),
        "censored": int(sum(r.censored.sum() for r in grid_results)),
        "wall_time_s": wall,
        "samples": samples,
        "lane_steps": lane_steps,
        "efficiency": samples / max(lane_steps, 1),
        "samples_per_s": rate(samples, wall),
        "shared_deltas": any(r.shared_deltas for r in grid_results),
        "kernel": grid_results[0].kernel,
    }


def unfinished(res: GridResult) -> bool:
    """Did the engine stop (``--max-chunks``) before every job finished? (τ = 0 marks them.)"""
    return bool((res.censored & (res.tau == 0)).any())
