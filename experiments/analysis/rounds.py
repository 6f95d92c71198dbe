"""Rounds of adaptivity C(τ) against the bounds of Appendix H.

C(τ) counts the episodes of an episodic algorithm (docs/semantics.md §20): per-arm episodes (DAF
of AdaP-TT and AdaP-TT*, DPA of TTUCB-DPA) or one global episode (their ``_global`` variants);
DP-SE reports its epochs, and fully sequential algorithms report −1. By Jensen's inequality,

    E[C(τ)] ≤ K log₂ E[τ]   (per-arm episodes),      E[C(τ)] ≤ log₂ E[τ]   (one global episode),

and nothing is claimed for DP-SE's epochs. `rounds_ratios` compares every cell's mean C with
its bound at the measured mean τ, with a 95% interval (normal for both means; the bound's
interval is the bound at the ends of τ's interval).

Examples:
    >>> rounds_bound("per_arm", 5, 1024.0), rounds_bound("global", 5, 1024.0)
    (50.0, 10.0)
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, NamedTuple

import numpy as np

from experiments.analysis.results import Table
from experiments.analysis.stats import Z95, Interval
from experiments.config.specs import AlgorithmSpec, registry

if TYPE_CHECKING:
    from experiments.config import SweepConfig
    from jaxbai.base import Algorithm

__all__ = [
    "BOUND_TEXT",
    "RoundsCell",
    "episode_mode",
    "episode_modes",
    "rounds_bound",
    "rounds_ratios",
]

BOUND_TEXT = {"per_arm": "K log₂ E[τ]", "global": "log₂ E[τ]"}
"""The bound of Appendix H for each episode mode, in words."""


def episode_mode(alg: Algorithm) -> str | None:
    """``"per_arm"`` or ``"global"`` for an episodic algorithm; None otherwise (DP-SE's epochs
    and fully sequential algorithms have no bound in Appendix H)."""
    from jaxbai.base import Episodic

    return alg.episodes if isinstance(alg, Episodic) else None


def episode_modes(
    labels: Iterable[str],
    config: SweepConfig | None = None,
    algorithms: Mapping[str, Algorithm] | None = None,
) -> dict:
    """The episode mode of every algorithm label: that of ``algorithms[label]`` (the algorithm
    as the sweep ran it) where given, else built from the configuration's spec if it has one,
    else from the registry entry of that name (None when none knows it)."""
    entries = registry()
    ran = algorithms or {}
    own = {a.label: a for a in config.algorithms} if config is not None else {}
    threshold = config.threshold if config is not None else "heuristic"
    modes = {}
    for label in labels:
        if label in ran:
            modes[label] = episode_mode(ran[label])
            continue
        spec = own.get(label, AlgorithmSpec(label, label))
        known = spec.algorithm in entries
        modes[label] = episode_mode(spec.build(threshold)) if known else None
    return modes


def rounds_bound(mode: str, num_arms: int, mean_tau: float) -> float:
    """K log₂ E[τ] (``"per_arm"``) or log₂ E[τ] (``"global"``)."""
    factor = num_arms if mode == "per_arm" else 1
    return factor * math.log2(mean_tau)


class RoundsCell(NamedTuple):
    """One summary row's rounds against its bound.

    Attributes:
        row: index in the summary table.
        mode: episode mode, or None (no bound: e.g. DP-SE's epochs).
        rounds: mean C with its 95% interval.
        bound: the bound at the mean τ, with its interval at the ends of τ's interval.
        ratio: mean C / bound, with its 95% interval (NaN without a bound).
    """

    row: int
    mode: str | None
    rounds: Interval
    bound: Interval
    ratio: Interval


def _interval(mean: float, std: float, runs: int) -> Interval:
    half = Z95 * std / math.sqrt(max(runs, 1))
    return Interval(mean, mean - half, mean + half)


def rounds_ratios(summary: Table, modes: dict) -> list[RoundsCell]:
    """Every summary row with rounds (C ≥ 0) against its bound, in summary order."""
    nan = Interval(math.nan, math.nan, math.nan)
    cells = []
    for i in np.flatnonzero(summary["rounds_max"] >= 0):
        runs = int(summary["runs"][i])
        rounds = _interval(summary["rounds_mean"][i], summary["rounds_std"][i], runs)
        mode = modes.get(summary["algorithm"][i])
        if mode is None:
            cells.append(RoundsCell(int(i), None, rounds, nan, nan))
            continue
        tau = _interval(summary["mean"][i], summary["std"][i], runs)
        k = int(summary["K"][i])
        low = rounds_bound(mode, k, max(tau.lo, 1.0))
        bound = Interval(rounds_bound(mode, k, tau.value), low, rounds_bound(mode, k, tau.hi))
        ratio = Interval(
            rounds.value / bound.value,
            rounds.lo / bound.hi,
            rounds.hi / low if low > 0 else math.inf,
        )
        cells.append(RoundsCell(int(i), mode, rounds, bound, ratio))
    return cells
