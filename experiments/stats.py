"""Per-cell summaries, binomial intervals, ratio intervals and log-log slope fits.

Conventions used throughout the reports:

* error rate = wrong recommendations / runs that stopped (censored runs give no answer, they
  are counted separately), with a 95% **Wilson score** interval;
* intervals on means and on ratios of means are normal (delta method on the log scale);
* a cell with censored runs has a mean that is only a lower bound on the true mean.

Example:
    >>> lo, hi = wilson_interval(0, 100)
    >>> round(lo, 3), round(hi, 4)
    (0.0, 0.037)
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from experiments.results import RUN_COLUMNS, Table

__all__ = [
    "CELL_KEYS",
    "SUMMARY_COLUMNS",
    "Z95",
    "Interval",
    "loglog_slope",
    "ratio_interval",
    "summarize",
    "summarize_runs",
    "wilson_interval",
]

Z95 = 1.959963984540054
"""Two-sided 95% standard normal quantile."""

CELL_KEYS = ("algorithm", "privacy", "instance", "means", "K", "epsilon", "delta", "threshold")
"""Columns that identify a cell (all runs of one algorithm at one instance, ε, δ)."""

SUMMARY_COLUMNS: dict[str, type] = {k: RUN_COLUMNS[k] for k in CELL_KEYS} | {
    "runs": int,
    "mean": float,
    "std": float,
    "se": float,
    "median": float,
    "stopped": int,
    "errors": int,
    "error_rate": float,
    "error_lo": float,
    "error_hi": float,
    "censored": int,
    "rounds_mean": float,
    "rounds_std": float,
    "rounds_max": int,
}
"""Schema of the per-cell summary table (error interval: 95% Wilson score). ``rounds_*``: the
rounds of adaptivity C(τ) over the cell's runs (Appendix H); −1 for fully sequential algorithms."""


def wilson_interval(successes: int, trials: int, z: float = Z95) -> tuple[float, float]:
    """Wilson score interval for a binomial proportion (``(0, 1)`` when ``trials`` is 0)."""
    if trials <= 0:
        return 0.0, 1.0
    p = successes / trials
    denom = 1.0 + z * z / trials
    centre = (p + z * z / (2 * trials)) / denom
    half = z * math.sqrt(p * (1 - p) / trials + z * z / (4 * trials * trials)) / denom
    lo = 0.0 if successes == 0 else max(0.0, centre - half)
    hi = 1.0 if successes == trials else min(1.0, centre + half)
    return lo, hi


def summarize_runs(
    tau: np.ndarray, correct: np.ndarray, censored: np.ndarray, rounds: np.ndarray | None = None
) -> dict:
    """Summary statistics of one cell's runs (τ and C of censored runs: when cut).

    >>> s = summarize_runs(np.array([10, 20, 30]), np.ones(3, bool), np.zeros(3, bool),
    ...                    np.array([4, 5, 9]))
    >>> s["mean"], s["rounds_mean"], s["rounds_std"], s["rounds_max"]
    (20.0, 6.0, 2.6457513110645907, 9)
    """
    tau = np.asarray(tau, np.float64)
    n = tau.size
    rounds = np.full(n, -1) if rounds is None else np.asarray(rounds)
    stopped = int((~censored).sum())
    errors = int((~censored & ~correct).sum())
    std = float(tau.std(ddof=1)) if n > 1 else 0.0
    lo, hi = wilson_interval(errors, stopped)
    return {
        "runs": n,
        "mean": float(tau.mean()),
        "std": std,
        "se": std / math.sqrt(n),
        "median": float(np.median(tau)),
        "stopped": stopped,
        "errors": errors,
        "error_rate": errors / stopped if stopped else float("nan"),
        "error_lo": lo,
        "error_hi": hi,
        "censored": int(censored.sum()),
        "rounds_mean": float(rounds.mean()),
        "rounds_std": float(rounds.std(ddof=1)) if n > 1 else 0.0,
        "rounds_max": int(rounds.max()),
    }


def summarize(table: Table) -> Table:
    """One row per cell (`CELL_KEYS`), columns `SUMMARY_COLUMNS`, in order of appearance."""
    groups: dict[tuple, list[int]] = {}
    for i, key in enumerate(zip(*(table[k].tolist() for k in CELL_KEYS), strict=True)):
        groups.setdefault(key, []).append(i)
    rows = []
    for key, rows_of_cell in groups.items():
        idx = np.asarray(rows_of_cell)
        stats = summarize_runs(
            table["tau"][idx], table["correct"][idx], table["censored"][idx], table["rounds"][idx]
        )
        rows.append(dict(zip(CELL_KEYS, key, strict=True)) | stats)
    return {
        name: np.array([r[name] for r in rows], dtype=object if kind is str else kind)
        for name, kind in SUMMARY_COLUMNS.items()
    }


class Interval(NamedTuple):
    """A point estimate with a 95% interval."""

    value: float
    lo: float
    hi: float

    def __str__(self) -> str:
        return f"{self.value:.3g} [{self.lo:.3g}, {self.hi:.3g}]"


def ratio_interval(mean_a: float, se_a: float, mean_b: float, se_b: float) -> Interval:
    """mean_a / mean_b with a 95% normal interval on the log scale (delta method)."""
    ratio = mean_a / mean_b
    se_log = math.hypot(se_a / mean_a, se_b / mean_b)
    return Interval(ratio, ratio * math.exp(-Z95 * se_log), ratio * math.exp(Z95 * se_log))


def loglog_slope(epsilon: np.ndarray, mean: np.ndarray, se: np.ndarray) -> Interval | None:
    """Slope b of log(mean τ) = a + b log ε by weighted least squares, with a 95% interval.

    Weights are 1/Var(log mean) ≈ (mean/se)²; the slope's standard error is scaled up by
    √(χ²/(n − 2)) when the points scatter more than their standard errors (model misfit).
    Returns None with fewer than three points.
    """
    if len(epsilon) < 3:
        return None
    x = np.log(np.asarray(epsilon, np.float64))
    y = np.log(np.asarray(mean, np.float64))
    se_log = np.maximum(np.asarray(se, np.float64) / np.asarray(mean, np.float64), 1e-12)
    w = se_log**-2.0
    xbar = np.sum(w * x) / np.sum(w)
    ybar = np.sum(w * y) / np.sum(w)
    sxx = np.sum(w * (x - xbar) ** 2)
    slope = float(np.sum(w * (x - xbar) * (y - ybar)) / sxx)
    resid = y - ybar - slope * (x - xbar)
    chi2 = float(np.sum(w * resid**2))
    scale = math.sqrt(max(1.0, chi2 / (len(x) - 2)))
    half = Z95 * scale / math.sqrt(sxx)
    return Interval(slope, slope - half, slope + half)
