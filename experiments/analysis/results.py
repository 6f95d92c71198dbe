"""Tidy results: one row per run, stored as CSV, held in memory as a dict of numpy columns.

The CSV is the single source of truth for figures and reports; the JSON sidecar next to it
records how it was produced (package versions, JAX backend and devices, git commit, the full
configuration, wall time, throughput).

Per-arm columns. In the CSV (and in the DataFrames of `to_frame`) every per-arm quantity is one
numeric column per arm, ``<prefix>_0 … <prefix>_{K−1}`` (`PER_ARM`: ``mu_a`` the instance's
means, ``count_a`` a run's final counts N_a, ``proportion_a``, ``proportion_std_a`` and
``omega_star_a`` of the summary), for a = 0 … K_max − 1 with K_max the largest K of the table;
a row whose instance has fewer arms is empty (NaN) beyond its K. In memory, `read_csv` and
`write_csv` hold each of them as one text cell, the K values separated by spaces in arm order
(``"412 256 256"``, `format_counts`, `format_means`), which `parse_counts`, `counts_matrix` and
`parse_means` read back: the ``means`` text is a cell's key. The counts sum to ``tau`` (a
censored run's: when it was cut).

Not applicable is missing. A value that does not apply is NaN in memory and an empty field in
the CSV (`OptionalInt` columns: ``recommendation`` of a censored run, ``rounds`` of a fully
sequential algorithm, ``reported_tau`` of an algorithm that reports no stopping time other
than τ; float columns such as an error rate without stopped runs). ``reported_tau`` is the
stopping time the algorithm reports where it reports one other than τ
(`jaxbai.base.ReportsSamples`: the published AdaP-TT's Σ_a 2^⌊log₂ N_a⌋). ``pandas.read_csv(path,
keep_default_na=False, na_values=[""])`` reads a CSV of `write_csv` as `to_frame` gives its
table (a plain ``pandas.read_csv`` also reads the ``threshold`` text ``n/a`` as NaN).

Older CSVs read too: per-arm columns as one text column, −1 for not applicable, no
``counts`` or ``reported_tau`` columns (`OPTIONAL_COLUMNS`: read as missing), and no
``privacy_measure`` column (`experiments.analysis.older.privacy_claim`).

Examples:
    >>> table = {"algorithm": np.array(["ttucb"]), "tau": np.array([12])}
    >>> select(table, np.array([True]))["tau"].tolist()
    [12]
"""

from __future__ import annotations

import argparse
import contextlib
import csv
import json
import os
import secrets
from collections.abc import Iterator, Mapping, Sequence
from typing import IO, TYPE_CHECKING, Any

import numpy as np

from experiments.analysis import older
from jaxbai.simulation import frame_ints

if TYPE_CHECKING:
    import pandas

__all__ = [
    "OPTIONAL_COLUMNS",
    "PER_ARM",
    "RUN_COLUMNS",
    "OptionalInt",
    "Table",
    "arm_columns",
    "concat",
    "counts_matrix",
    "dtype_of",
    "file_columns",
    "format_counts",
    "format_means",
    "num_rows",
    "output_directory",
    "parse_counts",
    "parse_csv_command",
    "parse_means",
    "read_csv",
    "refuse_link",
    "replacing",
    "select",
    "to_frame",
    "unique",
    "write_csv",
    "write_json",
]

Table = dict[str, np.ndarray]
"""Columns of equal length, by name."""


class OptionalInt(float):
    """Schema kind of an integer column whose value may not apply: float64 in memory with NaN
    where it does not apply (`jaxbai.simulation.optional_ints`); in the CSV the integer or an
    empty field."""


RUN_COLUMNS: dict[str, type] = {
    "algorithm": str,
    "privacy": str,
    "privacy_measure": str,
    "instance": str,
    "means": str,
    "K": int,
    "epsilon": float,
    "delta": float,
    "threshold": str,
    "seed": int,
    "run": int,
    "tau": int,
    "recommendation": OptionalInt,
    "correct": bool,
    "censored": bool,
    "rounds": OptionalInt,
    "counts": str,
    "reported_tau": OptionalInt,
}
"""Schema of the per-run table, in column order (``means`` and ``counts``: `PER_ARM`)."""

OPTIONAL_COLUMNS: dict[str, str] = {"counts": "", "reported_tau": ""}
"""Columns of `RUN_COLUMNS` that `read_csv` fills with these fields (empty: missing) when a
CSV lacks them (a CSV written before they existed)."""

PER_ARM: dict[str, tuple[str, type]] = {
    "means": ("mu", float),
    "counts": ("count", int),
    "proportions": ("proportion", float),
    "proportions_std": ("proportion_std", float),
    "omega_star": ("omega_star", float),
}
"""Per-arm columns (one text cell in memory) by name: the prefix of their CSV columns
``<prefix>_0 … <prefix>_{K_max−1}`` and the type of one arm's value."""


def _parse_float(text: str) -> float:
    """A float field; empty is NaN."""
    return float(text) if text.strip() else float("nan")


def _parse_optional_int(text: str) -> float:
    """An `OptionalInt` field: empty, ``nan`` or negative (an older CSV's −1) is NaN."""
    value = _parse_float(text)
    return value if value >= 0 else float("nan")


def _parse_bool(text: str) -> bool:
    """A bool field as `write_csv` writes it: ``True`` or ``False``."""
    if text not in ("True", "False"):
        raise ValueError(f"{text!r} is neither True nor False")
    return text == "True"


_PARSERS = {
    str: str,
    int: int,
    float: _parse_float,
    bool: _parse_bool,
    OptionalInt: _parse_optional_int,
}


def dtype_of(kind: type) -> type:
    """The numpy dtype of a column of schema kind ``kind`` in memory (text: object)."""
    return {str: object, OptionalInt: np.float64}.get(kind, kind)


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


def arm_columns(name: str, cells: np.ndarray, width: int) -> dict[str, np.ndarray]:
    """The per-arm columns ``<prefix>_0 … <prefix>_{width−1}`` of the text column ``name``
    (`PER_ARM`), float64, NaN beyond a cell's values.

    >>> {k: v.tolist() for k, v in arm_columns("counts", np.array(["3 1", "2 2 4"]), 3).items()}
    {'count_0': [3.0, 2.0], 'count_1': [1.0, 2.0], 'count_2': [nan, 4.0]}
    """
    out = np.full((len(cells), width), np.nan)
    for i, text in enumerate(cells.tolist()):
        values = [float(x) for x in str(text).split()]
        out[i, : len(values)] = values
    return {f"{PER_ARM[name][0]}_{a}": out[:, a] for a in range(width)}


def file_columns(table: Table, schema: Mapping[str, type]) -> dict[str, tuple[np.ndarray, type]]:
    """The columns of ``table`` as the CSV holds them, with their schema kinds: those of
    ``schema`` in order, a per-arm column (`PER_ARM`) as one column per arm up to the largest
    K of the table (``K`` column, or the widest cell), of kind float or `OptionalInt`."""
    widths = [int(k) for k in table.get("K", np.array([])).tolist()]
    for name in set(schema) & set(PER_ARM) & set(table):
        widths += [len(str(text).split()) for text in table[name].tolist()]
    width = max(widths, default=0)
    out: dict[str, tuple[np.ndarray, type]] = {}
    for name, kind in schema.items():
        if name in PER_ARM and name in table:
            element = OptionalInt if PER_ARM[name][1] is int else float
            for column, values in arm_columns(name, table[name], width).items():
                out[column] = (values, element)
        else:
            out[name] = (table[name], kind)
    return out


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


def _field(value: object, kind: type | None) -> object:
    """One CSV field: NaN (and a negative `OptionalInt`) empty, floats in shortest round-trip
    form, an `OptionalInt` as an integer."""
    if kind is OptionalInt:
        value = float(value)
        return str(int(value)) if value >= 0 else ""
    if isinstance(value, float):
        return repr(value) if value == value else ""
    return value


def refuse_link(path: str) -> None:
    """ValueError if ``path`` is a symbolic link. A results folder someone sent may hold one
    (``figures/`` or ``checkpoints/`` pointing elsewhere) to have files written where it
    points; nothing is written through it."""
    if os.path.islink(path):
        raise ValueError(
            f"{path} is a symbolic link: results are not written through a link (remove it, "
            "or choose another output directory)"
        )


def output_directory(path: str) -> str:
    """``path`` created as a directory if missing (never a symbolic link: `refuse_link`);
    returns it."""
    refuse_link(path)
    os.makedirs(path, exist_ok=True)
    return path


@contextlib.contextmanager
def replacing(path: str, mode: str = "w", newline: str | None = None) -> Iterator[IO]:
    """A file (``mode`` ``"w"`` or ``"wb"``) that replaces ``path`` atomically once written: a
    fresh temporary file of the same directory (created exclusively, so it never follows a link
    planted in a results folder someone sent), renamed over ``path`` (which replaces a link at
    ``path`` instead of writing through it). Nothing is replaced if the block raises."""
    folder, name = os.path.split(os.path.abspath(path))
    tmp = os.path.join(folder, f".{name}.{secrets.token_hex(6)}.tmp")
    handle = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)  # the umask applies
    try:
        with os.fdopen(handle, mode, newline=newline) as f:
            yield f
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def write_csv(
    table: Table, path: str, columns: Mapping[str, type] | Sequence[str] | None = None
) -> None:
    """Write ``table`` as CSV (header + one line per row), atomically: the columns of the
    schema ``columns`` (names alone take their kinds from `RUN_COLUMNS`; default: all of
    ``table``'s), per-arm columns one column per arm (`file_columns`)."""
    if not isinstance(columns, Mapping):
        columns = {name: RUN_COLUMNS.get(name) for name in (columns or table)}
    flat = file_columns(table, columns)
    kinds = [kind for _, kind in flat.values()]
    with replacing(path, newline="") as f:
        writer = csv.writer(f)
        writer.writerow(list(flat))
        for row in zip(*(values.tolist() for values, _ in flat.values()), strict=True):
            writer.writerow([_field(v, kind) for v, kind in zip(row, kinds, strict=True)])


def _arm_text(fields: Sequence[str], element: type) -> str:
    """One per-arm text cell from its per-arm CSV fields (empty ones left out)."""
    values = (float(x) for x in fields if x.strip())
    return " ".join(repr(v) if element is float else str(int(v)) for v in values)


def _text_fields(name: str, columns: dict[str, list[str]], rows: int) -> list[str] | None:
    """The fields of column ``name`` in memory: its own CSV column (an older CSV's per-arm
    text too), its per-arm CSV columns joined (`PER_ARM`), or `OPTIONAL_COLUMNS`' fill; None
    where the CSV lacks it."""
    if name in columns:
        return columns[name]
    if name in PER_ARM:
        prefix, element = PER_ARM[name]
        arms: list[list[str]] = []
        while f"{prefix}_{len(arms)}" in columns:
            arms.append(columns[f"{prefix}_{len(arms)}"])
        if arms:
            return [_arm_text(fields, element) for fields in zip(*arms, strict=True)]
        if not rows:
            return []
    if name in OPTIONAL_COLUMNS:
        return [OPTIONAL_COLUMNS[name]] * rows
    if name == "privacy_measure" and "privacy" in columns:  # written before measures existed
        pairs = zip(columns["algorithm"], columns["privacy"], strict=True)
        return [older.privacy_claim(a, p) for a, p in pairs]
    return None


def read_csv(path: str, schema: Mapping[str, type] | None = None) -> Table:
    """Read a CSV written by `write_csv` (or an older one, module docstring): the columns of
    ``schema`` (default `RUN_COLUMNS`) in order and of its kinds, per-arm columns as text
    cells, then any other column as text.

    Raises:
        ValueError: the file is not such a CSV, saying where: not UTF-8 text, not CSV, empty, a
            row whose fields are not the header's (a truncated or damaged file), a column of
            the schema missing, or a value that is not of its column's kind.
    """
    schema = RUN_COLUMNS if schema is None else schema
    try:
        with open(path, newline="", encoding="utf-8") as f:
            reader = csv.reader(f)
            header = next(reader, None)
            rows = list(reader)
    except UnicodeDecodeError as err:
        raise ValueError(f"{path} is not a text CSV ({err.reason} at byte {err.start})") from None
    except csv.Error as err:
        raise ValueError(f"{path} is not a CSV: {err}") from None
    if header is None:
        raise ValueError(f"{path} is empty, not a CSV of experiments.sweep")
    for number, row in enumerate(rows, start=1):
        if len(row) != len(header):
            raise ValueError(
                f"{path}, row {number}: {len(row)} fields where the header has {len(header)} "
                "(a truncated or damaged file)"
            )
    columns = {name: [row[i] for row in rows] for i, name in enumerate(header)}
    try:
        fields = {name: _text_fields(name, columns, len(rows)) for name in schema}
    except ValueError as err:
        raise ValueError(f"{path}: a per-arm value that is not a number ({err})") from None
    missing = [name for name, values in fields.items() if values is None]
    if missing:
        raise ValueError(f"{path} lacks columns {missing}")
    table: Table = {}
    for name, kind in schema.items():
        table[name] = np.array(_parsed(path, name, kind, fields[name]), dtype=dtype_of(kind))
    arms = {f"{PER_ARM[name][0]}_" for name in schema if name in PER_ARM and name not in header}
    for name in header:
        if name not in table and name.rpartition("_")[0] + "_" not in arms:
            table[name] = np.array(columns[name], dtype=object)
    return table


def _parsed(path: str, name: str, kind: type, texts: Sequence[str]) -> list:
    """The fields of column ``name`` as ``kind``; ValueError naming the first bad one's row."""
    parse, values = _PARSERS[kind], []
    for number, text in enumerate(texts, start=1):
        try:
            values.append(parse(text))
        except ValueError:
            what = _KIND_WORDS.get(kind, "readable")
            raise ValueError(f"{path}, row {number}: {name} {text!r} is not {what}") from None
    return values


_KIND_WORDS = {
    int: "an integer",
    float: "a number",
    bool: "True or False",
    OptionalInt: "an integer or empty",
}
"""How a refused field's column kind is named (`read_csv`)."""


def read_runs(path: str) -> Table:
    """`read_csv` of a sweep's per-run CSV; ValueError also for one that holds no run."""
    table = read_csv(path)
    if not num_rows(table):
        raise ValueError(f"{path} holds no runs")
    return table


def _frame_column(values: np.ndarray, kind: type | None) -> np.ndarray:
    """A column of `write_csv` with the dtype ``pandas.read_csv`` gives it (`to_frame`)."""
    if kind is OptionalInt:
        return frame_ints(values)
    dtype = {str: object, int: np.int64, float: np.float64, bool: np.bool_}.get(kind, object)
    return np.asarray(values, dtype=dtype)


def to_frame(table: Table, schema: Mapping[str, type]) -> pandas.DataFrame:
    """``table`` as a pandas DataFrame with the columns of ``schema`` as the CSV of `write_csv`
    holds them (per-arm columns one per arm, `file_columns`) and the dtypes
    ``pandas.read_csv(path, keep_default_na=False, na_values=[""])`` gives that CSV: text
    object, int64, float64, bool; an `OptionalInt` column (and a per-arm integer one) int64
    where no value is missing, else float64 with NaN."""
    import pandas

    frame = {}
    for name, (values, kind) in file_columns(table, schema).items():
        frame[name] = _frame_column(values, kind)
    return pandas.DataFrame(frame)


def parse_csv_command(
    prog: str, description: str, out_help: str, argv: Sequence[str] | None = None
) -> argparse.Namespace:
    """The arguments ``CSV [--out PATH]`` of the command ``python -m prog``, which reads a
    sweep's per-run CSV, with the CSV read (`read_runs`) as ``runs``.

    Raises:
        SystemExit: status 2, bad arguments or no such CSV (argparse's error), or a CSV that
            `read_runs` refuses (one line on stderr).
    """
    parser = argparse.ArgumentParser(
        prog=f"python -m {prog}",
        description=description,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("csv", help="per-run CSV written by experiments.sweep")
    parser.add_argument("--out", help=out_help)
    from jaxbai import compilation, plugins  # plugins: their names and targets

    plugins.add_argument(parser)
    compilation.add_argument(parser)  # the theory of the figures and report compiles
    args = parser.parse_args(argv)
    if not os.path.exists(args.csv):
        parser.error(f"no such file {args.csv}")
    try:
        args.runs = read_runs(args.csv)
    except (ValueError, OSError) as err:
        parser.exit(2, f"error: {err}\n")
    compilation.from_arguments(args)
    return args


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

    with replacing(path) as f:
        json.dump(clean(data), f, indent=2)
        f.write("\n")
