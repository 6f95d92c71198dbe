"""The ε-global-DP lower bound of DP-TT against the 2024 paper's, on the six paper instances.

T*_ε (`jaxbai.theory.t_star_dp`; Jourdan & Azize 2025, "Optimal Best Arm Identification under
Differential Privacy", arXiv 2510.17348) beside T*_g (`jaxbai.theory.t_star_global`, Theorem 17
of the 2024 paper), and the two lower bounds T*_ε log(1/(3δ)) and T*_g log(1/(2.4δ)) on the
expected sample complexity at one δ. T*_ε ≥ T*_g always (the signed divergence d_ε is at most
min{KL, ε TV} arm by arm), but the new bound's constant is 3 where the old one's is 2.4: it is
above the old bound only where T*_ε / T*_g > log(1/(2.4δ)) / log(1/(3δ)), that is for δ below
δ₀ = exp(−(r log 3 − log 2.4) / (r − 1)), r = T*_ε / T*_g (``log_inv_delta_above`` = log(1/δ₀)).
A cell where it is not above at the chosen δ is flagged. Both times are solved to a certified
relative accuracy (1e-5); a ratio within the two certified gaps of 1 counts as equal (δ₀ = 0).

Usage:
    python -m experiments.studies dp-tt-theory [--out DIR] [--delta 0.01]
        [--instances mu1 ... mu6] [--epsilons 0.001 0.01 0.1 1 10 inf]

Writes ``DIR/dp_tt_theory.json`` (one row per instance × ε) and prints the Markdown table.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

__all__ = ["EPSILONS", "INSTANCES", "log_inv_delta_above", "markdown_table", "table"]

EPSILONS = (1e-3, 1e-2, 0.1, 1.0, 10.0, math.inf)
INSTANCES = ("mu1", "mu2", "mu3", "mu4", "mu5", "mu6")
DELTA = 0.01


def log_inv_delta_above(ratio: float, gap: float) -> float:
    """log(1/δ₀), δ₀ the largest δ below which T*_ε log(1/(3δ)) > T*_g log(1/(2.4δ)).

    For r = T*_ε / T*_g > 1 the new bound is above the old one iff log(1/δ) > (r log 3 −
    log 2.4) / (r − 1). ``inf`` where r − 1 is within ``gap`` (the two solvers' certified
    relative gaps): the times are equal to the solvers' accuracy, and the new bound is below
    the old one at every δ. (δ₀ itself underflows a float for r near 1.)

    Examples:
        >>> round(log_inv_delta_above(1.25, 1e-5), 4)  # (1.25 log 3 − log 2.4) / 0.25
        1.9912
        >>> log_inv_delta_above(1.0 + 1e-6, 1e-5)
        inf
    """
    if ratio - 1.0 <= gap:
        return math.inf
    return (ratio * math.log(3.0) - math.log(2.4)) / (ratio - 1.0)


def table(
    instances: Sequence[str], epsilons: Sequence[float], delta: float
) -> list[dict[str, Any]]:
    """One row per (instance, ε): both times, their certified gaps, both bounds, the flag."""
    import jaxbai
    from jaxbai import theory

    means = np.array([jaxbai.PAPER_INSTANCES[i] for i in instances])
    eps = np.asarray(epsilons, np.float64)
    t_dp, _, info_dp = theory.t_star_dp(means[:, None, :], eps[None, :], return_info=True)
    t_g, _, info_g = theory.t_star_global(means[:, None, :], eps[None, :], return_info=True)
    free = np.asarray(theory.free_privacy_epsilon(means), np.float64)
    bound_dp = np.asarray(theory.lower_bound_dp(means[:, None, :], eps[None, :], delta))
    bound_g = np.asarray(theory.lower_bound_samples(t_g, delta, "log"))
    t_dp, t_g = np.asarray(t_dp, np.float64), np.asarray(t_g, np.float64)
    gap_dp = np.asarray(info_dp.rel_gap, np.float64)
    gap_g = np.asarray(info_g.rel_gap, np.float64)
    rows = []
    for i, inst in enumerate(instances):
        for j, e in enumerate(eps):
            ratio = t_dp[i, j] / t_g[i, j]
            rows.append(
                {
                    "instance": inst,
                    "epsilon": float(e),
                    "delta": delta,
                    "free_privacy_epsilon": float(free[i]),
                    "t_star_dp": float(t_dp[i, j]),
                    "t_star_global": float(t_g[i, j]),
                    "rel_gap_dp": float(gap_dp[i, j]),
                    "rel_gap_global": float(gap_g[i, j]),
                    "ratio": float(ratio),
                    "bound_dp": float(bound_dp[i, j]),
                    "bound_global": float(bound_g[i, j]),
                    "dp_above": bool(bound_dp[i, j] > bound_g[i, j]),
                    "log_inv_delta_above": log_inv_delta_above(ratio, gap_dp[i, j] + gap_g[i, j]),
                }
            )
    return rows


def _delta_cell(log_inv: float) -> str:
    """exp(−log_inv) as text, also where it is far below the smallest float."""
    if math.isinf(log_inv):
        return "never (equal)"
    if log_inv < 700.0:
        return f"{math.exp(-log_inv):.2g}"
    log10 = -log_inv / math.log(10.0)
    exponent = math.floor(log10)
    mantissa = float(f"{10.0 ** (log10 - exponent):.2g}")  # 9.99 rounds to 10: carry it
    exponent += mantissa >= 10.0
    return f"{mantissa / 10.0 if mantissa >= 10.0 else mantissa:.2g}e{exponent}"


def markdown_table(rows: list[dict[str, Any]]) -> str:
    """Instances × ε: T*_ε, T*_g, their ratio, both bounds at δ, the flag and δ₀."""
    delta = rows[0]["delta"]
    lines = [
        f"| instance | ε | T*_ε | T*_g | T*_ε / T*_g | T*_ε log(1/(3δ)) | T*_g log(1/(2.4δ)) "
        f"| new above old at δ = {delta:g} | new above old for δ < |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        flag = "yes" if r["dp_above"] else "**no** ⚑"
        lines.append(
            f"| {r['instance']} | {r['epsilon']:g} | {r['t_star_dp']:.6g} "
            f"| {r['t_star_global']:.6g} | {r['ratio']:.5f} | {r['bound_dp']:.6g} "
            f"| {r['bound_global']:.6g} | {flag} | {_delta_cell(r['log_inv_delta_above'])} |"
        )
    return "\n".join(lines)
