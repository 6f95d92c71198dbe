"""Run a grid: one engine grid per algorithm (and per K), then CSV, summary, JSON, figures, report.

``python -m experiments.sweep`` (no arguments) runs the ``quick`` preset: global DP on mu1 and
mu2, TTUCB, AdaP-TT, AdaP-TT* and DP-SE at a few ε, 100 runs — a few minutes on two CPU cores.
The presets are the experiment files of ``experiments/config/grids/`` (see ``--help``); your own
grid is a file too (``--config my_grid.toml``, schema in `experiments.config`), or inline instances
(``--means 0.31 0.30 0.12``, ``--family gaussian --sigma 0.3``, ``--family beta``). Flags
override the file's values. Output directory (``--out``, default ``results/<name>``):

    runs.csv        one row per run (`experiments.analysis.results.RUN_COLUMNS`), with its final
                    counts N_a (``counts``: K integers separated by spaces, since instances
                    of one sweep may have different K) and ``reported_tau`` (the stopping time
                    a `jaxbai.base.ReportsSamples` algorithm reports, e.g. the published
                    AdaP-TT's Σ_a 2^⌊log₂ N_a⌋; −1 for every other algorithm)
    summary.csv     one row per cell: mean, std, se, median, error rate + 95% Wilson interval,
                    censored count, rounds of adaptivity (mean, std, max), mean reported
                    stopping time, mean empirical proportions N_a/τ (± std) against the
                    allocation ω* the algorithm targets (`experiments.analysis.stats`)
    sweep.json      the resolved configuration (``--config results/<name>/sweep.json`` reruns
                    it exactly), versions, JAX backend and devices, git commit, wall time,
                    samples/s
    figures/        PNG and PDF (`experiments.analysis.plot`); ``allocations_<instance>.png``:
                    empirical proportions against ω*
    report.md       claims of Section 5, rounds of adaptivity, allocations against ω*
                    (`experiments.analysis.report`)
    checkpoints/    engine checkpoints per algorithm (``--resume`` continues from them)

Instances of different families or K run as separate engine grids whose rows are merged in
the configuration's order; a job's result depends only on (seed, run, ε, δ), so they equal the
rows of separate sweeps.

From Python, `run` takes a configuration — a `experiments.config.SweepConfig`, a preset name,
an experiment file's path or a mapping in the experiment-file schema — and returns a
`SweepResult`: the same per-run and per-cell tables as pandas DataFrames, the resolved
configuration, the figures and the claims. It writes the files above only when given ``out``::

    import jaxbai
    from experiments import sweep

    jaxbai.register("my_alg", my_factory, "My algorithm")
    result = sweep.run({"name": "mine", "instances": ["mu1"], "algorithms": ["my_alg", "ttucb"],
                        "global_epsilons": [1.0], "runs": 100})
    result.cells[["algorithm", "epsilon", "mean", "error_rate"]]

The command line (`experiments.sweep.cli`) is a thin layer over `run`.
"""

from __future__ import annotations

import dataclasses
import datetime
import os
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from experiments import config
from experiments.analysis import results
from experiments.config import SweepConfig, grids
from experiments.config.specs import AlgorithmSpec, ConfigError, InstanceSpec, instance_groups
from experiments.sweep import distributed

if TYPE_CHECKING:  # at run time jaxbai, pandas and matplotlib are imported when first needed
    import pandas
    from matplotlib.figure import Figure

    from experiments.analysis.claims import Claim
    from jaxbai.base import Algorithm
    from jaxbai.engine import GridResult

__all__ = [
    "Interrupted",
    "SweepResult",
    "engine_stats",
    "make_algorithm",
    "prepare_out",
    "reported_tau",
    "resolve",
    "run",
    "run_algorithm",
    "run_table",
    "unfinished",
    "write_outputs",
]


class Interrupted(RuntimeError):
    """The engine stopped before every run of an algorithm finished (``max_chunks``); the
    checkpoints in ``out`` let ``run(..., resume=True)`` continue."""


@dataclasses.dataclass(frozen=True)
class SweepResult:
    """What a sweep produced.

    Attributes:
        config: the resolved configuration.
        runs: one row per run, the columns of ``runs.csv``
            (`experiments.analysis.results.RUN_COLUMNS`; text columns of dtype object, the
            others int64, float64 or bool).
        cells: one row per (algorithm, instance, ε, δ) cell, the columns of ``summary.csv``
            (`experiments.analysis.stats.SUMMARY_COLUMNS`, dtypes as in ``runs``).
        figures: the figures by file stem (``tau_vs_epsilon_global``, ``allocations_mu1``, …).
        claims: the claims of Section 5 checked on these runs (the report's claims table).
        report: the Markdown report (``report.md``).
        engine: per algorithm label, the engine's wall time, samples and throughput.
        paths: the files written, by kind (empty when nothing was written).
    """

    config: SweepConfig
    runs: pandas.DataFrame
    cells: pandas.DataFrame
    figures: Mapping[str, Figure]
    claims: tuple[Claim, ...]
    report: str
    engine: Mapping[str, dict]
    paths: Mapping[str, object]

    def claims_frame(self) -> pandas.DataFrame:
        """The claims as a DataFrame: key, statement, evidence, verdict (one row per claim)."""
        import pandas

        columns = ("key", "statement", "evidence", "verdict")
        return pandas.DataFrame([c[:4] for c in self.claims], columns=list(columns))


def resolve(source: SweepConfig | str | os.PathLike | Mapping[str, Any]) -> SweepConfig:
    """The validated configuration of ``source``: a `SweepConfig` (returned as is), a preset
    name (`experiments.config.grids.PRESETS`), the path of an experiment file (TOML) or of a
    sweep's ``sweep.json``, or a mapping in the experiment-file schema (`experiments.config`).

    Raises:
        ConfigError: an unknown preset or missing file, or an invalid configuration (a
            `ValueError`).
    """
    if isinstance(source, SweepConfig):
        return config.validate(source)
    if isinstance(source, Mapping):
        return config.parse(source)
    if not isinstance(source, (str, os.PathLike)):
        raise ConfigError((), f"a configuration, preset, path or mapping, got {type(source)}")
    name = os.fspath(source)
    if name in grids.PRESETS:
        return grids.config_from_preset(name)
    if name.endswith((".toml", ".json")) or os.path.sep in name:
        return config.load(name)
    raise ConfigError(
        (), f"unknown preset {name!r} (expected one of {sorted(grids.PRESETS)} or a file's path)"
    )


def make_algorithm(name: str, threshold: str) -> Algorithm:
    """The registered algorithm ``name``, with the stopping-threshold family ``threshold`` if its
    entry has threshold families (DP-SE has none).

    Raises:
        ValueError: ``name`` is not registered.
    """
    return AlgorithmSpec(name, name).build(threshold)


def reported_tau(alg: Algorithm, counts: np.ndarray) -> np.ndarray:
    """``reported_tau`` of runs with final ``counts`` ``(n, K)``: the algorithm's
    `jaxbai.base.ReportsSamples.reported_samples` where it has one, else −1 (int64 ``(n,)``)."""
    from jaxbai.base import ReportsSamples

    counts = np.asarray(counts, np.int64)
    if not isinstance(alg, ReportsSamples):
        return np.full(len(counts), -1, np.int64)
    return np.asarray(alg.reported_samples(counts), np.int64).reshape(len(counts))


def _instance_rows(
    spec: AlgorithmSpec, sweep_config: SweepConfig, instance: InstanceSpec, res, rows: slice
) -> results.Table:
    """The per-run rows of one instance's block of a grid result (order: ε, δ, run)."""
    import jaxbai

    jobs = res.jobs
    n = len(jobs.run[rows])
    entry = jaxbai.ALGORITHMS.get_entry(spec.algorithm)
    counts = np.asarray(res.counts[rows], np.int64)
    return {
        "algorithm": np.full(n, spec.label, dtype=object),
        "privacy": np.full(n, entry.privacy, dtype=object),
        "instance": np.full(n, instance.name, dtype=object),
        "means": np.full(n, results.format_means(instance.means), dtype=object),
        "K": np.full(n, instance.num_arms, np.int64),
        "epsilon": np.asarray(jobs.epsilon[rows], np.float64),
        "delta": np.asarray(jobs.delta[rows], np.float64),
        "threshold": np.full(n, spec.threshold_of(sweep_config.threshold), dtype=object),
        "seed": np.full(n, sweep_config.seed, np.int64),
        "run": np.asarray(jobs.run[rows], np.int64),
        "tau": np.asarray(res.tau[rows], np.int64),
        "recommendation": np.asarray(res.recommendation[rows], np.int64),
        "correct": np.asarray(res.correct[rows], bool),
        "censored": np.asarray(res.censored[rows], bool),
        "rounds": np.asarray(res.rounds[rows], np.int64),
        "counts": results.format_counts(counts),
        "reported_tau": reported_tau(spec.build(sweep_config.threshold), counts),
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


def _checkpoint(sweep_config: SweepConfig, label: str, group: tuple[int, ...]) -> str:
    """``checkpoints/<label>.npz``; with several groups, one file per family and K."""
    name = label
    if len(instance_groups(sweep_config.instances)) > 1:
        first = sweep_config.instances[group[0]]
        name = f"{label}.{first.family}-K{first.num_arms}"
    return os.path.join(sweep_config.out, "checkpoints", f"{name}.npz")


def run_algorithm(
    spec: AlgorithmSpec,
    sweep_config: SweepConfig,
    *,
    checkpoints: bool = True,
    resume: bool = False,
    progress: bool = True,
    chunk_steps: int = 1 << 15,
    max_chunks: int | None = None,
) -> list[GridResult]:
    """One engine grid per group of instances (same family and K), each with its checkpoint in
    ``sweep_config.out`` if ``checkpoints``; stops after a group that did not finish
    (``max_chunks``). ``resume``, ``progress``, ``chunk_steps`` and ``max_chunks`` are those of
    `run`."""
    from jaxbai import engine

    alg = spec.build(sweep_config.threshold)
    eps = sweep_config.epsilons_for(spec)
    grid_results = []
    for group in instance_groups(sweep_config.instances):
        instances = [sweep_config.instances[i].build() for i in group]
        jobs = engine.grid_jobs(instances, eps, sweep_config.deltas, sweep_config.runs)
        if progress:
            print(f"[{spec.label}] {len(jobs)} runs", file=sys.stderr)
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


def engine_stats(grid_results: Sequence[GridResult]) -> dict:
    """Wall time and throughput of one algorithm's engine calls, together."""
    samples = sum(r.samples for r in grid_results)
    wall = sum(r.wall_time for r in grid_results)
    lane_steps = sum(r.lane_steps for r in grid_results)
    return {
        "jobs": sum(len(r.jobs) for r in grid_results),
        "censored": int(sum(r.censored.sum() for r in grid_results)),
        "wall_time_s": wall,
        "samples": samples,
        "lane_steps": lane_steps,
        "efficiency": samples / max(lane_steps, 1),
        "samples_per_s": samples / max(wall, 1e-9),
        "shared_deltas": any(r.shared_deltas for r in grid_results),
        "kernel": grid_results[0].kernel,
    }


def unfinished(res: GridResult) -> bool:
    """Did the engine stop (``--max-chunks``) before every job finished? (τ = 0 marks them.)"""
    return bool((res.censored & (res.tau == 0)).any())


def write_outputs(
    sweep_config: SweepConfig,
    table: results.Table,
    summary: results.Table,
    figures: Mapping[str, Figure],
    text: str,
    sidecar: dict,
) -> dict[str, object]:
    """Write the runs, summary, figures, report and ``sweep.json`` into ``sweep_config.out``;
    returns the paths written, by kind."""
    from experiments.analysis import plot, stats

    out = sweep_config.out
    paths: dict[str, object] = {
        "runs": os.path.join(out, "runs.csv"),
        "summary": os.path.join(out, "summary.csv"),
        "sidecar": os.path.join(out, "sweep.json"),
        "report": os.path.join(out, "report.md"),
    }
    results.write_csv(table, paths["runs"], results.RUN_COLUMNS)
    results.write_csv(summary, paths["summary"], stats.SUMMARY_COLUMNS)
    paths["figures"] = plot.save_figures(figures, os.path.join(out, "figures"), sweep_config)
    with open(paths["report"], "w") as f:
        f.write(text + "\n")
    sidecar["files"] = {k: v for k, v in paths.items() if k != "sidecar"}
    results.write_json(sidecar, paths["sidecar"])
    return paths


def prepare_out(out: str) -> None:
    """Create ``out/checkpoints`` and check that both directories take files, before anything
    compiles.

    Raises:
        ValueError: naming the path that cannot be created or written (``out`` is a file, a
            read-only directory, …).
    """
    checkpoints = os.path.join(out, "checkpoints")
    try:
        os.makedirs(checkpoints, exist_ok=True)
        for directory in (out, checkpoints):
            fd, probe = tempfile.mkstemp(dir=directory, prefix=".write-test-")
            os.close(fd)
            os.remove(probe)
    except OSError as err:
        path = err.filename if err.filename is not None else out
        raise ValueError(f"output directory {out}: {path}: {err.strerror}") from None


def run(
    config: SweepConfig | str | os.PathLike | Mapping[str, Any],
    *,
    out: str | os.PathLike | None = None,
    resume: bool = False,
    progress: bool = True,
    command: Sequence[str] | None = None,
    chunk_steps: int = 1 << 15,
    max_chunks: int | None = None,
) -> SweepResult:
    """Run a sweep: every algorithm of the configuration on its grid, then the tables, figures
    and claims.

    Args:
        config: a `SweepConfig`, a preset name (``"quick"``), an experiment file's path, or a
            mapping in the experiment-file schema (`resolve`).
        out: the output directory (runs.csv, summary.csv, sweep.json, figures/, report.md and
            the engine checkpoints, module docstring); None writes nothing. It replaces the
            configuration's ``out``.
        resume: continue from the checkpoints in ``out``.
        progress: print a line per algorithm and the engine's progress (on stderr).
        command: the command line recorded in ``sweep.json`` (the CLI passes its own).
        chunk_steps: engine steps per chunk (between checkpoints).
        max_chunks: stop each engine grid after this many chunks (simulates an interruption).

    Raises:
        ValueError: an invalid configuration (`experiments.config.specs.ConfigError`), an
            unknown preset, ``resume`` without ``out``, an output directory that takes no
            files, or a checkpoint written for another grid.
        Interrupted: ``max_chunks`` stopped an algorithm before its runs finished.
    """
    from experiments.analysis import plot, report, stats
    from jaxbai import engine

    if resume and out is None:
        raise ValueError("resume=True continues from the checkpoints in out: give out")
    if chunk_steps < 1 or (max_chunks is not None and max_chunks < 1):
        raise ValueError("chunk_steps and max_chunks must be positive")
    sweep_config = resolve(config)
    if out is not None:
        sweep_config = dataclasses.replace(sweep_config, out=os.fspath(out))
    if sweep_config.device is not None:
        engine.select_devices(sweep_config.device)
    check_kernel(sweep_config)
    writes = out is not None and distributed.is_writer()  # process 0 writes the results
    if out is not None:
        prepare_out(sweep_config.out)  # after every check that writes nothing
    started = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
    clock = time.perf_counter()
    tables, per_algorithm = [], {}
    for spec in sweep_config.algorithms:
        grid_results = run_algorithm(
            spec,
            sweep_config,
            checkpoints=out is not None,
            resume=resume,
            progress=progress,
            chunk_steps=chunk_steps,
            max_chunks=max_chunks,
        )
        if unfinished(grid_results[-1]):
            raise Interrupted(f"interrupted during {spec.label}")
        tables.append(run_table(spec, sweep_config, grid_results))
        per_algorithm[spec.label] = engine_stats(grid_results)
    table = results.concat(tables)
    summary = stats.summarize(
        table, stats.allocation_targets(table, stats.algorithms_of(sweep_config))
    )
    figures = plot.draw_figures(summary, sweep_config)
    text, claims = report.report_from_table(table, sweep_config, "runs.csv")
    paths: dict[str, object] = {}
    if writes:
        engine_wall = sum(s["wall_time_s"] for s in per_algorithm.values())
        samples = sum(s["samples"] for s in per_algorithm.values())
        sidecar = {
            "started_utc": started,
            "command": list(command) if command is not None else None,
            "config": sweep_config.to_dict(),
            "out": sweep_config.out,
            "versions": results.package_versions(),
            "jax": results.jax_environment(),
            "processes": distributed.environment(),
            "git_commit": results.git_commit(os.path.dirname(os.path.abspath(__file__))),
            "error_interval": "Wilson score, 95%",
            "engine": per_algorithm,
            "engine_wall_time_s": engine_wall,
            "samples": samples,
            "samples_per_s": samples / max(engine_wall, 1e-9),
            "note": "samples count the runs simulated by this invocation (not resumed ones)",
            "wall_time_s": time.perf_counter() - clock,
        }
        paths = write_outputs(sweep_config, table, summary, figures, text, sidecar)
    return SweepResult(
        config=sweep_config,
        runs=results.to_frame(table, results.RUN_COLUMNS),
        cells=results.to_frame(summary, stats.SUMMARY_COLUMNS),
        figures=figures,
        claims=tuple(claims),
        report=text,
        engine=per_algorithm,
        paths=paths,
    )
