"""The sweep's Python API: `run` a configuration, get its tables, figures and claims.

`resolve` turns what `run` is given (a `SweepConfig`, a preset name, a file's path or a
mapping) into a validated configuration; `run` runs every algorithm on the engine
(`experiments.sweep.engine_runs`), summarises the runs, draws the figures, checks the claims
and, given ``out``, writes the files (`experiments.sweep.outputs`); it returns a `SweepResult`.
`jaxbai`, pandas and matplotlib are imported when first needed.

Examples:
    >>> resolve({"instances": ["mu1"], "algorithms": ["ttucb"], "runs": 5}).runs
    5
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime
import os
import time
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from experiments import config
from experiments.analysis import results
from experiments.config import ConfigError, SweepConfig, grids
from experiments.sweep import distributed
from experiments.sweep.engine_runs import (
    check_kernel,
    engine_stats,
    restored_note,
    run_algorithm,
    run_table,
    unfinished,
)
from experiments.sweep.grids import SweepGrids
from experiments.sweep.outputs import (
    claim_out,
    holding_out,
    prepare_out,
    sweep_record,
    write_outputs,
)

if TYPE_CHECKING:  # at run time pandas and matplotlib are imported when first needed
    import pandas
    from matplotlib.figure import Figure

    from experiments.analysis.verdicts import Claim

__all__ = ["Interrupted", "SweepResult", "resolve", "run"]


class Interrupted(RuntimeError):
    """The engine stopped before every run of an algorithm finished (``max_chunks``); the
    checkpoints in ``out`` let ``run(..., resume=True)`` continue."""


@dataclasses.dataclass(frozen=True)
class SweepResult:
    """What a sweep produced.

    Attributes:
        config: the resolved configuration.
        runs: one row per run, the columns of ``runs.csv``
            (`experiments.analysis.results.RUN_COLUMNS`, per-arm values one column per arm,
            `experiments.analysis.results.to_frame`: text, int64, float64 or bool; float64
            with NaN where a value does not apply).
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


def run(
    config: SweepConfig | str | os.PathLike | Mapping[str, Any],
    *,
    out: str | os.PathLike | None = None,
    resume: bool = False,
    overwrite: bool = False,
    progress: bool = True,
    command: Sequence[str] | None = None,
    chunk_steps: int = 1 << 15,
    max_chunks: int | None = None,
    figures: bool = True,
) -> SweepResult:
    """Run a sweep: every algorithm of the configuration on its grid, then the tables, figures
    and claims.

    Args:
        config: a `SweepConfig`, a preset name (``"quick"``), an experiment file's path, or a
            mapping in the experiment-file schema (`resolve`).
        out: the output directory (runs.csv, summary.csv, sweep.json, figures/, report.md and
            the engine checkpoints, `experiments.sweep`); None writes nothing. It replaces the
            configuration's ``out``.
        resume: continue from the checkpoints in ``out`` (the same grid).
        overwrite: replace the results of an earlier sweep in ``out`` (its checkpoints are
            removed first); without it, or ``resume``, an ``out`` that holds them is refused.
        progress: show one progress bar (on stderr; one updating widget in a notebook,
            `jaxbai.engine.Progress`): the grid and its stage (compiling, running, then writing
            figures and report), the runs done, samples/s and the grid's estimated ETA; and,
            with ``resume``, one line saying how many cells the checkpoints restore.
        command: the command line recorded in ``sweep.json`` (the CLI passes its own).
        chunk_steps: engine steps per chunk (between checkpoints).
        max_chunks: stop each engine grid after this many chunks (simulates an interruption).
        figures: False: draw no figures (tables and report only, for an exploratory sweep);
            ``python -m experiments.plot OUT/runs.csv`` draws them later from the results.

    Raises:
        ValueError: an invalid configuration (`experiments.config.ConfigError`), an
            unknown preset, ``resume`` without ``out``, an output directory that takes no
            files or holds an earlier sweep's results (without ``resume`` or ``overwrite``),
            or a checkpoint written for another grid.
        Interrupted: ``max_chunks`` stopped an algorithm before its runs finished.
    """
    from experiments.analysis import drawing, markdown_report, stats
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
    grids = SweepGrids.of(sweep_config)
    if out is not None:
        grids = grids.with_checkpoints()
    check_kernel(grids)
    writes = out is not None and distributed.is_writer()  # process 0 writes the results
    with contextlib.ExitStack() as held:
        if out is not None:

            def claim() -> None:  # on the writer: hold out for the whole sweep, then check it
                held.enter_context(holding_out(sweep_config.out, command))
                claim_out(sweep_config.out, resume=resume, overwrite=overwrite)

            distributed.claim(claim)
            prepare_out(sweep_config.out)  # after every check that writes nothing
        started = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
        clock = time.perf_counter()
        tables, per_algorithm = [], {}
        with engine.Progress(grids.total_runs, enabled=progress) as bar:
            if resume:
                bar.note(restored_note(grids))
            for spec in sweep_config.algorithms:
                grid_results = run_algorithm(
                    grids,
                    spec.label,
                    resume=resume,
                    progress=bar,
                    chunk_steps=chunk_steps,
                    max_chunks=max_chunks,
                )
                if unfinished(grid_results[-1]):
                    raise Interrupted(f"interrupted during {spec.label}")
                tables.append(run_table(grids, spec.label, grid_results))
                per_algorithm[spec.label] = engine_stats(grid_results)
            bar.name = ""
            drawn = "figures and report" if figures else "report"
            bar.stage(f"writing {drawn}" if writes else f"drawing {drawn}", postfix="")
            table = results.concat(tables)
            summary = stats.summarize(table, stats.allocation_targets(table, grids.algorithms))
            drawings = (
                drawing.draw_figures(summary, sweep_config, grids.algorithms) if figures else {}
            )
            text, claims = markdown_report.report_from_summary(
                summary, sweep_config, grids.algorithms
            )
            paths: dict[str, object] = {}
            if writes:
                record = sweep_record(
                    sweep_config, per_algorithm, started=started, clock=clock, command=command
                )
                paths = write_outputs(sweep_config, table, summary, drawings, text, record)
            bar.stage("done")
        return SweepResult(
            config=sweep_config,
            runs=results.to_frame(table, results.RUN_COLUMNS),
            cells=results.to_frame(summary, stats.SUMMARY_COLUMNS),
            figures=drawings,
            claims=tuple(claims),
            report=text,
            engine=per_algorithm,
            paths=paths,
        )
