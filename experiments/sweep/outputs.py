"""The files of a sweep: its output directory, checked before anything compiles, and what it
writes there (``runs.csv``, ``summary.csv``, figures, ``report.md``, ``sweep.json``).

`claim_out` refuses an ``out`` an earlier sweep wrote (unless resumed or overwritten);
`prepare_out` creates ``out/checkpoints`` and checks that both directories take files;
`sweep_record` is the record of a run (``sweep.json``: the resolved configuration, versions,
devices, git commit, engine throughput); `write_outputs` writes everything (the layout is in
`experiments.sweep`).

Examples:
    >>> import tempfile
    >>> with tempfile.TemporaryDirectory() as out:
    ...     prepare_out(out)
    ...     sorted(os.listdir(out))
    ['checkpoints']
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
import time
from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING

from experiments.analysis import provenance, results
from experiments.config import SweepConfig
from experiments.sweep import distributed, engine_runs

if TYPE_CHECKING:  # at run time matplotlib is imported when first needed
    from matplotlib.figure import Figure

__all__ = [
    "LOCK_FILE",
    "RESULT_FILES",
    "claim_out",
    "holding_out",
    "prepare_out",
    "previous_sweep",
    "sweep_record",
    "write_outputs",
]


RESULT_FILES = ("sweep.json", "runs.csv", "summary.csv", "report.md")
"""The files a finished sweep leaves in its output directory (beside figures/ and checkpoints/)."""


def previous_sweep(out: str) -> str | None:
    """What an earlier sweep left in ``out`` (its first result file, or ``checkpoints/`` when only
    checkpoints are there: an unfinished sweep), None where it left nothing.

    Examples:
        >>> import tempfile
        >>> with tempfile.TemporaryDirectory() as out:
        ...     before = previous_sweep(out)
        ...     open(os.path.join(out, "runs.csv"), "w").close()
        ...     before, previous_sweep(out)
        (None, 'runs.csv')
    """
    for name in RESULT_FILES:
        if os.path.exists(os.path.join(out, name)):
            return name
    checkpoints = os.path.join(out, "checkpoints")
    if os.path.isdir(checkpoints) and os.listdir(checkpoints):
        return "checkpoints/"
    return None


LOCK_FILE = ".sweep.lock"
"""The file in ``out`` whose exclusive lock a running sweep holds (`holding_out`)."""


@contextlib.contextmanager
def holding_out(out: str, command: Sequence[str] | None = None) -> Iterator[None]:
    """Hold ``out`` for one sweep: an exclusive lock on ``out/.sweep.lock`` (created, never
    through a link), which records who holds it, until the block ends. Two sweeps on one fresh
    ``out`` both passed `claim_out` and the second's results replaced the first's.

    Raises:
        ValueError: another sweep holds ``out`` (naming its process and command).
    """
    import fcntl  # POSIX only: imported where a sweep writes

    path = os.path.join(out, LOCK_FILE)
    created = not os.path.exists(out)
    if not created and not os.path.isdir(out):
        raise ValueError(f"output directory {out}: {out}: Not a directory")
    try:
        os.makedirs(out, exist_ok=True)
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o644)
    except OSError as err:
        where = err.filename if err.filename is not None else out
        raise ValueError(f"output directory {out}: {where}: {err.strerror}") from None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.read(fd, 4096).decode(errors="replace").strip() or "another sweep"
            raise ValueError(
                f"output directory {out} is in use by {holder}; wait for it to end or choose "
                "another --out"
            ) from None
        os.ftruncate(fd, 0)
        who = " ".join(command) if command else "a sweep"
        os.write(fd, f"process {os.getpid()} ({who})".encode())
        yield
    except BaseException:
        if created:  # a refused or failed sweep leaves no directory it made (cf. claim_out)
            with contextlib.suppress(OSError):
                os.unlink(path)
                os.rmdir(out)
        raise
    finally:
        os.close(fd)  # releases the lock; the file stays (removing it would race a waiter)


def claim_out(out: str, *, resume: bool = False, overwrite: bool = False) -> None:
    """Check that ``out`` may take this sweep's results: a directory an earlier sweep wrote is
    used only to continue it (``resume``: its checkpoints must be of the same grid) or to replace
    it (``overwrite``: its checkpoints are removed here, so none of the old grid's lies beside
    the new one's). Run by the process that writes the results, before `prepare_out`.

    Raises:
        ValueError: ``out`` holds an earlier sweep's results and neither ``resume`` nor
            ``overwrite`` is set, or both are.
    """
    if resume and overwrite:
        raise ValueError("resume continues the sweep in out, overwrite replaces it: not both")
    left = previous_sweep(out) if os.path.isdir(out) else None
    if left is not None and not (resume or overwrite):
        raise ValueError(
            f"output directory {out} holds an earlier sweep's results ({left}): --resume "
            "continues the same grid, --overwrite replaces them; or choose another --out"
        )
    checkpoints = os.path.join(out, "checkpoints")
    if overwrite and os.path.isdir(checkpoints) and not os.path.islink(checkpoints):
        shutil.rmtree(checkpoints)


def prepare_out(out: str) -> None:
    """Create ``out/checkpoints`` and check that both directories take files, before anything
    compiles.

    Raises:
        ValueError: naming the path that cannot be created or written (``out`` is a file, a
            read-only directory, …), or ``out/checkpoints`` or ``out/figures`` if it is a
            symbolic link.
    """
    checkpoints = os.path.join(out, "checkpoints")
    results.refuse_link(os.path.join(out, "figures"))  # now, not after the grids ran
    try:
        results.output_directory(checkpoints)  # never a link planted in a received folder
        for directory in (out, checkpoints):
            fd, probe = tempfile.mkstemp(dir=directory, prefix=".write-test-")
            os.close(fd)
            os.remove(probe)
    except OSError as err:
        path = err.filename if err.filename is not None else out
        raise ValueError(f"output directory {out}: {path}: {err.strerror}") from None


def sweep_record(
    sweep_config: SweepConfig,
    engine: dict[str, dict],
    *,
    started: str,
    clock: float,
    command: Sequence[str] | None,
) -> dict:
    """The record of a sweep, ``sweep.json`` (`write_outputs` adds the files it wrote).

    Args:
        sweep_config: the resolved configuration.
        engine: per algorithm label, `experiments.sweep.engine_runs.engine_stats`.
        started: when the sweep started (UTC, ISO 8601).
        clock: `time.perf_counter` when it started.
        command: the command line, if any.
    """
    engine_wall = sum(s["wall_time_s"] for s in engine.values())
    samples = sum(s["samples"] for s in engine.values())
    return {
        "started_utc": started,
        "command": list(command) if command is not None else None,
        "config": sweep_config.to_dict(),
        "out": sweep_config.out,
        "versions": provenance.package_versions(),
        "jax": provenance.jax_environment(),
        "processes": distributed.environment(),
        "git_commit": provenance.git_commit(os.path.dirname(os.path.abspath(__file__))),
        "error_interval": "Wilson score, 95%",
        "engine": engine,
        "engine_wall_time_s": engine_wall,
        "samples": samples,
        "samples_per_s": engine_runs.rate(samples, engine_wall),
        "resumed_jobs": sum(s["resumed_jobs"] for s in engine.values()),
        "note": "samples count the runs simulated by this invocation, not the resumed_jobs "
        "restored from checkpoints; samples_per_s is null where none was simulated",
        "wall_time_s": time.perf_counter() - clock,
    }


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
    from experiments.analysis import drawing, stats

    out = sweep_config.out
    paths: dict[str, object] = {
        "runs": os.path.join(out, "runs.csv"),
        "summary": os.path.join(out, "summary.csv"),
        "sidecar": os.path.join(out, "sweep.json"),
        "report": os.path.join(out, "report.md"),
    }
    results.write_csv(table, paths["runs"], results.RUN_COLUMNS)
    results.write_csv(summary, paths["summary"], stats.SUMMARY_COLUMNS)
    paths["figures"] = drawing.save_figures(figures, os.path.join(out, "figures"), sweep_config)
    _remove_stale_figures(os.path.join(out, "figures"), paths["figures"])
    with results.replacing(paths["report"]) as f:
        f.write(text + "\n")
    sidecar["files"] = {k: v for k, v in paths.items() if k != "sidecar"}
    results.write_json(sidecar, paths["sidecar"])
    return paths


def _remove_stale_figures(directory: str, written: list[str]) -> None:
    """Remove the figure files of an earlier sweep in ``directory`` (one this sweep's --resume or
    --overwrite replaces) that this sweep did not write, so that figures/ never shows another
    grid (or, with ``--no-figures``, any). A linked directory is left alone."""
    from experiments.config.schema import FORMATS

    if os.path.islink(directory) or not os.path.isdir(directory):
        return
    keep = {os.path.basename(path) for path in written}
    for name in os.listdir(directory):
        path = os.path.join(directory, name)
        stale = name not in keep and name.rsplit(".", 1)[-1] in FORMATS
        if stale and os.path.isfile(path) and not os.path.islink(path):
            os.remove(path)
