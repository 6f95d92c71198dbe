"""Measurements of AdaP-TT* with the threshold-aware challenger (beyond the paper).

``adap_tt_star_ratio`` (docs/threshold-aware-challenger.md) against AdaP-TT and AdaP-TT*,
heuristic thresholds unless stated, rewards drawn per episode (the engine's default for these
algorithms):

table:       mean τ ± standard error and error counts on the six paper instances at
             ε ∈ {0.01, 0.05, 0.1, 0.2, 0.4, 1, 10}, δ = 0.01; one grid per algorithm.
correctness: ``adap_tt_star_ratio`` at δ = 0.05 on mu1 and mu4 at ε = 0.4 (where some gaps lie
             below ε/2 and others above), both threshold families: errors and the two-sided 95%
             Clopper–Pearson interval of the error rate.
small-delta: the three algorithms at δ = 10⁻⁶ on mu1 at ε ∈ {0.1, 0.4, 1}.

Usage:
    python -m experiments.studies ratio-challenger [--out DIR]
        [--part all|table|correctness|small-delta] [--runs 200] [--correctness-runs 1000]
        [--small-delta-runs 100] [--seed 3]

Writes ``DIR/<part>.json``, prints each part as a Markdown table, and with the table draws
``DIR/threshold_aware_challenger.png`` (mean τ against ε, one panel per instance).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import scipy.stats

from experiments.studies.cells import cell_rows

__all__ = ["ALGORITHMS", "EPSILONS", "clopper_pearson", "correctness", "small_delta"]

ALGORITHMS = ("adap_tt", "adap_tt_star", "adap_tt_star_ratio")
EPSILONS = (0.01, 0.05, 0.1, 0.2, 0.4, 1.0, 10.0)
INSTANCES = ("mu1", "mu2", "mu3", "mu4", "mu5", "mu6")
MAX_SAMPLES = 10**9


def clopper_pearson(errors: int, runs: int, level: float = 0.95) -> tuple[float, float]:
    """Two-sided Clopper–Pearson interval of a binomial rate."""
    alpha = 1 - level
    low = scipy.stats.beta.ppf(alpha / 2, errors, runs - errors + 1) if errors else 0.0
    high = scipy.stats.beta.ppf(1 - alpha / 2, errors + 1, runs - errors) if errors < runs else 1.0
    return float(low), float(high)


def _grid(name: str, instances, epsilons, delta: float, runs: int, seed: int, **options):
    """Per-cell statistics of one algorithm on instances × ε (one compiled grid)."""
    import jaxbai

    alg = jaxbai.ALGORITHMS[name](**options)
    return cell_rows(
        alg, instances, epsilons, delta, runs, seed, MAX_SAMPLES, algorithm=name, **options
    )


def table(runs: int, seed: int, delta: float = 0.01) -> list[dict[str, Any]]:
    """Mean τ, standard error and errors of the three algorithms on every paper instance × ε."""
    return [
        row for name in ALGORITHMS for row in _grid(name, INSTANCES, EPSILONS, delta, runs, seed)
    ]


def correctness(runs: int, seed: int, delta: float = 0.05) -> list[dict[str, Any]]:
    """``adap_tt_star_ratio`` at δ on mu1 and mu4, ε = 0.4, both threshold families."""
    rows = []
    for threshold in ("heuristic", "theory"):
        for row in _grid(
            "adap_tt_star_ratio", ("mu1", "mu4"), (0.4,), delta, runs, seed, threshold=threshold
        ):
            low, high = clopper_pearson(row["errors"] + row["censored"], runs)
            rows.append({**row, "cp95_low": low, "cp95_high": high})
    return rows


def small_delta(runs: int, seed: int, delta: float = 1e-6) -> list[dict[str, Any]]:
    """The three algorithms at a small δ on mu1, ε ∈ {0.1, 0.4, 1}."""
    return [
        row
        for name in ALGORITHMS
        for row in _grid(name, ("mu1",), (0.1, 0.4, 1.0), delta, runs, seed)
    ]


def _cell(row: dict[str, Any]) -> str:
    return f"{row['mean_tau']:.3g} ± {row['se_tau']:.2g}"


def markdown_table(rows: list[dict[str, Any]]) -> str:
    """Instances × ε rows, one column per algorithm: mean τ ± s.e., then errors (censored)."""
    cells: dict[tuple[str, float], dict[str, dict[str, Any]]] = {}
    for row in rows:
        cells.setdefault((row["instance"], row["epsilon"]), {})[row["algorithm"]] = row
    names = [n for n in ALGORITHMS if any(n in c for c in cells.values())]
    head = "| instance | ε | " + " | ".join(names) + " | errors (censored) |"
    lines = [head, "|" + "---|" * (len(names) + 3)]
    for (inst, eps), by_name in cells.items():
        taus = " | ".join(_cell(by_name[n]) for n in names)
        errs = ", ".join(f"{by_name[n]['errors']} ({by_name[n]['censored']})" for n in names)
        lines.append(f"| {inst} | {eps:g} | {taus} | {errs} |")
    return "\n".join(lines)


def markdown_correctness(rows: list[dict[str, Any]]) -> str:
    lines = [
        "| threshold | instance | ε | runs | mean τ ± s.e. | errors (censored) | 95% CP interval |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r['threshold']} | {r['instance']} | {r['epsilon']:g} | {r['runs']} | {_cell(r)} "
            f"| {r['errors']} ({r['censored']}) | [{r['cp95_low']:.4f}, {r['cp95_high']:.4f}] |"
        )
    return "\n".join(lines)


def figure(rows: list[dict[str, Any]], path: str) -> None:
    """Mean τ (± 2 s.e.) against ε, log-log, one panel per instance."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from experiments.config.specs import display_name

    fig, axes = plt.subplots(2, 3, figsize=(10, 6), sharex=True)
    for ax, inst in zip(axes.flat, INSTANCES, strict=True):
        for name, marker in zip(ALGORITHMS, "os^", strict=True):
            sel = [r for r in rows if r["instance"] == inst and r["algorithm"] == name]
            eps = [r["epsilon"] for r in sel]
            mean = np.asarray([r["mean_tau"] for r in sel])
            se = np.asarray([r["se_tau"] for r in sel])
            ax.errorbar(eps, mean, yerr=2 * se, marker=marker, ms=4, label=display_name(name))
        ax.set(xscale="log", yscale="log", title=inst)
        ax.grid(alpha=0.3, which="both")
    for ax in axes[1]:
        ax.set_xlabel("ε")
    for ax in axes[:, 0]:
        ax.set_ylabel("mean τ (δ = 0.01)")
    axes[0, 0].legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=80)
    plt.close(fig)
