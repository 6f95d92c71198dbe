"""Neighbouring reward tables on which a release matters to a decision: `neighbouring_tables`.

An algorithm's audit (`jaxbai.audit.audit_algorithm`) can only certify what its two tables make
visible. Where the changed participant moves no decision (an elimination test far from its
threshold, a horizon that ends before the first decision that reads the data) no event
separates the tables, whatever the algorithm leaks: two arms with every reward 0 against
participant 0 = 1, horizon 16, show nothing of a successive elimination whose first test comes
after 2R₁ samples. `neighbouring_tables` searches a pair for a given algorithm and ε on pilot
runs, in three stages:

1. the horizon (unless given): every background below is run up to 16 samples, then 128, 1024,
   … and ``max_horizon``, until some record's frequency (a[t] = k, or τ ≤ t with â = k)
   differs between two backgrounds by more than max(`DEPENDENCE`, 6 standard errors); the
   first such t is the first decision that depends on the data. The horizon is the smallest
   power of two ≥ max(16, t + 1) (``max_horizon`` if no decision depends on the data by then);
2. the background: two-level tables, arm 0's rewards all g and the other arms' 0 (g on a grid
   of `GRID` + 1 points of [0, 1]; g = 0 is the all-zero table), and the constant tables ½ and
   1; then, up to `ZOOM` times, the interval of adjacent g whose records differ most is halved.
   This homes in on a threshold: DP-SE's test μ̃₀ − μ̃₁ > 2(h + c) flips within a few Laplace
   scales 1/(εR₁) of g = 2(h + c), far narrower than any grid;
3. the pair: participant 0 changed from 0 to 1 on each of the `BACKGROUNDS` backgrounds with
   the least certain decision (max over the events above of min(f, 1 − f)); then, on the best
   of them, every position (0 … K − 1, the first pull of each arm, then K·2^j < horizon) with
   every value pair of `VALUE_PAIRS` (her rewards in the two tables). Each pair is scored by a
   pilot audit: the best Wilson-score stand-in for the certified bound over every candidate
   event of the audit, in both directions, at the audit's level (`jaxbai.audit._select`), on
   ``runs`` runs of each table; the best pair is returned.

Cost: at most (`GRID` + 3) × ``runs`` runs up to each horizon of stage 1 (16, 128, …), then
(`GRID` + 3 + `ZOOM`) × ``runs`` single-table runs and (`BACKGROUNDS` + 3 × positions) × 2 ×
``runs`` runs up to the horizon (positions ≤ K + log₂(horizon/K)); `NeighbouringTables.runs`
is what was spent, and a program is compiled per horizon looked at.
"""

from __future__ import annotations

import itertools
import math
from typing import Any, NamedTuple

import numpy as np

from jaxbai import checks
from jaxbai.audit._runs import Runner, base_key, count, runner, selection
from jaxbai.audit._select import check_count, check_epsilon, check_level, pilot_score
from jaxbai.base import Algorithm
from jaxbai.instances import reward_table

__all__ = [
    "BACKGROUNDS",
    "DEPENDENCE",
    "GRID",
    "MAX_HORIZON",
    "SEARCH_RUNS",
    "VALUE_PAIRS",
    "ZOOM",
    "NeighbouringTables",
    "neighbouring_tables",
]

SEARCH_RUNS = 2000
"""Default pilot runs per table and candidate."""
MAX_HORIZON = 4096
"""Default longest horizon the search looks at."""
GRID = 8
"""Intervals of the coarse grid of arm 0's level g ∈ [0, 1]."""
ZOOM = 16
"""At most this many halvings of the interval of g where the record changes most."""
DEPENDENCE = 0.1
"""Least difference of an event's frequency between backgrounds that counts as a decision
depending on the data."""
BACKGROUNDS = 4
"""Backgrounds scored with participant 0 changed (those with the least certain decision)."""
VALUE_PAIRS = ((0.0, 1.0), (0.0, 0.5), (0.5, 1.0))
"""The changed participant's rewards (every arm) in the table and in its neighbour."""

_MIN_HORIZON = 16
_WIDEN = 8
"""Stage 1 looks up to 16, 128, 1024, … samples."""
_FINEST = 1e-6
"""No halving below this width of g (float32 rewards resolve about 6·10⁻⁸)."""
_SEARCH_STREAM = 2
"""The search's batches of runs derive from ``fold_in(key(seed), 2)``; the audit's two tables
use streams 0 and 1."""


class NeighbouringTables(NamedTuple):
    """Two reward tables differing in one participant's row, and how they were found.

    Attributes:
        table: (horizon, K) rewards in [0, 1].
        table_prime: ``table`` with row ``row`` changed.
        horizon: the record's length to audit them at.
        row: the changed participant (she answers pull ``row``).
        values: her rewards (every arm) in ``table`` and in ``table_prime``.
        background: (arm 0's rewards, the other arms') elsewhere.
        score: the pilot audit's score of the pair (−inf: no candidate separated its tables).
        candidates: the pairs scored.
        runs: pilot runs spent by the search, all stages.
    """

    table: np.ndarray
    table_prime: np.ndarray
    horizon: int
    row: int
    values: tuple[float, float]
    background: tuple[float, float]
    score: float
    candidates: int
    runs: int

    @property
    def label(self) -> str:
        """The tables in words."""
        low, high = self.values
        arm0, rest = self.background
        return (
            f"arm 0 at {arm0:.6g}, other arms at {rest:.6g}; participant {self.row}: {low:g} "
            f"against {high:g}; horizon {self.horizon}"
        )


class _Search(NamedTuple):
    """What every pilot batch needs: the algorithm, its parameters, sizes and the seed."""

    alg: Algorithm
    params: Any
    num_arms: int
    runs: int
    seed: int
    device: str | None
    confidence: float
    delta: float


class _Spent:
    """Numbers the pilot batches (each its own key stream) and counts their runs."""

    def __init__(self) -> None:
        self.batches = 0
        self.runs = 0

    def next(self, runs: int) -> int:
        self.batches += 1
        self.runs += runs
        return self.batches


def _background(level: tuple[float, float], horizon: int, num_arms: int) -> np.ndarray:
    """(horizon, K): arm 0's rewards ``level[0]``, the other arms' ``level[1]``."""
    table = np.full((horizon, num_arms), level[1])
    table[:, 0] = level[0]
    return table


def _profile(search: _Search, run: Runner, spent: _Spent, level) -> np.ndarray:
    """The record's frequencies by time (`Tally.profile`) on a background, pilot runs."""
    inst = reward_table(_background(level, run.horizon, search.num_arms))
    empty = np.zeros((len(run.checkpoints) + 1, 0), np.uint32)
    base = base_key(search.seed, _SEARCH_STREAM, spent.next(search.runs))
    return count(run, base, inst, 0, search.runs, empty).profile()


def _threshold(runs: int) -> float:
    """max(`DEPENDENCE`, 6 standard errors of a difference of two frequencies near ½)."""
    return max(DEPENDENCE, 6.0 * math.sqrt(0.5 / runs))


def _first_decision(profiles: list[np.ndarray], runs: int) -> int | None:
    """The first time at which some event's frequency differs between backgrounds."""
    stacked = np.stack(profiles)
    spread = (stacked.max(axis=0) - stacked.min(axis=0)).max(axis=1)
    times = np.flatnonzero(spread > _threshold(runs))
    return int(times[0]) if times.size else None


def _horizon(search: _Search, spent: _Spent, levels: list, max_horizon: int) -> int:
    """Stage 1: the smallest power of two ≥ max(16, t + 1), t the first decision that depends
    on the data, looked for up to 16, 128, 1024, … then ``max_horizon`` (that if none)."""
    span = _MIN_HORIZON
    while True:
        span = min(span, max_horizon)
        wide = runner(search.alg, search.params, span, search.num_arms, search.runs, search.device)
        first = _first_decision([_profile(search, wide, spent, lv) for lv in levels], search.runs)
        if first is not None:
            return min(span, max(_MIN_HORIZON, 1 << first.bit_length()))
        if span == max_horizon:
            return max_horizon
        span *= _WIDEN


def _distance(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.max(np.abs(a - b)))


def _zoom(search: _Search, run: Runner, spent: _Spent, path: dict) -> None:
    """Halve, up to `ZOOM` times, the interval of adjacent g whose profiles differ most."""
    for _ in range(ZOOM):
        levels = sorted(path)
        gaps = [_distance(path[a], path[b]) for a, b in itertools.pairwise(levels)]
        i = int(np.argmax(gaps))
        if gaps[i] <= _threshold(search.runs) or levels[i + 1] - levels[i] < _FINEST:
            return
        middle = (levels[i] + levels[i + 1]) / 2
        path[middle] = _profile(search, run, spent, (middle, 0.0))


def _uncertainty(profile: np.ndarray) -> float:
    """How uncertain the least certain decision is: max over events of min(f, 1 − f)."""
    return float(np.max(np.minimum(profile, 1.0 - profile)))


class _Pair(NamedTuple):
    score: float
    level: tuple[float, float]
    row: int
    values: tuple[float, float]


def _tables(pair: _Pair, horizon: int, num_arms: int) -> tuple[np.ndarray, np.ndarray]:
    table = _background(pair.level, horizon, num_arms)
    table_prime = table.copy()
    table[pair.row], table_prime[pair.row] = pair.values
    return table, table_prime


def _score(search: _Search, run: Runner, spent: _Spent, level, row, values) -> _Pair:
    """A pilot audit of one candidate pair."""
    pair = _Pair(-math.inf, level, row, values)
    insts = [reward_table(t) for t in _tables(pair, run.horizon, search.num_arms)]
    bases = [base_key(search.seed, _SEARCH_STREAM, spent.next(search.runs)) for _ in insts]
    tallies, _ = selection(run, bases, insts, search.runs)
    counts = [tally.counts() for tally in tallies]
    score = pilot_score(*counts, search.runs, search.confidence, search.delta)
    return pair._replace(score=score)


def _positions(horizon: int, num_arms: int) -> list[int]:
    """0 … K − 1 (each arm's first pull), then K·2^j < horizon."""
    doubling = [num_arms << j for j in range(horizon.bit_length())]
    return sorted({*range(min(num_arms, horizon)), *(p for p in doubling if p < horizon)})


def neighbouring_tables(
    alg: Algorithm,
    epsilon: float,
    *,
    seed: int,
    num_arms: int = 2,
    horizon: int | None = None,
    max_horizon: int = MAX_HORIZON,
    runs: int = SEARCH_RUNS,
    risk: float = 0.01,
    confidence: float = 0.95,
    delta: float = 0.0,
    device: str | None = None,
) -> NeighbouringTables:
    """Neighbouring reward tables for auditing ``alg`` at ``epsilon``, found on pilot runs.

    Searches the horizon, the background rewards, the changed participant and her rewards
    (module docstring, with the cost) for the pair whose pilot audit separates the tables most.
    The search cannot bias the certified bound of `audit_algorithm` on the pair it returns:
    its pilot runs come from their own key stream (``fold_in(key(seed), 2)``, a fresh batch per
    candidate), never from the audit's streams 0 and 1, so the audit's runs are independent
    of the choice; given the tables, the Clopper–Pearson limits hold at the stated confidence
    as for any pair fixed in advance (Definition 8 bounds every pair of neighbouring tables),
    hence also for a pair chosen by any rule from other runs.

    Args:
        alg: any object satisfying `jaxbai.base.Algorithm`.
        epsilon: the ε it claims, finite and > 0.
        seed: seed of the pilot runs (an audit with the same seed uses other streams).
        num_arms: K ≥ 2.
        horizon: the record's length; None: searched (stage 1), at most ``max_horizon``.
        max_horizon: the longest horizon searched, ≥ 1.
        runs: pilot runs per table and candidate, ≥ 2.
        risk: the BAI risk δ passed to ``alg.params``.
        confidence: the audit's confidence (the level the pilot scores use), in (0, 1).
        delta: the δ of an (ε, δ) claim.
        device: ``"cpu"``, ``"gpu"`` or None (JAX's default devices).

    Returns:
        `NeighbouringTables`; its ``score`` is −inf where no candidate separated the tables
        (the audit will then find no evidence either).

    Raises:
        ValueError: a bad argument, before anything is compiled.

    Examples:
        >>> import jaxbai
        >>> found = neighbouring_tables(jaxbai.adap_tt(), 1.0, seed=0, max_horizon=16, runs=200)
        >>> found.horizon, found.table.shape, int((found.table != found.table_prime).any(1).sum())
        (16, (16, 2), 1)
    """
    eps = check_epsilon(epsilon)
    num_arms = checks.check_num_arms(num_arms)
    max_horizon = check_count("max_horizon", max_horizon, minimum=1)
    if horizon is not None:
        horizon = check_count("horizon", horizon, minimum=1)
    runs = check_count("runs", runs)
    checks.check_open_unit("risk", risk)
    confidence, delta = check_level(confidence, delta)
    params = alg.params(epsilon=eps, delta=risk)
    seed = checks.check_seed(seed)
    search = _Search(alg, params, num_arms, runs, seed, device, confidence, delta)
    spent = _Spent()
    levels = [*((g, 0.0) for g in np.linspace(0.0, 1.0, GRID + 1)), (0.5, 0.5), (1.0, 1.0)]
    if horizon is None:
        horizon = _horizon(search, spent, levels, max_horizon)
    run = runner(alg, params, horizon, num_arms, runs, device)
    profiles = {lv: _profile(search, run, spent, lv) for lv in levels}
    path = {g: p for (g, rest), p in profiles.items() if rest == 0.0}
    _zoom(search, run, spent, path)
    profiles.update({(g, 0.0): p for g, p in path.items()})
    ranked = sorted(profiles, key=lambda lv: -_uncertainty(profiles[lv]))[:BACKGROUNDS]
    first_pulls = [_score(search, run, spent, lv, 0, VALUE_PAIRS[0]) for lv in ranked]
    level = max(first_pulls, key=lambda p: p.score).level
    others = [
        _score(search, run, spent, level, row, values)
        for row in _positions(horizon, num_arms)
        for values in VALUE_PAIRS
        if (row, values) != (0, VALUE_PAIRS[0])
    ]
    candidates = first_pulls + others
    best = max(candidates, key=lambda p: p.score)
    table, table_prime = _tables(best, horizon, num_arms)
    background = (float(best.level[0]), float(best.level[1]))
    return NeighbouringTables(
        table, table_prime, horizon, best.row, best.values, background, best.score,
        len(candidates), spent.runs,
    )  # fmt: skip
