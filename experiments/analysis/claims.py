"""The claims of Section 5 and their evaluation against measured stopping times.

Each claim gets the measured evidence and a verdict:

* **holds**: every tested cell supports the claim at 95% confidence (or, for error rates and
  lower bounds, the point estimate is on the claimed side and nothing contradicts it);
* **fails**: at least one cell contradicts it at 95% confidence;
* **inconclusive**: otherwise (too few cells, intervals straddling the boundary, censoring).

Regimes are placed with `jaxbai.theory.regime_switch` ε_s of each instance and trust model:
*low privacy* is ε ≥ 10·ε_s, *high privacy* is ε < ε_s, and slopes in the high-privacy regime are
fitted on ε ≤ ε_s/2 where the ε-dependent term of the bound dominates. Cells with censored runs
never count as evidence for or against a comparison (their mean is only a lower bound).
Nothing here tunes an algorithm: the verdict is what the data say. Algorithms appear in the
statements under their display names in the registry (`jaxbai.ALGORITHMS`). Rendering the
claims as a Markdown report is `experiments.analysis.report`.

Where a sweep holds the published code's variants (`jaxbai.registry.PUBLISHED_VARIANTS`), the
claims of Section 5 are evaluated a second time with each paper algorithm replaced by its
published-code variant (keys suffixed ``p``, e.g. ``G6p``); a claim about an algorithm the
published code does not have (CTB-TT, AdaP-TT*) is left out there.

Example:
    >>> combine(["holds", "inconclusive"])
    'inconclusive'
    >>> cell = Cell("mu1", 0.5, Interval(0.9, 0.8, 1.0), HOLDS)
    >>> describe_cells([cell], "τ ratio")[0]
    'mu1: τ ratio 0.9 (ε=0.5; 1 holds)'
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, NamedTuple

import numpy as np

from experiments.analysis import overlay, results, rounds, stats
from experiments.analysis.results import Table
from experiments.analysis.stats import Interval
from experiments.config.specs import registry

if TYPE_CHECKING:
    from experiments.config import SweepConfig

__all__ = [
    "APPROX_TOLERANCE",
    "FAILS",
    "GLOBAL_PRIVATE",
    "HOLDS",
    "INCONCLUSIVE",
    "LOW_PRIVACY_FACTOR",
    "MAX_EVIDENCE_GROUPS",
    "SLOPE_FACTOR",
    "SLOPE_MAX_HALF_WIDTH",
    "SLOPE_TOLERANCE",
    "Cell",
    "Claim",
    "Context",
    "approx_one",
    "at_most",
    "bound_cells",
    "censored",
    "claim_from_cells",
    "combine",
    "common_claims",
    "context_from_runs",
    "describe_cells",
    "error_cells",
    "evaluate",
    "global_claims",
    "local_claims",
    "mean_interval",
    "monotone_cells",
    "panels",
    "published_claims",
    "ratio_cells",
    "rounds_cells",
    "rounds_claims",
    "rows",
    "slope_cells",
    "slope_verdict",
]

HOLDS, FAILS, INCONCLUSIVE = "holds", "fails", "inconclusive"
LOW_PRIVACY_FACTOR = 10.0  # low privacy: ε ≥ 10 ε_s
SLOPE_FACTOR = 0.5  # slopes fitted on ε ≤ ε_s / 2
SLOPE_TOLERANCE = 0.25  # |slope − target| allowed for "τ ∝ ε^target"
SLOPE_MAX_HALF_WIDTH = 0.5  # a wider slope interval is inconclusive
APPROX_TOLERANCE = 1.1  # "≈": ratio within [1/1.1, 1.1]
GLOBAL_PRIVATE = ("adap_tt", "adap_tt_star")  # the private algorithms of claims G1, G3, G4, G6
MAX_EVIDENCE_GROUPS = 6  # more groups: one summary line plus the first failing cells


class Claim(NamedTuple):
    """One row of the claims table."""

    key: str
    statement: str
    evidence: str
    verdict: str
    details: tuple[str, ...] = ()


class Cell(NamedTuple):
    """One tested cell of a claim: where, the measured quantity and the cell's verdict."""

    instance: str
    epsilon: float
    value: Interval
    verdict: str


def combine(verdicts: Sequence[str]) -> str:
    """fails if any fails; holds if there is at least one and all hold; else inconclusive."""
    if FAILS in verdicts:
        return FAILS
    if verdicts and all(v == HOLDS for v in verdicts):
        return HOLDS
    return INCONCLUSIVE


def at_most(value: Interval, bound: float) -> str:
    """Verdict of "value ≤ bound" from its 95% interval."""
    if value.hi <= bound:
        return HOLDS
    return FAILS if value.lo > bound else INCONCLUSIVE


def approx_one(value: Interval, tolerance: float = APPROX_TOLERANCE) -> str:
    """Verdict of "value ≈ 1", i.e. inside [1/tolerance, tolerance]."""
    if 1 / tolerance <= value.lo and value.hi <= tolerance:
        return HOLDS
    return FAILS if value.lo > tolerance or value.hi < 1 / tolerance else INCONCLUSIVE


def slope_verdict(slope: Interval | None, target: float) -> str:
    """Verdict of "fitted slope = target" within `SLOPE_TOLERANCE`."""
    if slope is None:
        return INCONCLUSIVE
    lo, hi = target - SLOPE_TOLERANCE, target + SLOPE_TOLERANCE
    if slope.hi < lo or slope.lo > hi:
        return FAILS
    narrow = (slope.hi - slope.lo) / 2 <= SLOPE_MAX_HALF_WIDTH
    return HOLDS if lo <= slope.value <= hi and narrow else INCONCLUSIVE


# ----------------------------------------------------------------------------- cell access
class Context(NamedTuple):
    """A summary table with its theory: regime switch per (instance, trust model) (NaN where
    `jaxbai.theory` has none), the lower bound of every summary row (NaN where it has none),
    the episode mode of every algorithm (`experiments.analysis.rounds.episode_modes`) and the reward
    family of every instance."""

    summary: Table
    switch: dict[tuple[str, str], float]
    lower_bound: np.ndarray
    episodes: dict[str, str | None] = {}  # noqa: RUF012 - a NamedTuple default, never mutated
    families: dict[str, str] = {}  # noqa: RUF012
    roles: Mapping[str, str] = {}
    """The algorithm that plays each paper algorithm's part in the claims (default: itself)."""
    asymptotic: Mapping[int, float] = {}
    """lim sup E[τ]/log(1/δ) as the paper bounds it (`experiments.analysis.stats.asymptotic_bound`)
    for each summary row whose algorithm has one."""


def _role(ctx: Context, algorithm: str) -> str:
    return ctx.roles.get(algorithm, algorithm)


def rows(ctx: Context, algorithm: str, instance: str | None = None, delta=None) -> np.ndarray:
    """Indices of the summary rows of ``algorithm`` (optionally one instance, δ), by ε."""
    s = ctx.summary
    mask = s["algorithm"] == algorithm
    if instance is not None:
        mask &= s["instance"] == instance
    if delta is not None:
        mask &= s["delta"] == delta
    idx = np.flatnonzero(mask)
    return idx[np.argsort(s["epsilon"][idx], kind="stable")]


def panels(ctx: Context) -> list[tuple[str, float]]:
    """(instance, δ) pairs of the summary, in order of appearance."""
    pairs = zip(ctx.summary["instance"].tolist(), ctx.summary["delta"].tolist(), strict=True)
    return list(dict.fromkeys(pairs))


def mean_interval(ctx: Context, i: int) -> Interval:
    """Mean τ of summary row ``i`` with a 95% normal interval."""
    m, se = ctx.summary["mean"][i], ctx.summary["se"][i]
    return Interval(m, m - stats.Z95 * se, m + stats.Z95 * se)


def censored(ctx: Context, *indices: int) -> bool:
    """Does any of the rows have censored runs?"""
    return any(ctx.summary["censored"][i] > 0 for i in indices)


def ratio_cells(
    ctx: Context,
    numerator: str,
    denominator: str,
    in_regime: Callable[[str, float], bool],
    verdict: Callable[[Interval], str],
) -> list[Cell]:
    """Cells comparing mean τ of two algorithms at equal (instance, ε, δ) within a regime.

    A non-private denominator (ε = ∞) is matched at every ε of the numerator.
    """
    s = ctx.summary
    cells = []
    for instance, delta in panels(ctx):
        den = {float(s["epsilon"][i]): i for i in rows(ctx, denominator, instance, delta)}
        for i in rows(ctx, numerator, instance, delta):
            eps = float(s["epsilon"][i])
            j = den.get(eps, den.get(math.inf))
            if j is None or not in_regime(instance, eps):
                continue
            r = stats.ratio_interval(s["mean"][i], s["se"][i], s["mean"][j], s["se"][j])
            cells.append(
                Cell(instance, eps, r, INCONCLUSIVE if censored(ctx, i, j) else verdict(r))
            )
    return cells


def slope_cells(
    ctx: Context, algorithm: str, in_regime: Callable[[str, float], bool], target: float
) -> list[Cell]:
    """One log-log slope fit per (instance, δ) on the uncensored cells of a regime; a panel
    with fewer than three such cells (a fit needs them, `stats.loglog_slope`) gives none."""
    s = ctx.summary
    cells = []
    for instance, delta in panels(ctx):
        idx = [
            i
            for i in rows(ctx, algorithm, instance, delta)
            if in_regime(instance, float(s["epsilon"][i])) and not censored(ctx, i)
        ]
        slope = stats.loglog_slope(s["epsilon"][idx], s["mean"][idx], s["se"][idx])
        if slope is None:
            continue
        cells.append(
            Cell(instance, float(s["epsilon"][idx[0]]), slope, slope_verdict(slope, target))
        )
    return cells


# ----------------------------------------------------------------------------- evidence text
def _eps(e: float) -> str:
    return "∞" if math.isinf(e) else f"{e:g}"


def _tally(cells: Sequence[Cell]) -> str:
    counts = {v: sum(c.verdict == v for c in cells) for v in (HOLDS, FAILS, INCONCLUSIVE)}
    return ", ".join(f"{n} {v}" for v, n in counts.items() if n)


def _span(cells: Sequence[Cell]) -> str:
    values = [c.value.value for c in cells if math.isfinite(c.value.value)]
    low, high = (f"{min(values):.3g}", f"{max(values):.3g}") if values else ("n/a", "n/a")
    return low if low == high else f"{low}–{high}"


NO_CELLS = "no cells of this sweep fall in the claim's regime"
NO_SLOPE = "no (instance, δ) of this sweep has three uncensored ε in the claim's regime to fit"


def describe_cells(
    cells: Sequence[Cell], what: str, empty: str = NO_CELLS
) -> tuple[str, tuple[str, ...]]:
    """(evidence line, one detail line per cell).

    The evidence has one part per group (instance) or, with more than `MAX_EVIDENCE_GROUPS`
    groups, one summary with the first failing cells.
    """
    if not cells:
        return empty, ()
    details = tuple(f"{c.instance} ε={_eps(c.epsilon)}: {what} {c.value}" for c in cells)
    groups = list(dict.fromkeys(c.instance for c in cells))
    if len(groups) > MAX_EVIDENCE_GROUPS:
        text = f"{len(cells)} cells ({_tally(cells)}); {what} {_span(cells)}"
        bad = [d for c, d in zip(cells, details, strict=True) if c.verdict == FAILS]
        if bad:
            more = f" (+{len(bad) - 4} more)" if len(bad) > 4 else ""
            text += "; failing: " + "; ".join(bad[:4]) + more
    else:
        parts = []
        for group in groups:
            mine = [c for c in cells if c.instance == group]
            eps = sorted({c.epsilon for c in mine})
            where = f"ε={_eps(eps[0])}" if len(eps) == 1 else f"ε∈[{_eps(eps[0])}, {_eps(eps[-1])}]"
            parts.append(f"{group}: {what} {_span(mine)} ({where}; {_tally(mine)})")
        text = "; ".join(parts)
    verdicts = tuple(f"{d} → {c.verdict}" for c, d in zip(cells, details, strict=True))
    return text, verdicts


def claim_from_cells(
    key: str, statement: str, cells: Sequence[Cell], what: str, empty: str = NO_CELLS
) -> Claim:
    """A claim whose verdict combines its cells' (``empty``: the evidence without cells)."""
    evidence, details = describe_cells(cells, what, empty)
    return Claim(key, statement, evidence, combine([c.verdict for c in cells]), details)


# ----------------------------------------------------------------------------- the claims
def _names(ctx: Context, *algorithms: str) -> tuple[str, ...]:
    """Display names in the registry of the algorithms playing ``algorithms``' parts."""
    entries = registry()
    return tuple(
        entries[r].display_name if r in entries else r for r in (_role(ctx, a) for a in algorithms)
    )


def _regimes(ctx: Context, privacy: str):
    def low(instance: str, eps: float) -> bool:
        return eps >= LOW_PRIVACY_FACTOR * ctx.switch[(instance, privacy)] and math.isfinite(eps)

    def high(instance: str, eps: float) -> bool:
        return eps < ctx.switch[(instance, privacy)]

    def deep(instance: str, eps: float) -> bool:
        return eps <= SLOPE_FACTOR * ctx.switch[(instance, privacy)]

    return low, high, deep


def local_claims(ctx: Context) -> list[Claim]:
    """Section 5.1 (Figures 1 and 3)."""
    low, _, deep = _regimes(ctx, "local")
    ctb, ref = _names(ctx, "ctb_tt", "ttucb")
    ctb_tt, ttucb = _role(ctx, "ctb_tt"), _role(ctx, "ttucb")
    return [
        claim_from_cells(
            "L1",
            f"Local, low privacy (ε ≥ 10 ε_s): {ctb} ≈ {ref} (ratio within ±10%)",
            ratio_cells(ctx, ctb_tt, ttucb, low, approx_one),
            "τ ratio",
        ),
        claim_from_cells(
            "L2",
            f"Local, high privacy (ε ≤ ε_s/2): {ctb} τ ∝ ε⁻² (log-log slope −2 ± 0.25)",
            slope_cells(ctx, ctb_tt, deep, -2.0),
            "slope",
            NO_SLOPE,
        ),
    ]


def global_claims(ctx: Context) -> list[Claim]:
    """Section 5.2 (Figures 2, 4 and 5)."""
    low, high, deep = _regimes(ctx, "global")
    ada, star, ref, dpse = _names(ctx, "adap_tt", "adap_tt_star", "ttucb", "dp_se")
    adap_tt, adap_tt_star = _role(ctx, "adap_tt"), _role(ctx, "adap_tt_star")
    ttucb, dp_se = _role(ctx, "ttucb"), _role(ctx, "dp_se")
    private = [_role(ctx, a) for a in GLOBAL_PRIVATE]
    entries = registry()
    both_names = " and ".join(
        entries[a].display_name if a in entries else a for a in private if a in entries
    )

    def both(make: Callable[[str], list[Cell]]) -> list[Cell]:
        return [c._replace(instance=f"{a}/{c.instance}") for a in private for c in make(a)]

    return [
        claim_from_cells(
            "G1",
            f"Global, low privacy (ε ≥ 10 ε_s): {both_names} ≤ 4 × {ref}",
            both(lambda a: ratio_cells(ctx, a, ttucb, low, lambda r: at_most(r, 4.0))),
            f"τ / τ_{ref}",
        ),
        claim_from_cells(
            "G2",
            f"Global, low privacy (ε ≥ 10 ε_s): {star} ≈ {ada} (ratio within ±10%)",
            ratio_cells(ctx, adap_tt_star, adap_tt, low, approx_one),
            "τ* / τ",
        ),
        claim_from_cells(
            "G3",
            "Global, low privacy (ε ≥ 10 ε_s): τ does not depend on ε (slope 0 ± 0.25)",
            both(lambda a: slope_cells(ctx, a, low, 0.0)),
            "slope",
            NO_SLOPE,
        ),
        claim_from_cells(
            "G4",
            "Global, high privacy (ε ≤ ε_s/2): τ ∝ ε⁻¹ (log-log slope −1 ± 0.25)",
            both(lambda a: slope_cells(ctx, a, deep, -1.0)),
            "slope",
            NO_SLOPE,
        ),
        claim_from_cells(
            "G5",
            f"Global, high privacy (ε < ε_s): {star} ≤ {ada}",
            ratio_cells(ctx, adap_tt_star, adap_tt, high, lambda r: at_most(r, 1.0)),
            "τ* / τ",
        ),
        claim_from_cells(
            "G6",
            f"Global, every ε: {both_names} ≤ {dpse}",
            both(
                lambda a: ratio_cells(ctx, a, dp_se, lambda i, e: True, lambda r: at_most(r, 1.0))
            ),
            f"τ / τ_{dpse}",
        ),
    ]


def published_claims(ctx: Context) -> list[Claim]:
    """The claims of Section 5 with each paper algorithm replaced by its published-code variant
    (`jaxbai.registry.PUBLISHED_VARIANTS`; keys suffixed ``p``); only those with cells, so
    none if the sweep holds no published variant."""
    from jaxbai.registry import PUBLISHED_VARIANTS

    roles = {a: "" for a in ("ctb_tt", "adap_tt_star")} | dict(PUBLISHED_VARIANTS)
    mapped = ctx._replace(roles=roles)
    return [
        c._replace(key=f"{c.key}p", statement=f"[published code] {c.statement}")
        for c in local_claims(mapped) + global_claims(mapped)
        if c.details
    ]


def error_cells(ctx: Context) -> list[Cell]:
    """Every cell: error rate (Wilson 95%) against its δ."""
    s = ctx.summary
    cells = []
    for i in range(len(s["mean"])):
        rate = Interval(s["error_rate"][i], s["error_lo"][i], s["error_hi"][i])
        delta = s["delta"][i]
        if s["stopped"][i] == 0:
            verdict = INCONCLUSIVE
        elif rate.lo > delta:
            verdict = FAILS
        else:
            verdict = HOLDS if rate.value <= delta else INCONCLUSIVE
        cells.append(
            Cell(f"{s['algorithm'][i]}/{s['instance'][i]}", s["epsilon"][i], rate, verdict)
        )
    return cells


def bound_cells(ctx: Context) -> list[Cell]:
    """Every cell with a lower bound: mean τ / bound (censored means are lower bounds, so ≥ 1
    still holds). Cells without a bound in `jaxbai.theory` (e.g. Beta arms) are left out."""
    s = ctx.summary
    cells = []
    for i in range(len(s["mean"])):
        lb = ctx.lower_bound[i]
        if not math.isfinite(lb):
            continue
        m = mean_interval(ctx, i)
        ratio = Interval(m.value / lb, m.lo / lb, m.hi / lb)
        if ratio.value >= 1:
            verdict = HOLDS
        else:
            verdict = FAILS if ratio.hi < 1 and not censored(ctx, i) else INCONCLUSIVE
        cells.append(
            Cell(f"{s['algorithm'][i]}/{s['instance'][i]}", s["epsilon"][i], ratio, verdict)
        )
    return cells


def monotone_cells(ctx: Context) -> list[Cell]:
    """Consecutive ε of each private algorithm: fails where τ increases significantly with ε.

    The ratio is τ(larger ε) / τ(smaller ε). Censoring at the larger ε only hides part of an
    increase; censoring at the smaller ε could fake one, so such a pair cannot fail.
    """
    s = ctx.summary
    cells = []
    for algorithm in dict.fromkeys(s["algorithm"].tolist()):
        for instance, delta in panels(ctx):
            idx = rows(ctx, algorithm, instance, delta)
            for i, j in itertools.pairwise(idx):
                r = stats.ratio_interval(s["mean"][j], s["se"][j], s["mean"][i], s["se"][i])
                verdict = FAILS if r.lo > 1.0 and not censored(ctx, i) else HOLDS
                label = f"{algorithm}/{instance} ε={_eps(s['epsilon'][i])}→"
                cells.append(Cell(label, s["epsilon"][j], r, verdict))
    return cells


def common_claims(ctx: Context) -> list[Claim]:
    """Claims about every cell: δ-correctness, lower bounds, monotonicity."""
    return [
        claim_from_cells(
            "A1",
            "Every cell: empirical error ≤ δ (δ-correctness; 95% Wilson interval)",
            error_cells(ctx),
            "error rate",
        ),
        claim_from_cells(
            "A2",
            "Every cell: mean τ ≥ T*·log(1/(2.4δ)) (Lemma 5, Theorems 10 and 17)",
            bound_cells(ctx),
            "mean τ / bound",
        ),
        claim_from_cells(
            "A3",
            "Every private algorithm: mean τ never increases significantly with ε (Figures 1–5)",
            monotone_cells(ctx),
            "τ(next ε) / τ",
        ),
    ]


def rounds_cells(ctx: Context) -> list[Cell]:
    """Every cell of an episodic algorithm: E[C] / its bound of Appendix H
    (`experiments.analysis.rounds`).

    A censored cell is inconclusive: its C and τ are both cut short.
    """
    s = ctx.summary
    cells = []
    for cell in rounds.rounds_ratios(s, ctx.episodes):
        if cell.mode is None:
            continue
        i = cell.row
        verdict = INCONCLUSIVE if censored(ctx, i) else at_most(cell.ratio, 1.0)
        label = f"{s['algorithm'][i]}/{s['instance'][i]} δ={s['delta'][i]:g}"
        cells.append(Cell(label, s["epsilon"][i], cell.ratio, verdict))
    return cells


def rounds_claims(ctx: Context) -> list[Claim]:
    """Appendix H: rounds of adaptivity against K log₂ E[τ] (per arm) and log₂ E[τ] (global)."""
    return [
        claim_from_cells(
            "R1",
            "Episodic algorithms: E[C(τ)] ≤ K log₂ E[τ] with per-arm episodes, ≤ log₂ E[τ] with"
            " one global episode (Appendix H)",
            rounds_cells(ctx),
            "E[C] / bound",
        )
    ]


def log_delta_cells(ctx: Context) -> list[Cell]:
    """One fit of mean τ on log(1/δ) per (algorithm, instance, ε) with ≥ 3 uncensored δ: the
    slope against T* (the lower bound's characteristic time at that ε). It fails below T* or
    above the algorithm's asymptotic bound (where the paper gives one), and holds when its
    interval lies between them."""
    s = ctx.summary
    curves: dict[tuple, list[int]] = {}
    for i in range(len(s["mean"])):
        if not censored(ctx, i) and math.isfinite(ctx.lower_bound[i]):
            key = (s["algorithm"][i], s["instance"][i], float(s["epsilon"][i]))
            curves.setdefault(key, []).append(i)
    cells = []
    for (algorithm, instance, eps), idx in curves.items():
        fit = stats.log_delta_line(s["delta"][idx], s["mean"][idx], s["se"][idx])
        if fit is None:
            continue
        slope = fit[0]
        i = idx[0]
        t_star = ctx.lower_bound[i] / math.log(1 / (2.4 * s["delta"][i]))
        upper = ctx.asymptotic.get(i, math.nan)
        ratio = Interval(slope.value / t_star, slope.lo / t_star, slope.hi / t_star)
        if slope.hi < t_star or (math.isfinite(upper) and slope.lo > upper):
            verdict = FAILS
        elif slope.lo >= t_star and (not math.isfinite(upper) or slope.hi <= upper):
            verdict = HOLDS
        else:
            verdict = INCONCLUSIVE
        bound = f" (asymptotic bound {upper / t_star:.3g}·T*)" if math.isfinite(upper) else ""
        cells.append(Cell(f"{algorithm}/{instance}{bound}", eps, ratio, verdict))
    return cells


def log_delta_claims(ctx: Context) -> list[Claim]:
    """τ against log(1/δ) (docs/semantics.md §31): only for sweeps with several δ."""
    cells = log_delta_cells(ctx)
    if not cells:
        return []
    return [
        claim_from_cells(
            "D1",
            "E[τ] grows like T·log(1/δ) with T* ≤ T ≤ the algorithm's asymptotic bound "
            "(Lemma 5, Theorems 10 and 17; Eq. 5, Theorems 22 and 24)",
            cells,
            "slope / T*",
        )
    ]


def evaluate(ctx: Context) -> list[Claim]:
    """All claims, in report order."""
    paper = local_claims(ctx) + global_claims(ctx)
    common = common_claims(ctx) + rounds_claims(ctx) + log_delta_claims(ctx)
    return paper + published_claims(ctx) + common


def context_from_runs(table: Table, config: SweepConfig | None = None) -> Context:
    """Summarise a run table and compute its theory (regime switches, lower bounds) and the
    episode modes of its algorithms; instance families and algorithm options come from
    ``config`` (the sweep's configuration) where given, else Bernoulli and the registry."""
    summary = stats.summarize(table)
    instances = {i.name: i for i in config.instances} if config is not None else {}
    means_of = dict(zip(summary["instance"], summary["means"], strict=True))
    families = {name: overlay.instance_family(name, instances)[0] for name in means_of}
    switch = {
        (name, privacy): overlay.regime_switch(results.parse_means(means), privacy, families[name])
        for name, means in means_of.items()
        for privacy in ("local", "global")
    }
    episodes = rounds.episode_modes(results.unique(summary["algorithm"]), config)
    lower = overlay.cell_lower_bounds(summary, instances)
    asymptotic = _asymptotic_bounds(summary, config, families)
    return Context(summary, switch, lower, episodes, families, asymptotic=asymptotic)


def _asymptotic_bounds(
    summary: Table, config: SweepConfig | None, families: Mapping[str, str]
) -> dict[int, float]:
    """`experiments.analysis.stats.asymptotic_bound` of every summary row of a sweep with several δ
    (the only claim that reads it), Bernoulli instances only; algorithms as the sweep ran
    them, else their registry entries."""
    if len(set(summary["delta"].tolist())) < 3:
        return {}
    algorithms = stats.algorithms_of(config)
    known = registry()
    out = {}
    columns = ("algorithm", "instance", "means", "epsilon")
    for i, (label, instance, means, eps) in enumerate(
        zip(*(summary[c] for c in columns), strict=True)
    ):
        if families[instance] != "bernoulli":
            continue
        alg = algorithms.get(label)
        if alg is None and label in known:
            alg = known[label].factory()
        if alg is not None:
            out[i] = stats.asymptotic_bound(alg, results.parse_means(means), float(eps))
    return out
