"""Per-cell summaries, binomial intervals, ratio intervals and log-log slope fits.

Conventions used throughout the reports:

* error rate = wrong recommendations / runs that stopped (censored runs give no answer, they
  are counted separately), with a 95% **Wilson score** interval;
* intervals on means and on ratios of means are normal (delta method on the log scale);
* a cell with censored runs has a mean that is only a lower bound on the true mean;
* allocations: a run's empirical proportions are N_a/τ (its final counts over its samples; a
  censored run's when it was cut, so its proportions are those of the budget's samples). The
  summary's ``proportions`` are their mean over the cell's runs, ``proportions_std`` their
  sample standard deviation, ``omega_star`` the allocation the algorithm targets
  (`target_allocation`; empty where none is known), ``omega_deviation`` the mean over runs of
  max_a |N_a/τ − ω*_a| and ``omega_deviation_of_mean`` max_a |mean(N_a/τ) − ω*_a| (NaN without
  a target). In memory per-arm columns hold K numbers separated by spaces, in arm order; the
  CSV has one column per arm (`experiments.analysis.results.PER_ARM`).

Examples:
    >>> lo, hi = wilson_interval(0, 100)
    >>> round(lo, 3), round(hi, 4)
    (0.0, 0.037)
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import TYPE_CHECKING, NamedTuple

import numpy as np

from experiments.analysis.results import (
    RUN_COLUMNS,
    OptionalInt,
    Table,
    counts_matrix,
    dtype_of,
    parse_means,
)
from jaxbai.simulation import optional_ints

if TYPE_CHECKING:
    from experiments.config import SweepConfig
    from jaxbai.base import Algorithm

__all__ = [
    "CELL_KEYS",
    "SUMMARY_COLUMNS",
    "Z95",
    "Interval",
    "algorithms_of",
    "allocation_targets",
    "format_floats",
    "loglog_slope",
    "parse_floats",
    "ratio_interval",
    "summarize",
    "summarize_allocations",
    "summarize_runs",
    "target_allocation",
    "wilson_interval",
]

Z95 = 1.959963984540054
"""Two-sided 95% standard normal quantile."""

CELL_KEYS = (
    "algorithm",
    "privacy",
    "privacy_measure",
    "instance",
    "means",
    "K",
    "epsilon",
    "delta",
    "threshold",
)
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
    "rounds_max": OptionalInt,
    "reported_mean": float,
    "proportions": str,
    "proportions_std": str,
    "omega_star": str,
    "omega_deviation": float,
    "omega_deviation_of_mean": float,
}
"""Schema of the per-cell summary table (error interval: 95% Wilson score). ``rounds_*``: the
rounds of adaptivity C(τ) over the cell's runs (Appendix H); NaN for fully sequential algorithms.
``reported_mean``: mean of ``reported_tau`` (NaN where the algorithm reports none). The
allocation columns are described in the module docstring."""

Targets = Mapping[tuple[str, str, float], "np.ndarray | None"]
"""ω* of each cell, keyed by (algorithm label, means as in the CSV, ε)."""


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
    (20.0, 6.0, 2.6457513110645907, 9.0)
    """
    tau = np.asarray(tau, np.float64)
    n = tau.size
    rounds = optional_ints(np.full(n, -1) if rounds is None else rounds)  # NaN: no rounds
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
        "rounds_std": float(rounds.std(ddof=1) if n > 1 else rounds.sum() * 0.0),  # NaN: none
        "rounds_max": float(rounds.max()),
    }


def format_floats(values: np.ndarray | None) -> str:
    """Per-arm numbers as one summary cell: space-separated shortest repr ("" for None)."""
    return "" if values is None else " ".join(repr(float(v)) for v in values)


def parse_floats(text: str) -> np.ndarray | None:
    """Inverse of `format_floats` (None for an empty cell)."""
    return np.array([float(x) for x in text.split()]) if text.strip() else None


def summarize_allocations(
    counts: np.ndarray | None, tau: np.ndarray, omega: np.ndarray | None = None
) -> dict:
    """The allocation columns of one cell from its runs' final counts ``(n, K)``.

    ``counts`` None (a CSV without counts) leaves every column empty. A run with τ = 0 (never
    run) has no proportions and is left out.

    >>> s = summarize_allocations(np.array([[3, 1], [2, 2]]), np.array([4, 4]), np.array([.5, .5]))
    >>> s["proportions"], s["omega_deviation"], s["omega_deviation_of_mean"]
    ('0.625 0.375', 0.125, 0.125)
    """
    empty = {
        "proportions": "",
        "proportions_std": "",
        "omega_star": format_floats(omega),
        "omega_deviation": float("nan"),
        "omega_deviation_of_mean": float("nan"),
    }
    tau = np.asarray(tau, np.float64)
    ran = tau > 0
    if counts is None or not ran.any():
        return empty
    share = np.asarray(counts, np.float64)[ran] / tau[ran, None]
    mean = share.mean(axis=0)
    std = share.std(axis=0, ddof=1) if len(share) > 1 else np.zeros_like(mean)
    out = empty | {"proportions": format_floats(mean), "proportions_std": format_floats(std)}
    if omega is not None:
        omega = np.asarray(omega, np.float64)
        out["omega_deviation"] = float(np.abs(share - omega).max(axis=1).mean())
        out["omega_deviation_of_mean"] = float(np.abs(mean - omega).max())
    return out


def _cell_counts(table: Table, idx: np.ndarray) -> np.ndarray | None:
    """The final counts of a cell's runs, or None where the table has none."""
    if "counts" not in table or any(not str(c).strip() for c in table["counts"][idx]):
        return None
    return counts_matrix(table["counts"][idx])


def summarize(table: Table, targets: Targets | None = None) -> Table:
    """One row per cell (`CELL_KEYS`), columns `SUMMARY_COLUMNS`, in order of appearance.

    ``targets``: ω* of the cells (`allocation_targets`); a cell without one (or no
    ``targets``) has empty ω* columns. A table without ``counts`` or ``reported_tau``
    columns (older CSVs, hand-made tables) gets empty allocation columns and NaN
    ``reported_mean``.
    """
    targets = targets or {}
    groups: dict[tuple, list[int]] = {}
    for i, key in enumerate(zip(*(table[k].tolist() for k in CELL_KEYS), strict=True)):
        groups.setdefault(key, []).append(i)
    rows = []
    for key, rows_of_cell in groups.items():
        idx = np.asarray(rows_of_cell)
        cell = dict(zip(CELL_KEYS, key, strict=True))
        stats = summarize_runs(
            table["tau"][idx], table["correct"][idx], table["censored"][idx], table["rounds"][idx]
        )
        reported = optional_ints(table["reported_tau"][idx] if "reported_tau" in table else -1)
        stats["reported_mean"] = float(reported.mean())  # NaN where one run reports none
        omega = targets.get((cell["algorithm"], cell["means"], float(cell["epsilon"])))
        stats |= summarize_allocations(_cell_counts(table, idx), table["tau"][idx], omega)
        rows.append(cell | stats)
    return {
        name: np.array([r[name] for r in rows], dtype=dtype_of(kind))
        for name, kind in SUMMARY_COLUMNS.items()
    }


def target_allocation(alg: Algorithm, means: np.ndarray, epsilon: np.ndarray) -> np.ndarray | None:
    """ω* that ``alg`` targets on an instance of ``means`` at each ε (1-D), shape
    ``(len(epsilon), K)``: its `jaxbai.base.AlgorithmInfo.allocation_target` (with the
    algorithm's own β); None for an algorithm without a known target.

    Examples:
        >>> import jaxbai
        >>> w = target_allocation(jaxbai.ttucb(), np.array([0.6, 0.2]), np.array([np.inf]))
        >>> w.round(6).tolist()  # two arms, β = 1/2: (β, 1 − β)
        [[0.5, 0.5]]
        >>> target_allocation(jaxbai.dp_se(), np.array([0.6, 0.2]), np.array([1.0])) is None
        True
    """
    target = alg.info.allocation_target
    if target is None:
        return None
    epsilon = np.atleast_1d(np.asarray(epsilon, np.float64))
    return target(np.asarray(means, np.float64), epsilon)


def algorithms_of(sweep_config: SweepConfig | None) -> dict[str, Algorithm]:
    """The algorithm of every label of a sweep's configuration, as the sweep runs it; without
    a configuration, none (no cell then has a target)."""
    if sweep_config is None:
        return {}
    return {spec.label: spec.build(sweep_config.threshold) for spec in sweep_config.algorithms}


def allocation_targets(table: Table, algorithms: Mapping[str, Algorithm]) -> Targets:
    """ω* of every cell of ``table`` whose algorithm label is in ``algorithms`` (label →
    the algorithm that ran), by `target_allocation`: one theory call per (algorithm,
    instance). Cells of algorithms without a target are absent."""
    cells: dict[tuple[str, str], list[float]] = {}
    for label, means, eps in zip(
        table["algorithm"].tolist(), table["means"].tolist(), table["epsilon"].tolist(), strict=True
    ):
        if label in algorithms:
            epsilons = cells.setdefault((label, means), [])
            if float(eps) not in epsilons:
                epsilons.append(float(eps))
    targets: dict[tuple[str, str, float], np.ndarray | None] = {}
    for (label, means), epsilons in cells.items():
        omega = target_allocation(algorithms[label], parse_means(means), np.array(epsilons))
        if omega is None:
            continue
        for eps, w in zip(epsilons, omega, strict=True):
            targets[(label, means, eps)] = w
    return targets


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


def weighted_line(x: np.ndarray, y: np.ndarray, se: np.ndarray) -> tuple[Interval, float] | None:
    """(slope b with a 95% interval, intercept a) of y = a + b x by weighted least squares.

    Weights are 1/se²; the slope's standard error is scaled up by √(χ²/(n − 2)) when the
    points scatter more than their standard errors (model misfit). None with fewer than three
    points.

    Examples:
        >>> slope, a = weighted_line(np.arange(4.0), 1 + 2 * np.arange(4.0), np.ones(4))
        >>> round(slope.value, 9), round(a, 9)
        (2.0, 1.0)
    """
    if len(x) < 3:
        return None
    x, y = np.asarray(x, np.float64), np.asarray(y, np.float64)
    w = np.maximum(np.asarray(se, np.float64), 1e-12) ** -2.0
    xbar = np.sum(w * x) / np.sum(w)
    ybar = np.sum(w * y) / np.sum(w)
    sxx = np.sum(w * (x - xbar) ** 2)
    slope = float(np.sum(w * (x - xbar) * (y - ybar)) / sxx)
    resid = y - ybar - slope * (x - xbar)
    chi2 = float(np.sum(w * resid**2))
    scale = math.sqrt(max(1.0, chi2 / (len(x) - 2)))
    half = Z95 * scale / math.sqrt(sxx)
    return Interval(slope, slope - half, slope + half), float(ybar - slope * xbar)


def loglog_slope(epsilon: np.ndarray, mean: np.ndarray, se: np.ndarray) -> Interval | None:
    """Slope b of log(mean τ) = a + b log ε by `weighted_line` (weights 1/Var(log mean) ≈
    (mean/se)²), with a 95% interval; None with fewer than three points."""
    mean = np.asarray(mean, np.float64)
    se_log = np.asarray(se, np.float64) / mean
    fit = weighted_line(np.log(np.asarray(epsilon, np.float64)), np.log(mean), se_log)
    return None if fit is None else fit[0]


def log_delta_line(
    delta: np.ndarray, mean: np.ndarray, se: np.ndarray
) -> tuple[Interval, float] | None:
    """(slope, intercept) of mean τ = a + b log(1/δ) by `weighted_line`: the slope estimates
    lim E[τ]/log(1/δ), the characteristic time the algorithm reaches."""
    x = np.log(1 / np.asarray(delta, np.float64))
    return weighted_line(x, mean, se)


def asymptotic_bound(alg: Algorithm, means: np.ndarray, epsilon: float) -> float:
    """The paper's bound on lim sup E[τ]/log(1/δ) of ``alg`` (its
    `jaxbai.base.AlgorithmInfo.asymptotic_bound`, with its β and σ) on ``means`` at ε; NaN
    for an algorithm without one.

    Examples:
        >>> import jaxbai
        >>> t = asymptotic_bound(jaxbai.ttucb(), np.array([0.6, 0.2]), np.inf)
        >>> round(t, 3)  # two Gaussian arms, β = 1/2, σ = 1/2: 8σ²/Δ²
        12.5
    """
    bound = alg.info.asymptotic_bound
    return math.nan if bound is None else bound(np.asarray(means, np.float64), epsilon)
