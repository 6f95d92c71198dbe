"""The engine runs of a sweep: one engine grid per algorithm and group of instances, and the
per-run table of its results.

`run_algorithm` runs one algorithm of a sweep's plan (`experiments.sweep.grids.SweepGrids`) on
its grids, one per group of instances of the same family and K, each with its checkpoint;
`run_table` merges their rows back in the configuration's instance order (the columns of
``runs.csv``, `experiments.analysis.results.RUN_COLUMNS`); `engine_stats` sums their wall time
and throughput. `check_kernel` refuses a fused-kernel grid before anything runs. `jaxbai` is
imported when first needed.

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
from experiments.config.specs import AlgorithmSpec, InstanceSpec
from experiments.sweep.grids import SweepGrids
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
    spec: AlgorithmSpec,
    alg: Algorithm,
    sweep_config: SweepConfig,
    instance: InstanceSpec,
    res: GridResult,
    rows: slice,
) -> results.Table:
    """The per-run rows of one instance's block of a grid result (order: ε, δ, run)."""
    jobs = res.jobs
    n = len(jobs.run[rows])
    counts = np.asarray(res.counts[rows], np.int64)
    return {
        "algorithm": np.full(n, spec.label, dtype=object),
        "privacy": np.full(n, alg.info.privacy, dtype=object),
        "privacy_measure": np.full(n, alg.info.claim, dtype=object),
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


def run_table(grids: SweepGrids, label: str, grid_results: Sequence[GridResult]) -> results.Table:
    """The per-run rows of the algorithm ``label`` in the configuration's instance order (then
    ε, δ, run), from its grid results (one per grid of its plan).

    The ``threshold`` column is ``"n/a"`` for an algorithm without threshold families.
    """
    config, alg = grids.config, grids.algorithms[label]
    blocks = {}
    for plan, res in zip(grids.grids[label], grid_results, strict=True):
        per_instance = len(res.jobs) // len(plan.group)
        for k, i in enumerate(plan.group):
            rows = slice(k * per_instance, (k + 1) * per_instance)
            blocks[i] = _instance_rows(plan.spec, alg, config, config.instances[i], res, rows)
    return results.concat([blocks[i] for i in range(len(config.instances))])


def run_algorithm(
    grids: SweepGrids,
    label: str,
    *,
    resume: bool = False,
    progress: bool | Progress = True,
    chunk_steps: int = 1 << 15,
    max_chunks: int | None = None,
) -> list[GridResult]:
    """Run the grids of the algorithm ``label`` of a sweep's plan, each with its checkpoint
    (`experiments.sweep.grids.GridPlan.checkpoint`); stops after a grid that did not finish
    (``max_chunks``). ``resume``, ``chunk_steps`` and ``max_chunks`` are those of `run`;
    ``progress``: a bar per grid, or a `jaxbai.engine.Progress` bar that follows them all
    (named by the grid's name)."""
    from jaxbai import engine

    config, alg = grids.config, grids.algorithms[label]
    grid_results = []
    for plan in grids.grids[label]:
        if isinstance(progress, engine.Progress):
            progress.name = plan.name
        res = engine.run_grid(
            alg,
            plan.jobs,
            seed=config.seed,
            max_samples=config.max_samples,
            draws=config.draws,
            share_deltas=config.share_deltas,
            kernel=config.kernel,
            device=config.device,
            checkpoint=plan.checkpoint,
            resume=resume,
            progress=progress,
            chunk_steps=chunk_steps,
            max_chunks=max_chunks,
        )
        grid_results.append(res)
        if unfinished(res):
            break
    return grid_results


def restored_note(grids: SweepGrids) -> str:
    """The line a resumed sweep prints: the cells (and runs) its checkpoints hold as finished
    (`jaxbai.engine.finished_jobs`; checked when each grid runs)."""
    from jaxbai import engine

    config = grids.config
    runs, cells = 0, 0
    for plans in grids.grids.values():
        for plan in plans:
            done = engine.finished_jobs(plan.checkpoint, len(plan.jobs))
            if done is not None:
                runs += int(done.sum())
                cells += int(done.reshape(-1, config.runs).all(axis=1).sum())
    total = grids.total_runs
    where = os.path.join(config.out, "checkpoints")
    return (
        f"resume: restored {cells} of {total // config.runs} cells ({runs} of {total} "
        f"runs) from {where}"
    )


def check_kernel(grids: SweepGrids) -> None:
    """With ``kernel = "fused"``, ValueError naming every algorithm and instance group the
    fused kernel would refuse (`jaxbai.engine.fused_unsupported`), before any of them runs."""
    from jaxbai import engine

    config = grids.config
    if config.kernel != "fused":  # "auto" is "xla"
        return
    platform = engine.select_devices(config.device)[0].platform
    refused = []
    for label, plans in grids.grids.items():
        for plan in plans:
            reason = engine.fused_unsupported(
                grids.algorithms[label],
                plan.jobs,
                platform=platform,
                draws=config.draws,
                share_deltas=config.share_deltas,
            )
            if reason is not None:
                refused.append(f"{label}: {reason}")
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
