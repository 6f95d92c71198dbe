"""Checkpoints of a grid's finished jobs: fingerprint, atomic write, read.

Between chunks the host writes the finished jobs' results (``done``, ``tau``, ``stopped``,
``recommendation``, ``rounds``, one entry per job, and ``counts``, the final N_a, one row of K
per job; numpy) to an ``.npz`` file. A write goes to
a temporary file that is fsynced and renamed over the checkpoint, then the directory is
fsynced: a crash mid-write leaves the previous checkpoint intact (a leftover temporary file is
ignored).

On resume, finished jobs are kept and every other job is run from its start — which gives
bitwise the same result as an uninterrupted run, since a job's trajectory depends only on its
key. A checkpoint records the `grid_fingerprint` of its grid (format version, jaxbai's version,
algorithm configuration and plugin code, jobs, seed, budget) and is refused for any other grid,
with a message that names what changed. A checkpoint of an older format is refused: version 1
(before the final counts were recorded) with a message that says to rerun without resuming, as
its jobs' counts are lost; version 2 (a fingerprint without named parts) as a different grid,
"or by an older jaxbai".

In a grid over several processes (`jaxbai.engine._distributed`) each process writes its own
shard (`shard_path`); `read_checkpoint` pools a checkpoint and every shard of it, so a grid
can be resumed with any number of processes.
"""

from __future__ import annotations

import contextlib
import dataclasses
import glob
import hashlib
import os
import pickle
import re
import sys
import zipfile
from typing import Any

import jax
import numpy as np

from jaxbai.base import Algorithm
from jaxbai.engine.jobs import Jobs
from jaxbai.version import __version__

__all__ = [
    "CHECKPOINT_VERSION",
    "FINGERPRINT_PARTS",
    "empty_results",
    "fingerprint_changes",
    "finished_jobs",
    "grid_fingerprint",
    "read_checkpoint",
    "shard_path",
    "write_checkpoint",
]

CHECKPOINT_VERSION = 3
"""Format version; part of every fingerprint, so a new format refuses older checkpoints.
Version 2 added ``counts``, version 3 the fingerprint's named parts."""


def _code(module: str) -> str:
    """SHA-256 (16 hex digits) of the source of ``module`` where it is not jaxbai's own (whose
    version `grid_fingerprint` covers): a plugin's, a user's; '' where there is no file."""
    if module == "jaxbai" or module.startswith("jaxbai."):
        return ""
    path = getattr(sys.modules.get(module), "__file__", None)
    try:
        with open(path or "", "rb") as f:
            return hashlib.sha256(f.read()).hexdigest()[:16]
    except OSError:
        return ""


def _named(thing: Any) -> str:
    """``module.qualname`` of a class or callable, with its module's `_code`: a changed plugin
    module changes every fingerprint that names it."""
    module = getattr(thing, "__module__", "") or ""
    return f"{module}.{thing.__qualname__}@{_code(module)}"


def _describe(alg: Algorithm) -> str:
    """A stable text description of an algorithm configuration: every field of a dataclass
    (recursively); for any other object, its type, name and `jaxbai.base.AlgorithmInfo` (make
    an algorithm a dataclass for a fingerprint that sees all of its configuration). Classes and
    callables outside jaxbai carry the hash of their module's source (`_named`)."""
    if not dataclasses.is_dataclass(alg):
        return f"{_named(type(alg))}(name={alg.name!r}, info={alg.info!r})"
    fields = []
    for field in dataclasses.fields(alg):
        if not field.compare:  # metadata that no result depends on (a Top Two guarantee)
            continue
        value = getattr(alg, field.name)
        if dataclasses.is_dataclass(value) and not isinstance(value, type):
            fields.append(f"{field.name}={_describe(value)}")
            continue
        if callable(value) and hasattr(value, "__qualname__"):
            value = _named(value)
        fields.append(f"{field.name}={value!r}")
    return f"{_named(type(alg))}({', '.join(fields)})"


FINGERPRINT_PARTS = {
    "format": "the checkpoint format",
    "jaxbai": "jaxbai's version",
    "algorithm": "the algorithm, its options or its plugin code",
    "jobs": "the jobs (instances, ε, δ, runs)",
    "seed": "the seed",
    "budget": "the sample budget",
}
"""The parts of a `grid_fingerprint`, with what each covers."""


def grid_fingerprint(alg: Algorithm, jobs: Jobs, seed: int, max_samples: int) -> str:
    """Everything a grid's results depend on, as ``name=value`` parts (`FINGERPRINT_PARTS`)
    joined by ``;``: the format version, jaxbai's version, the SHA-256 of the algorithm's
    configuration and the source of any plugin code it names (`_describe`), the SHA-256 of
    the jobs, the seed and the budget. A refused resume names the parts that differ
    (`fingerprint_changes`)."""
    jobs_digest = hashlib.sha256()
    for leaf in jax.tree_util.tree_leaves(jobs):
        jobs_digest.update(np.ascontiguousarray(leaf).tobytes())
    parts = {
        "format": str(CHECKPOINT_VERSION),
        "jaxbai": __version__,
        "algorithm": hashlib.sha256(_describe(alg).encode()).hexdigest(),
        "jobs": jobs_digest.hexdigest(),
        "seed": str(seed),
        "budget": str(max_samples),
    }
    return ";".join(f"{name}={value}" for name, value in parts.items())


def fingerprint_changes(found: str, expected: str) -> list[str]:
    """What differs between two `grid_fingerprint` values, in `FINGERPRINT_PARTS`' words; [] if
    either is not made of its parts (a checkpoint of an older jaxbai).

    Examples:
        >>> fingerprint_changes("format=3;seed=0;budget=9", "format=3;seed=1;budget=10")
        ['the seed', 'the sample budget']
        >>> fingerprint_changes("9f86d08", "format=3;seed=1")
        []
    """
    old, new = _parts(found), _parts(expected)
    if old is None or new is None:
        return []
    return [words for name, words in FINGERPRINT_PARTS.items() if old.get(name) != new.get(name)]


def _parts(fingerprint: str) -> dict[str, str] | None:
    """A `grid_fingerprint`'s parts by name; None if it is not made of them."""
    pairs = [part.partition("=") for part in fingerprint.split(";")]
    if not all(sep and name in FINGERPRINT_PARTS for name, sep, _ in pairs):
        return None
    return {name: value for name, _, value in pairs}


def empty_results(num_jobs: int, num_arms: int) -> dict[str, np.ndarray]:
    """Host results of ``num_jobs`` jobs of ``num_arms`` arms, none finished."""
    return {
        "done": np.zeros(num_jobs, bool),
        "tau": np.zeros(num_jobs, np.int64),
        "stopped": np.zeros(num_jobs, bool),
        "recommendation": np.full(num_jobs, -1, np.int32),
        "rounds": np.full(num_jobs, -1, np.int32),
        "counts": np.zeros((num_jobs, num_arms), np.int64),
    }


def write_checkpoint(path: str, fingerprint: str, results: dict[str, np.ndarray]) -> None:
    """Atomically write finished results: temporary file, fsync, rename, fsync the directory.

    A failed write (full disk, read-only directory) removes its temporary file where it can and
    raises the original `OSError`.
    """
    directory = os.path.dirname(os.path.abspath(path))
    tmp = f"{path}.tmp"
    try:
        with open(tmp, "wb") as f:
            np.savez(f, fingerprint=np.array(fingerprint), **results)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.remove(tmp)
        raise
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def shard_path(path: str, process: int) -> str:
    """The checkpoint shard that process ``process`` writes: ``grid.npz`` → ``grid.process3.npz``.

    Examples:
        >>> shard_path("out/ttucb.npz", 3)
        'out/ttucb.process3.npz'
    """
    root, ext = os.path.splitext(path)
    return f"{root}.process{process}{ext}"


def _checkpoint_files(path: str) -> list[str]:
    """``path`` and its shards that exist (leftover temporary files excluded)."""
    root, ext = os.path.splitext(path)
    shard = re.compile(re.escape(root) + r"\.process\d+" + re.escape(ext))
    shards = sorted(f for f in glob.glob(glob.escape(root) + ".process*") if shard.fullmatch(f))
    return [f for f in [path, *shards] if os.path.exists(f)]


_DAMAGED = (EOFError, ValueError, KeyError, zipfile.BadZipFile, pickle.UnpicklingError)
"""What `numpy.load` raises on an empty, truncated or corrupted ``.npz`` file."""


def _read_file(file: str, num_jobs: int, num_arms: int) -> tuple[str, dict[str, np.ndarray]]:
    """(fingerprint, results) of one checkpoint file of a grid of ``num_jobs`` jobs.

    Raises:
        ValueError: the file cannot be read, is of the older format without ``counts``, or is
            not a whole checkpoint of ``num_jobs`` jobs of ``num_arms`` arms (empty, truncated,
            corrupted); the message names it and says what to do.
    """
    fix = (
        "delete it (its finished jobs then run again) or start over without resuming "
        "(a sweep: --overwrite)"
    )
    expected = empty_results(num_jobs, num_arms)
    try:
        with np.load(file) as data:
            older = "fingerprint" in data.files and "counts" not in data.files
            if not older:
                found = str(data["fingerprint"]), {n: data[n] for n in expected}
    except OSError as err:
        raise ValueError(f"cannot read checkpoint {file}: {err.strerror or err}") from None
    except _DAMAGED as err:
        truncated = isinstance(err, (EOFError, zipfile.BadZipFile)) and str(err)
        detail = str(err).splitlines()[0] if truncated else "not an .npz checkpoint"
        raise ValueError(f"checkpoint {file} is damaged ({detail}); {fix}") from None
    if older:
        raise ValueError(
            f"checkpoint {file} was written by an older jaxbai, without the final counts N_a; "
            "rerun without resuming (a sweep: --overwrite) or delete it"
        )
    shapes = {n: array.shape for n, array in found[1].items()}
    if any(shape != expected[n].shape for n, shape in shapes.items()):
        size = shapes["counts"]  # (jobs, arms) of a whole checkpoint of another grid
        other = len(size) == 2 and all(
            shape == (size if n == "counts" else size[:1]) for n, shape in shapes.items()
        )
        if other:
            raise ValueError(
                f"checkpoint {file} was written for a different grid ({size[0]} jobs of "
                f"{size[1]} arms, not {num_jobs} of {num_arms}: its runs, ε, δ, instances or "
                "algorithms changed); resume the same grid, or start over (a sweep: --overwrite)"
            )
        raise ValueError(
            f"checkpoint {file} is damaged (not {num_jobs} jobs of {num_arms} arms); {fix}"
        )
    return found


def finished_jobs(path: str, num_jobs: int | None = None) -> np.ndarray | None:
    """Which jobs a checkpoint and its shards (`shard_path`) hold as finished, pooled; None
    without a readable file. Unchecked (to say what a resume restores): `read_checkpoint`
    checks the files when the grid runs, and refuses one that cannot be read or is not of
    ``num_jobs`` jobs; here such a file is skipped. ``num_jobs``: the grid's jobs (None: as
    many as the first readable file holds).

    Examples:
        >>> finished_jobs("no such checkpoint.npz") is None
        True
    """
    done = None
    for file in _checkpoint_files(path):
        try:
            with np.load(file) as data:
                found = np.asarray(data["done"], bool)
        except (OSError, *_DAMAGED):
            continue
        first = found.shape if done is None else done.shape
        if found.shape == (first if num_jobs is None else (num_jobs,)):
            done = found if done is None else done | found
    return done


def read_checkpoint(
    path: str, fingerprint: str, num_jobs: int, num_arms: int
) -> dict[str, np.ndarray]:
    """Finished results from a checkpoint and its shards (`shard_path`), pooled.

    Missing files give no results; a leftover temporary file is ignored.

    Raises:
        ValueError: a file belongs to another grid (algorithm, jobs, seed, budget), is of the
            older format without counts (rerun without resuming), or cannot be read (empty,
            truncated, corrupted); the message names the file.
    """
    results = empty_results(num_jobs, num_arms)
    for file in _checkpoint_files(path):
        found, data = _read_file(file, num_jobs, num_arms)
        if found != fingerprint and _parts(found) is None:
            raise ValueError(
                f"checkpoint {file} was written by an older jaxbai (its fingerprint does not "
                "name its parts); rerun without resuming (a sweep: --overwrite) or delete it"
            )
        if found != fingerprint:
            changed = ", ".join(fingerprint_changes(found, fingerprint)) or "its fingerprint"
            raise ValueError(
                f"checkpoint {file} was written for a different grid ({changed} changed); "
                "resume the same grid, or start over (a sweep: --overwrite)"
            )
        new = data["done"] & ~results["done"]
        for name in results:
            results[name][new] = data[name][new]
    return results
