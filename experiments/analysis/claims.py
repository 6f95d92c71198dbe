"""The claims of Section 5 and their evaluation against measured stopping times.

Each claim gets the measured evidence and a verdict (holds, fails or inconclusive at 95%
confidence); the verdicts, the tested cells and the evidence text are
`experiments.analysis.verdicts`.

Regimes are placed with `jaxbai.theory.regime_switch` ε_s of each instance and trust model:
*low privacy* is ε ≥ 10·ε_s, *high privacy* is ε < ε_s, and slopes in the high-privacy regime are
fitted on ε ≤ ε_s/2 where the ε-dependent term of the bound dominates. Cells with censored runs
never count as evidence for or against a comparison (their mean is only a lower bound).
Nothing here tunes an algorithm: the verdict is what the data say. Algorithms appear in the
statements under their display names in the registry (`jaxbai.ALGORITHMS`). Rendering the
claims as a Markdown report is `experiments.analysis.markdown_report`.

Where a sweep holds the published code's variants (registry entries with
`jaxbai.registry.AlgorithmEntry.published_code_of`), the claims of Section 5 are evaluated a
second time with each paper algorithm replaced by its published-code variant (keys suffixed
``p``, e.g. ``G6p``); a claim about an algorithm the published code does not have (CTB-TT,
AdaP-TT*) is left out there.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING

from experiments.analysis import overlay, results, rounds, stats
from experiments.analysis.results import Table
from experiments.analysis.stats import Interval
from experiments.analysis.verdicts import (
    FAILS,
    HOLDS,
    INCONCLUSIVE,
    NO_CELLS,
    NO_SLOPE,
    Cell,
    Claim,
    Context,
    applicable,
    approx_one,
    at_most,
    censored,
    claim_from_cells,
    explained,
    mean_interval,
    monotone_cells,
    ratio_cells,
    slope_cells,
)
from experiments.config.specs import registry

if TYPE_CHECKING:
    import numpy as np

    from experiments.config import SweepConfig
    from jaxbai.base import Algorithm

__all__ = [
    "LOW_PRIVACY_FACTOR",
    "SLOPE_FACTOR",
    "bound_cells",
    "claims_context",
    "common_claims",
    "dp_tt_claims",
    "error_cells",
    "evaluate",
    "global_claims",
    "local_claims",
    "published_claims",
    "rounds_cells",
    "rounds_claims",
]

LOW_PRIVACY_FACTOR = 10.0  # low privacy: ε ≥ 10 ε_s
SLOPE_FACTOR = 0.5  # slopes fitted on ε ≤ ε_s / 2


# ----------------------------------------------------------------------------- the claims
def _role(ctx: Context, algorithm: str) -> str:
    return ctx.roles.get(algorithm, algorithm)


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
    """Section 5.1 (Figures 1 and 3); not applicable without CTB-TT (or TTUCB, for L1)."""
    low, _, deep = _regimes(ctx, "local")
    ctb, ref = _names(ctx, "ctb_tt", "ttucb")
    ctb_tt, ttucb = _role(ctx, "ctb_tt"), _role(ctx, "ttucb")
    l1 = claim_from_cells(
        "L1",
        f"Local, low privacy (ε ≥ 10 ε_s): {ctb} ≈ {ref} (ratio within ±10%)",
        ratio_cells(ctx, ctb_tt, ttucb, low, approx_one),
        "τ ratio",
    )
    l2 = claim_from_cells(
        "L2",
        f"Local, high privacy (ε ≤ ε_s/2): {ctb} τ ∝ ε⁻² (log-log slope −2 ± 0.25)",
        slope_cells(ctx, ctb_tt, deep, -2.0),
        "slope",
        NO_SLOPE,
    )
    return [applicable(ctx, l1, (ctb_tt,), (ttucb,)), applicable(ctx, l2, (ctb_tt,))]


def global_claims(ctx: Context) -> list[Claim]:
    """Section 5.2 (Figures 2, 4 and 5); a claim is not applicable without the algorithms it is
    about, and its failures that are AdaP-TT*'s point to their explanation (`explained`)."""
    low, high, deep = _regimes(ctx, "global")
    ada, star, ref, dpse = _names(ctx, "adap_tt", "adap_tt_star", "ttucb", "dp_se")
    adap_tt, adap_tt_star = _role(ctx, "adap_tt"), _role(ctx, "adap_tt_star")
    ttucb, dp_se = _role(ctx, "ttucb"), _role(ctx, "dp_se")
    private = (adap_tt, adap_tt_star)  # the paper's ε-global-DP algorithms: G1, G3, G4, G6
    entries = registry()
    both_names = " and ".join(
        entries[a].display_name if a in entries else a for a in private if a in entries
    )

    def both(make: Callable[[str], list[Cell]]) -> list[Cell]:
        return [c._replace(instance=f"{a}/{c.instance}") for a in private for c in make(a)]

    def claim(key, statement, cells, what, *needs, empty=NO_CELLS, every=False) -> Claim:
        made = claim_from_cells(key, statement, cells, what, empty)
        return applicable(ctx, explained(made, cells, adap_tt_star, every), *needs)

    pair = ((adap_tt_star,), (adap_tt,))
    at_most_one = lambda r: at_most(r, 1.0)  # noqa: E731
    return [
        claim(
            "G1",
            f"Global, low privacy (ε ≥ 10 ε_s): {both_names} ≤ 4 × {ref}",
            both(lambda a: ratio_cells(ctx, a, ttucb, low, lambda r: at_most(r, 4.0))),
            f"τ / τ_{ref}",
            private,
            (ttucb,),
        ),
        claim(
            "G2",
            f"Global, low privacy (ε ≥ 10 ε_s): {star} ≈ {ada} (ratio within ±10%)",
            ratio_cells(ctx, adap_tt_star, adap_tt, low, approx_one),
            "τ* / τ",
            *pair,
            every=True,
        ),
        claim(
            "G3",
            "Global, low privacy (ε ≥ 10 ε_s): τ does not depend on ε (slope 0 ± 0.25)",
            both(lambda a: slope_cells(ctx, a, low, 0.0)),
            "slope",
            private,
            empty=NO_SLOPE,
        ),
        claim(
            "G4",
            "Global, high privacy (ε ≤ ε_s/2): τ ∝ ε⁻¹ (log-log slope −1 ± 0.25)",
            both(lambda a: slope_cells(ctx, a, deep, -1.0)),
            "slope",
            private,
            empty=NO_SLOPE,
        ),
        claim(
            "G5",
            f"Global, high privacy (ε < ε_s): {star} ≤ {ada}",
            ratio_cells(ctx, adap_tt_star, adap_tt, high, at_most_one),
            "τ* / τ",
            *pair,
            every=True,
        ),
        claim(
            "G6",
            f"Global, every ε: {both_names} ≤ {dpse}",
            both(lambda a: ratio_cells(ctx, a, dp_se, lambda i, e: True, at_most_one)),
            f"τ / τ_{dpse}",
            private,
            (dp_se,),
        ),
    ]


def _free_privacy(ctx: Context) -> dict[str, float]:
    """ε beyond which privacy is free (T*_ε = T*_KL, `jaxbai.theory.free_privacy_epsilon`) of
    every Bernoulli instance of the summary."""
    from jaxbai import theory

    means_of = dict(zip(ctx.summary["instance"], ctx.summary["means"], strict=True))
    return {
        name: float(theory.free_privacy_epsilon(results.parse_means(means)))
        for name, means in means_of.items()
        if ctx.families.get(name, "bernoulli") == "bernoulli"
    }


def dp_tt_claims(ctx: Context) -> list[Claim]:
    """Jourdan & Azize (2025) on DP-TT, where the sweep ran it: below the other ε-global-DP
    algorithms at every ε, its two regimes about the free-privacy ε, and its ratio to EB-TCI
    where privacy is free."""
    dp_tt, eb_tci = _role(ctx, "dp_tt"), _role(ctx, "eb_tci")
    if dp_tt not in set(ctx.summary["algorithm"].tolist()):
        return []
    name, reference = _names(ctx, "dp_tt", "eb_tci")
    free = _free_privacy(ctx)

    def privacy_free(instance: str, eps: float) -> bool:
        return instance in free and eps >= free[instance] and math.isfinite(eps)

    def deep(instance: str, eps: float) -> bool:
        return instance in free and eps <= free[instance] / LOW_PRIVACY_FACTOR

    others = [_role(ctx, a) for a in ("adap_tt", "adap_tt_star", "dp_se")]
    below = [
        c._replace(instance=f"{other}/{c.instance}")
        for other in others
        for c in ratio_cells(ctx, dp_tt, other, lambda i, e: True, lambda r: at_most(r, 1.0))
    ]
    j1 = claim_from_cells(
        "J1",
        f"Global, every ε: {name} ≤ AdaP-TT, AdaP-TT* and DP-SE (Jourdan & Azize 2025)",
        below,
        f"τ_{name} / τ",
    )
    return [
        applicable(ctx, j1, (dp_tt,), tuple(others)),
        claim_from_cells(
            "J2",
            f"Global, privacy free (ε ≥ ε_free): {name}'s τ does not depend on ε (slope 0 ± 0.25)",
            slope_cells(ctx, dp_tt, privacy_free, 0.0),
            "slope",
            NO_SLOPE,
        ),
        claim_from_cells(
            "J3",
            f"Global, high privacy (ε ≤ ε_free/10): {name}'s τ ∝ ε⁻¹ (log-log slope −1 ± 0.25)",
            slope_cells(ctx, dp_tt, deep, -1.0),
            "slope",
            NO_SLOPE,
        ),
        claim_from_cells(
            "J4",
            f"Global, privacy free (ε ≥ ε_free): {name} ≤ 2 × {reference} (T*_ε = T*_KL there)",
            ratio_cells(ctx, dp_tt, eb_tci, privacy_free, lambda r: at_most(r, 2.0)),
            f"τ / τ_{reference}",
        ),
    ]


def published_claims(ctx: Context) -> list[Claim]:
    """The claims of Section 5 with each paper algorithm replaced by its published-code variant
    (the registry entry whose `jaxbai.registry.AlgorithmEntry.published_code_of` it is; keys
    suffixed ``p``); a paper algorithm without one plays no part. Only claims with cells, so
    none if the sweep holds no published variant."""
    entries = registry()
    variants = {e.published_code_of: n for n, e in entries.items() if e.published_code_of}
    roles = {a: variants.get(a, "") for a in entries if not entries[a].published_code_of}
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


def bound_cells(ctx: Context, bounds: np.ndarray | None = None) -> list[Cell]:
    """Every cell with a lower bound: mean τ / bound (censored means are lower bounds, so ≥ 1
    still holds). Cells without a bound in `jaxbai.theory` (e.g. Beta arms) are left out.
    ``bounds``: one per summary row, the context's `Context.lower_bound` by default."""
    s = ctx.summary
    bounds = ctx.lower_bound if bounds is None else bounds
    cells = []
    for i in range(len(s["mean"])):
        lb = bounds[i]
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


def common_claims(ctx: Context) -> list[Claim]:
    """Claims about every cell: δ-correctness, lower bounds, monotonicity; A4 (the ε-global-DP
    lower bound T*_ε) only where a cell has it."""
    dp_cells = [] if ctx.dp_lower_bound is None else bound_cells(ctx, ctx.dp_lower_bound)
    monotone = monotone_cells(ctx)
    dp_claim = claim_from_cells(
        "A4",
        "Every global-DP cell on Bernoulli arms: mean τ ≥ T*_ε·log(1/(3δ)) (Jourdan & Azize "
        "2025, the ε-global-DP lower bound)",
        dp_cells,
        "mean τ / bound",
    )
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
        explained(
            claim_from_cells(
                "A3",
                "Every private algorithm: mean τ never increases significantly with ε "
                "(Figures 1–5)",
                monotone,
                "τ(next ε) / τ",
            ),
            monotone,
            _role(ctx, "adap_tt_star"),
        ),
        *([dp_claim] if dp_cells else []),
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
    paper = local_claims(ctx) + global_claims(ctx) + dp_tt_claims(ctx)
    common = common_claims(ctx) + rounds_claims(ctx) + log_delta_claims(ctx)
    return paper + published_claims(ctx) + common


def claims_context(
    summary: Table, config: SweepConfig | None, algorithms: Mapping[str, Algorithm]
) -> Context:
    """The theory of a summary (regime switches, lower bounds) and the episode modes of its
    algorithms; instance families and algorithm options come from ``config`` (the sweep's
    configuration) where given, else Bernoulli and the registry; ``algorithms``: label → the
    algorithm as the sweep ran it (`experiments.analysis.stats.algorithms_of`)."""
    instances = {i.name: i for i in config.instances} if config is not None else {}
    means_of = dict(zip(summary["instance"], summary["means"], strict=True))
    families = {name: overlay.instance_family(name, instances)[0] for name in means_of}
    switch = {
        (name, privacy): overlay.regime_switch(results.parse_means(means), privacy, families[name])
        for name, means in means_of.items()
        for privacy in ("local", "global")
    }
    episodes = rounds.episode_modes(results.unique(summary["algorithm"]), config, algorithms)
    lower = overlay.cell_lower_bounds(summary, instances)
    dp_lower = overlay.cell_dp_lower_bounds(summary, instances)
    asymptotic = _asymptotic_bounds(summary, algorithms, families)
    return Context(
        summary, switch, lower, episodes, families, asymptotic=asymptotic, dp_lower_bound=dp_lower
    )


def _asymptotic_bounds(
    summary: Table, algorithms: Mapping[str, Algorithm], families: Mapping[str, str]
) -> dict[int, float]:
    """`experiments.analysis.stats.asymptotic_bound` of every summary row of a sweep with several δ
    (the only claim that reads it), Bernoulli instances only; algorithms as the sweep ran
    them, else their registry entries."""
    if len(set(summary["delta"].tolist())) < 3:
        return {}
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
