"""Measurements of DP-TT (Jourdan & Azize 2025) beside the other ε-global-DP algorithms.

table: the experiment of their Figure 1, reduced: mean τ ± standard error, errors and censored
       runs of EB-TCI, DP-SE, AdaP-TT, AdaP-TT*, DP-TT and its forced-exploration variant
       (``dp_tt_forced``, beyond the paper) on mu1 and mu2 at δ = 0.01 and ε on a log grid,
       each cell beside its lower bound: T*_ε log(1/(3δ)) for the private algorithms
       (`jaxbai.theory.lower_bound_dp`), T*_KL log(1/(2.4δ)) for EB-TCI. A cell whose mean τ is
       below its bound is flagged (⚑); a censored run counts its budget, a lower bound on its τ.
tail:  the tail of DP-TT's stopping time against single changes to it (`TAIL_VARIANTS`: a
       coarser phase grid, √n forced exploration, the TCI challenger at Ñ), same runs and
       seeds: quantiles of τ, mean/median, errors with their 95 % interval, censored runs, and
       *starved* runs, those that end (stopped or cut) with the best arm's share N_{a*}/τ below
       a tenth of its β-optimal share ω*_{a*} (T*_{ε,β}).

Usage:
    python -m experiments.studies dp-tt [--out DIR] [--part all|table|tail] [--runs 100]
        [--seed 0] [--instances mu1 mu2] [--epsilons 0.001 ... 200] [--max-samples 10000000]
        [--tail-runs 400] [--tail-epsilons 0.1 1]

Writes ``DIR/<part>.json`` and prints each part as a Markdown table.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from experiments.analysis import overlay
from experiments.studies.cells import cell_rows

__all__ = [
    "ALGORITHMS",
    "EPSILONS",
    "ERROR_ALPHA",
    "STARVED_SHARE",
    "TAIL_VARIANTS",
    "instance_bounds",
    "markdown_table",
    "markdown_tail",
    "table",
    "tail",
    "tail_row",
    "variant_name",
]

ALGORITHMS = (
    ("eb_tci", {}),
    ("dp_se", {}),
    ("adap_tt", {}),
    ("adap_tt_star", {}),
    ("dp_tt", {}),
    ("dp_tt", {"challenger": "forced"}),
)
"""(registry name, options): the preset ``dptt``'s algorithms and the forced variant."""
EPSILONS = (0.001, 0.0046, 0.021, 0.097, 0.45, 2.1, 9.5, 43.0, 200.0)
"""The ε grid of the preset ``dptt`` (nine points, log-spaced from 10⁻³ to 2·10²)."""
DELTA = 0.01
STARVED_SHARE = 0.1
"""A run starves the best arm when N_{a*}/τ < STARVED_SHARE · ω*_{a*}."""


def instance_bounds(instance: str, epsilons: Sequence[float], delta: float) -> dict[float, float]:
    """The lower bounds the cells of one paper instance are held to, by ε: T*_ε log(1/(3δ)) at
    each finite ε for the ε-global-DP algorithms (`experiments.analysis.overlay.dp_lower_bound`,
    one batched solve), and T*_KL log(1/(2.4δ)) (Lemma 5) at ε = ∞ for the non-private one."""
    import jaxbai

    means = np.asarray(jaxbai.PAPER_INSTANCES[instance], np.float64)
    private = overlay.dp_lower_bound(means, np.asarray(epsilons), delta)
    (free,) = overlay.lower_bound(means, "none", np.array([math.inf]), delta)
    return {**dict(zip(map(float, epsilons), private.tolist(), strict=True)), math.inf: free}


def table(
    runs: int,
    seed: int,
    instances: Sequence[str],
    epsilons: Sequence[float],
    max_samples: int,
    delta: float = DELTA,
) -> list[dict[str, Any]]:
    """One row per algorithm × instance × ε (EB-TCI once per instance, at ε = ∞)."""
    import jaxbai

    bounds = {instance: instance_bounds(instance, epsilons, delta) for instance in instances}
    rows = []
    for name, options in ALGORITHMS:
        alg = jaxbai.ALGORITHMS[name](**options)
        grid = epsilons if alg.info.privacy != "none" else (math.inf,)
        cells = cell_rows(alg, instances, grid, delta, runs, seed, max_samples, algorithm=alg.name)
        for row in cells:
            bound = bounds[row["instance"]][row["epsilon"]]
            rows.append({**row, "lower_bound": bound, "below_bound": row["mean_tau"] < bound})
    return rows


def tail_row(
    tau: np.ndarray,
    censored: np.ndarray,
    correct: np.ndarray,
    best_share: np.ndarray,
    optimal_share: float,
) -> dict[str, Any]:
    """Mean τ with its standard error and quantiles (censored runs at their cut), errors with
    their exact 95 % interval, censored and starved runs of one cell.

    Examples:
        >>> row = tail_row(np.array([10, 20, 30, 1000]), np.array([False, False, False, True]),
        ...                np.array([True, True, False, False]), np.array([0.5, 0.4, 0.01, 0.0]),
        ...                0.5)  # fmt: skip
        >>> row["median"], row["errors"], row["censored"], row["starved"], row["mean_over_median"]
        (25.0, 1, 1, 2, 10.6)
    """
    from jaxbai.audit import clopper_pearson

    q50, q90, q99 = np.quantile(tau, [0.5, 0.9, 0.99])
    errors = int(np.sum(~correct & ~censored))
    lower, upper = clopper_pearson(errors, int(tau.size), ERROR_ALPHA / 2)
    return {
        "runs": int(tau.size),
        "mean_tau": float(tau.mean()),
        "se_tau": float(tau.std(ddof=1) / np.sqrt(tau.size)) if tau.size > 1 else math.nan,
        "median": float(q50),
        "mean_over_median": float(tau.mean() / q50),
        "q90": float(q90),
        "q99": float(q99),
        "max": float(tau.max()),
        "errors": errors,
        "error_interval": [lower, upper],
        "censored": int(censored.sum()),
        "starved": int(np.sum(best_share < STARVED_SHARE * optimal_share)),
    }


TAIL_VARIANTS = (
    {},
    {"eta": 2.0},
    {"challenger": "forced"},
    {"challenger": "tci_phase"},
)
"""The options of `jaxbai.dp_tt` the tail compares, each one change from the specification
(the first): a coarser phase grid, √n forced exploration, the TCI challenger at Ñ."""
ERROR_ALPHA = 0.05
"""The error rate's interval is two-sided at level 1 − ERROR_ALPHA (exact Clopper–Pearson)."""


def variant_name(options: dict[str, Any]) -> str:
    """The row label of one DP-TT variant: its algorithm name, and η where it is not 1.

    Examples:
        >>> variant_name({}), variant_name({"eta": 2.0, "challenger": "forced"})
        ('dp_tt', 'dp_tt_forced (η = 2)')
    """
    import jaxbai

    alg = jaxbai.dp_tt(**options)
    eta = alg.estimator.eta
    return alg.name if eta == 1 else f"{alg.name} (η = {eta:g})"


def tail(
    runs: int,
    seed: int,
    instances: Sequence[str],
    epsilons: Sequence[float],
    max_samples: int,
    delta: float = DELTA,
    variants: Sequence[dict[str, Any]] = TAIL_VARIANTS,
) -> list[dict[str, Any]]:
    """DP-TT's ``variants`` (options of `jaxbai.dp_tt`) on the same seeds, one row per
    variant × instance × ε (`tail_row`); starved is measured against DP-TT's own β-optimal
    allocation (the variants have none of their own)."""
    import jaxbai

    target = jaxbai.dp_tt().info.allocation_target
    optimal = {
        i: target(np.asarray(jaxbai.PAPER_INSTANCES[i]), np.asarray(epsilons)) for i in instances
    }
    rows = []
    for options in variants:
        alg = jaxbai.dp_tt(**options)
        for instance in instances:
            means = np.asarray(jaxbai.PAPER_INSTANCES[instance])
            best, omega = int(np.argmax(means)), optimal[instance]
            res = jaxbai.simulate(
                alg,
                jaxbai.bernoulli(means),
                epsilon=list(epsilons),
                delta=delta,
                runs=runs,
                seed=seed,
                max_samples=max_samples,
            )
            for j, eps in enumerate(epsilons):
                tau = res.tau[j].astype(np.float64)
                share = res.counts[j, :, best] / tau
                cell = tail_row(tau, res.censored[j], res.correct[j], share, omega[j, best])
                label = variant_name(options)
                rows.append({"algorithm": label, "instance": instance, "epsilon": eps, **cell})
    return rows


def markdown_table(rows: list[dict[str, Any]]) -> str:
    """Instances × ε rows, one column per algorithm: mean τ ± s.e. / lower bound, then errors
    (censored); ⚑ marks a mean below its bound."""
    names = list(dict.fromkeys(r["algorithm"] for r in rows))
    by_cell: dict[tuple[str, float], dict[str, dict[str, Any]]] = {}
    for r in rows:
        for eps in (r["epsilon"],) if math.isfinite(r["epsilon"]) else ():
            by_cell.setdefault((r["instance"], eps), {})[r["algorithm"]] = r
    reference = {r["instance"]: r for r in rows if not math.isfinite(r["epsilon"])}
    lines = [
        "| instance | ε | " + " | ".join(names) + " | errors (censored) |",
        "|" + "---|" * (len(names) + 3),
    ]
    for (instance, eps), cells in by_cell.items():
        row = {**{n: reference[instance] for n in names if n not in cells}, **cells}
        taus = " | ".join(_tau(row[n]) for n in names if n in row)
        errors = ", ".join(f"{row[n]['errors']} ({row[n]['censored']})" for n in names if n in row)
        lines.append(f"| {instance} | {eps:g} | {taus} | {errors} |")
    return "\n".join(lines)


def _tau(row: dict[str, Any]) -> str:
    flag = " ⚑" if row["below_bound"] else ""
    return f"{row['mean_tau']:.3g} ± {row['se_tau']:.2g} / {row['lower_bound']:.3g}{flag}"


def markdown_tail(rows: list[dict[str, Any]]) -> str:
    """One line per algorithm × instance × ε: quantiles, mean/median, errors (95 % interval),
    censored and starved runs."""
    lines = [
        "| algorithm | instance | ε | runs | mean τ | median | mean/median | q90 | q99 | max "
        "| errors (95 % interval) | censored | starved |",
        "|" + "---|" * 13,
    ]
    for r in rows:
        lower, upper = r["error_interval"]
        lines.append(
            f"| {r['algorithm']} | {r['instance']} | {r['epsilon']:g} | {r['runs']} "
            f"| {r['mean_tau']:.3g} | {r['median']:.3g} | {r['mean_over_median']:.2g} "
            f"| {r['q90']:.3g} | {r['q99']:.3g} | {r['max']:.3g} "
            f"| {r['errors']} ({lower:.3f}, {upper:.3f}) | {r['censored']} | {r['starved']} |"
        )
    return "\n".join(lines)
