"""Validators of the values of an experiment file: one per rule, each a `ConfigError` at its key.

Every check of a top-level key (`experiments.config.validation`) and of an instance or
algorithm table (`experiments.config.specs`) goes through these: a string, an integer in a
range, a finite number, a list of K ≥ 2 numbers, a grid of distinct numbers, a boolean, one of
a few choices, the known keys of a table. Each returns the value (numbers as floats) or raises
with the key path and the valid range.

Examples:
    >>> integer(3, ("runs",), 1, 10), grid([0.1, 1], ("deltas",), "in (0, 1]", lambda v: v <= 1)
    (3, (0.1, 1.0))
    >>> try:
    ...     string("", ("instances", 0, "name"), non_empty=True)
    ... except ConfigError as err:
    ...     print(err)
    instances[0].name: must be a non-empty string, got ''
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from experiments.config.errors import ConfigError

__all__ = [
    "boolean",
    "check_keys",
    "choice",
    "finite_number",
    "grid",
    "integer",
    "number",
    "string",
    "vector",
]

Test = Callable[[float], bool]
"""A condition on a number (``lambda v: v > 0``)."""


def finite_number(value: object, ok: Test | None = None) -> bool:
    """Whether ``value`` is a finite int or float (not a bool) satisfying ``ok``."""
    number = isinstance(value, (int, float)) and not isinstance(value, bool)
    return number and math.isfinite(value) and (ok is None or ok(float(value)))


def string(value: object, path: tuple, *, non_empty: bool = False) -> str:
    """A string; with ``non_empty``, one that is not empty or blank."""
    if not isinstance(value, str) or (non_empty and not value.strip()):
        kind = "a non-empty string" if non_empty else "a string"
        raise ConfigError(path, f"must be {kind}, got {value!r}")
    return value


def integer(value: object, path: tuple, low: int, high: int) -> int:
    """An integer (not a bool, not a float such as ``5.0``) in [low, high]."""
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise ConfigError(path, f"must be an integer in [{low}, {high}], got {value!r}")
    return value


def number(value: object, path: tuple, what: str, ok: Test) -> float:
    """A required finite number satisfying ``ok`` (``what`` says which, e.g. ``"> 0"``)."""
    if value is None:
        raise ConfigError(path, f"is required: a number {what}")
    if not finite_number(value, ok):
        raise ConfigError(path, f"must be {what}, got {value!r}")
    return float(value)


def vector(value: object, path: tuple, what: str, ok: Test) -> tuple[float, ...]:
    """A list of K ≥ 2 finite numbers, each satisfying ``ok``."""
    if value is None:
        raise ConfigError(path, f"is required: a list of K >= 2 numbers {what}")
    if not isinstance(value, (list, tuple)) or len(value) < 2:
        raise ConfigError(path, f"must be a list of K >= 2 numbers {what}, got {value!r}")
    for i, v in enumerate(value):
        if not finite_number(v, ok):
            raise ConfigError(path, f"must be a list of numbers {what}; entry {i} is {v!r}")
    return tuple(float(v) for v in value)


def grid(value: object, path: tuple, what: str, ok: Test) -> tuple[float, ...]:
    """A non-empty list of distinct numbers satisfying ``ok`` (a value given twice would run
    its cells twice, as if they held twice the runs: refused, not merged)."""
    values = value if isinstance(value, (list, tuple)) else None
    if not values:
        raise ConfigError(path, f"must be a non-empty list of numbers {what}, got {value!r}")
    seen = set()
    for v in values:
        if not finite_number(v, ok):
            raise ConfigError(path, f"must be numbers {what}; {v!r} is not")
        if float(v) in seen:
            raise ConfigError(path, f"{v!r} appears twice; values must be distinct")
        seen.add(float(v))
    return tuple(float(v) for v in values)


def boolean(value: object, path: tuple) -> bool:
    """A TOML boolean (not 0/1, not a string)."""
    if not isinstance(value, bool):
        raise ConfigError(path, f"must be true or false, got {value!r}")
    return value


def choice(value: object, path: tuple, choices: Sequence) -> Any:
    """One of ``choices``."""
    if value not in choices:
        raise ConfigError(path, f"must be one of {list(choices)}, got {value!r}")
    return value


def check_keys(data: Mapping, valid: Sequence[str], path: tuple) -> None:
    """Refuse a key of the table ``data`` that is not in ``valid``."""
    for key in data:
        if key not in valid:
            raise ConfigError((*path, key), f"unknown key; valid: {sorted(valid)}")
