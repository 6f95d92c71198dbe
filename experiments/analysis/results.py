"""Tidy results: one row per run, stored as CSV, held in memory as a dict of numpy columns.

The CSV is the single source of truth for figures and reports; the JSON sidecar next to it
records how it was produced (package versions, JAX backend and devices, git commit, the full
configuration, wall time, throughput).

A run's final counts N_a are one column, ``counts``: the K integers separated by spaces in arm
order (``"412 256 256"``, `format_counts`; `parse_counts` and `counts_matrix` read them back),
since the instances of one sweep may have different K. They sum to ``tau`` (a censored run's:
when it was cut). ``reported_tau`` is the stopping time the algorithm reports where it reports
one other than τ (`jaxbai.base.ReportsSamples`: the published AdaP-TT's Σ_a 2^⌊log₂ N_a⌋), else
−1. A CSV written before these columns existed reads with ``counts`` empty and
``reported_tau`` −1 (`OPTIONAL_COLUMNS`).

Example:
    >>> table = {"algorithm": np.array(["ttucb"]), "tau": np.array([12])}
    >>> select(table, np.array([True]))["tau"].tolist()
    [12]
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import platform
import subprocess
from collections.abc import Sequence
from importlib import metadata
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    import pandas

__all__ = [
    "OPTIONAL_COLUMNS",
    "RUN_COLUMNS",
    "Table",
    "concat",
    "counts_matrix",
    "format_counts",
    "format_means",
    "git_commit",
    "jax_environment",
    "num_rows",
    "package_versions",
    "parse_counts",
    "parse_csv_command",
    "parse_means",
    "read_csv",
    "select",
    "to_frame",
    "unique",
    "write_csv",
    "write_json",
]

Table = dict[str, np.ndarray]
"""Columns of equal length, by name."""

RUN_COLUMNS: dict[str, type] = {
    "algorithm": str,
    "privacy": str,
    "instance": str,
    "means": str,
    "K": int,
    "epsilon": float,
    "delta": float,
    "threshold": str,
    "seed": int,
    "run": int,
    "tau": int,
    "recommendation": int,
    "correct": bool,
    "censored": bool,
    "rounds": int,
    "counts": str,
    "reported_tau": int,
}
"""Schema of the per-run CSV, in column order."""

OPTIONAL_COLUMNS: dict[str, object] = {"counts": "", "reported_tau": -1}
"""Columns of `RUN_COLUMNS` that `read_csv` fills with these values when a CSV lacks them (a
CSV written before they existed)."""

_PARSERS = {str: str, int: int, float: float, bool: lambda s: s == "True"}


def format_means(means: Sequence[float]) -> str:
    """Space-separated shortest round-trip representation of an instance's means."""
    return " ".join(repr(float(m)) for m in means)


def parse_means(text: str) -> np.ndarray:
    """Inverse of `format_means`."""
    return np.array([float(x) for x in text.split()])


def format_counts(counts: np.ndarray) -> np.ndarray:
    """One ``counts`` cell per row of ``counts`` (``(n, K)`` integers): space-separated.

    >>> format_counts(np.array([[3, 1], [2, 2]])).tolist()
    ['3 1', '2 2']
    """
    counts = np.asarray(counts, np.int64)
    return np.array([" ".join(map(str, row)) for row in counts.tolist()], dtype=object)


def parse_counts(text: str) -> np.ndarray:
    """Inverse of `format_counts` for one cell: int64 ``(K,)`` (empty for an empty cell)."""
    return np.array([int(x) for x in text.split()], np.int64)


def counts_matrix(column: np.ndarray) -> np.ndarray:
    """The ``counts`` cells of runs with the same K as one int64 ``(n, K)`` array.

    Raises:
        ValueError: the cells have different K, or some are empty (a CSV without counts).

    >>> counts_matrix(np.array(["3 1", "2 2"], dtype=object)).tolist()
    [[3, 1], [2, 2]]
    """
    rows = [parse_counts(text) for text in column.tolist()]
    widths = {len(r) for r in rows}
    if len(widths) > 1 or 0 in widths:
        raise ValueError(f"counts of {sorted(widths)} arms cannot form one matrix")
    return np.array(rows, np.int64).reshape(len(rows), -1)


def num_rows(table: Table) -> int:
    """Number of rows of a table."""
    return len(next(iter(table.values()))) if table else 0


def select(table: Table, mask: np.ndarray) -> Table:
    """Rows of ``table`` where ``mask`` is True."""
    return {name: column[mask] for name, column in table.items()}


def concat(tables: Sequence[Table]) -> Table:
    """Row-wise concatenation of tables with the same columns."""
    tables = [t for t in tables if num_rows(t)]
    if not tables:
        return {name: np.array([], dtype=object) for name in RUN_COLUMNS}
    return {name: np.concatenate([t[name] for t in tables]) for name in tables[0]}


def unique(values: np.ndarray) -> list:
    """Distinct values in order of first appearance."""
    _, first = np.unique(values, return_index=True)
    return [values[i] for i in sorted(first)]


def write_csv(table: Table, path: str, columns: Sequence[str] | None = None) -> None:
    """Write ``table`` as CSV (header + one line per row), atomically."""
    columns = list(columns or table)
    tmp = f"{path}.tmp"
    with open(tmp, "w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(columns)
        for row in zip(*(table[c].tolist() for c in columns), strict=True):
            writer.writerow([repr(v) if isinstance(v, float) else v for v in row])
    os.replace(tmp, path)


def read_csv(path: str, schema: dict[str, type] | None = None) -> Table:
    """Read a CSV written by `write_csv`; columns of ``schema`` get their types.

    Raises:
        ValueError: a column of the schema is missing.
    """
    schema = RUN_COLUMNS if schema is None else schema
    with open(path, newline="") as f:
        reader = csv.reader(f)
        header = next(reader)
        rows = list(reader)
    missing = [c for c in schema if c not in header and c not in OPTIONAL_COLUMNS]
    if missing:
        raise ValueError(f"{path} lacks columns {missing}")
    for name in schema:
        if name not in header:  # an older CSV: the column's value for "not recorded"
            header.append(name)
            rows = [[*row, str(OPTIONAL_COLUMNS[name])] for row in rows]
    table: Table = {}
    for i, name in enumerate(header):
        kind = schema.get(name, str)
        values = [_PARSERS[kind](row[i]) for row in rows]
        dtype = object if kind is str else kind
        table[name] = np.array(values, dtype=dtype)
    return table


def to_frame(table: Table, schema: dict[str, type]) -> pandas.DataFrame:
    """``table`` as a pandas DataFrame with the columns of ``schema`` in order: text columns of
    dtype object, the others int64, float64 or bool (the dtypes ``pandas.read_csv`` gives the
    CSV of `write_csv` with ``keep_default_na=False, na_values=["nan"]``)."""
    import pandas

    dtypes = {str: object, int: np.int64, float: np.float64, bool: np.bool_}
    return pandas.DataFrame(
        {name: np.asarray(table[name], dtype=dtypes[kind]) for name, kind in schema.items()}
    )


def parse_csv_command(
    prog: str, description: str, out_help: str, argv: Sequence[str] | None = None
) -> argparse.Namespace:
    """The arguments ``CSV [--out PATH]`` of the command ``python -m prog``, which reads a
    sweep's per-run CSV.

    Raises:
        SystemExit: status 2, bad arguments or no such CSV (argparse's error).
    """
    parser = argparse.ArgumentParser(
        prog=f"python -m {prog}",
        description=description,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("csv", help="per-run CSV written by experiments.sweep")
    parser.add_argument("--out", help=out_help)
    from jaxbai import plugins  # its algorithms' names, styles and targets

    plugins.add_argument(parser)
    args = parser.parse_args(argv)
    if not os.path.exists(args.csv):
        parser.error(f"no such file {args.csv}")
    return args


def git_commit(directory: str = ".") -> str:
    """HEAD commit of the repository holding ``directory`` (``+dirty`` if modified)."""
    try:
        run = subprocess.run
        head = run(["git", "rev-parse", "HEAD"], cwd=directory, capture_output=True, text=True)
        dirty = run(["git", "status", "--porcelain"], cwd=directory, capture_output=True, text=True)
    except OSError:
        return "unknown"
    if head.returncode:
        return "unknown"
    return head.stdout.strip() + ("+dirty" if dirty.stdout.strip() else "")


def package_versions(names: Sequence[str] = ("jaxbai", "jax", "jaxlib", "numpy", "matplotlib")):
    """Installed versions of ``names`` (``None`` if absent), plus Python's."""
    versions: dict[str, str | None] = {"python": platform.python_version()}
    for name in names:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = None
    return versions


def jax_environment() -> dict[str, Any]:
    """JAX backend and devices, and the host it runs on."""
    import jax

    return {
        "backend": jax.default_backend(),
        "devices": [str(d) for d in jax.devices()],
        "device_kinds": sorted({d.device_kind for d in jax.devices()}),
        "host": {"machine": platform.machine(), "cpus": os.cpu_count()},
        "xla_flags": os.environ.get("XLA_FLAGS", ""),
    }


def write_json(data: dict, path: str) -> None:
    """Write JSON (∞ and NaN as strings, numpy scalars as Python), atomically."""

    def clean(value: Any) -> Any:
        if isinstance(value, dict):
            return {str(k): clean(v) for k, v in value.items()}
        if isinstance(value, (list, tuple)):
            return [clean(v) for v in value]
        if isinstance(value, np.generic):
            value = value.item()
        if isinstance(value, float) and not np.isfinite(value):
            return repr(value)
        return value

    tmp = f"{path}.tmp"
    with open(tmp, "w") as f:
        json.dump(clean(data), f, indent=2)
        f.write("\n")
    os.replace(tmp, path)
