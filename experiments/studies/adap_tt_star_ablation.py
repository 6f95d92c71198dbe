"""Ablation of AdaP-TT* against AdaP-TT: one ingredient swapped at a time.

AdaP-TT (Alg. 9) and AdaP-TT* (Alg. 10) share the estimator (DAF), the leader bonus, β and σ;
they differ in the transportation cost W of the TC challenger and of the GLR stopping statistic
(W^G, Eq. 3, against W^{G,ε}, Eq. 13) and in the stopping threshold (Eq. 12 against Eq. 14, or
their heuristic forms). Each variant in `variants` swaps one of these from AdaP-TT* (and the
reverse from AdaP-TT), or changes a reading shared by both (theory thresholds, the Eq. 11 bonus
as printed, σ = 1); docs/adap-tt-star-ablation.md says which and why. δ = 0.01, heuristic
thresholds unless a variant says otherwise, rewards drawn per episode (the engine's default for
these algorithms).

table:       mean τ ± standard error, errors and censored runs of every variant on mu1, mu2 and
             mu6 at ε ∈ {0.01, 0.1, 0.4, 1, 10}; one grid per variant; the ratio of each mean τ
             to that of its reference AdaP-TT.
diagnostics: final states of a few runs per cell (`stopping_diagnostics`): the allocation
             N_a/τ, the branch of Eq. (14) of each pair (â, b) at stopping, and which pair
             passed its GLR test last.

Usage:
    python -m experiments.studies adap-tt-star-ablation [--out DIR] [--runs 20] [--seed 3]
        [--instances mu1 mu2 mu6] [--epsilons 0.01 0.1 0.4 1 10] [--variants NAME ...]
        [--diagnostic-runs 12]

Writes ``DIR/diagnostics.json`` (first) and ``DIR/ablation.json`` (rewritten after each
variant, so a cut run keeps what it measured), prints both as Markdown tables, and draws
``DIR/adap_tt_star_ablation.png`` (mean τ against ε, one panel per instance, log axes).
"""

from __future__ import annotations

import dataclasses
import math
import sys
import time
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

import numpy as np

import jaxbai
from experiments.studies.cells import cell_rows
from jaxbai.toptwo import components
from jaxbai.toptwo.episodic import EpisodicTopTwo

__all__ = [
    "EPSILONS",
    "INSTANCES",
    "Variant",
    "markdown_diagnostics",
    "markdown_table",
    "stopping_diagnostics",
    "table",
    "variants",
]

EPSILONS = (0.01, 0.1, 0.4, 1.0, 10.0)
INSTANCES = ("mu1", "mu2", "mu6")
DELTA = 0.01
MAX_SAMPLES = 10**8
EQ11_MAX_SAMPLES = 10**7
"""Budget of the Eq. (11) bonus pair: its starved runs never stop (`jaxbai.adap_tt`)."""


class Variant(NamedTuple):
    """One algorithm of the ablation.

    Attributes:
        algorithm: the assembled algorithm (its ``name`` is the variant's).
        base: the algorithm it is built from (``adap_tt`` or ``adap_tt_star``, or one of
            their ``_theory`` / ``_eq11`` forms), itself a variant.
        fields: the dataclass fields in which it differs from ``base`` (none for a base).
        swap: what the swap means, in words.
        reference: the AdaP-TT variant its mean τ is divided by.
        max_samples: per-run sample budget.
    """

    algorithm: EpisodicTopTwo
    base: str
    fields: tuple[str, ...]
    swap: str
    reference: str
    max_samples: int = MAX_SAMPLES


def variants() -> dict[str, Variant]:
    """Every variant by name, bases first (each base is its own base, with no fields)."""
    tt, star = jaxbai.adap_tt(), jaxbai.adap_tt_star()
    out: dict[str, Variant] = {}

    def add(name, base, swap, reference="adap_tt", max_samples=MAX_SAMPLES, alg=None, **fields):
        built = alg if alg is not None else dataclasses.replace(out[base].algorithm, **fields)
        built = dataclasses.replace(built, name=name)
        out[name] = Variant(built, base, tuple(sorted(fields)), swap, reference, max_samples)

    add("adap_tt", "adap_tt", "AdaP-TT (Alg. 9)", alg=tt)
    add("adap_tt_star", "adap_tt_star", "AdaP-TT* (Alg. 10)", alg=star)
    add(
        "star_challenger_wg",
        "adap_tt_star",
        "challenger cost W^{G,ε} → W^G",
        challenger=components.tc_challenger_gaussian_cost,
    )
    add(
        "star_stopping_wg",
        "adap_tt_star",
        "stopping cost W^{G,ε} → W^G (challenger keeps W^{G,ε})",
        cost=components.cost_gaussian,
        challenger=components.tc_challenger_private_cost,
    )
    add(
        "star_threshold_eq12",
        "adap_tt_star",
        "threshold Eq. 14 → Eq. 12 (heuristic forms)",
        threshold=components.threshold_private_heuristic,
    )
    add(
        "tt_challenger_wge",
        "adap_tt",
        "challenger cost W^G → W^{G,ε}",
        challenger=components.tc_challenger_private_cost,
    )
    add(
        "tt_stopping_wge",
        "adap_tt",
        "stopping cost W^G → W^{G,ε} (challenger keeps W^G)",
        cost=components.cost_private,
        challenger=components.tc_challenger_gaussian_cost,
    )
    add(
        "tt_threshold_eq14",
        "adap_tt",
        "threshold Eq. 12 → Eq. 14 (heuristic forms)",
        threshold=components.threshold_tilde_heuristic,
    )
    add(
        "adap_tt_theory",
        "adap_tt",
        "threshold heuristic → theory (Eq. 12)",
        threshold=components.threshold_private_theory,
    )
    add(
        "star_theory",
        "adap_tt_star",
        "threshold heuristic → theory (Eq. 14)",
        "adap_tt_theory",
        threshold=components.threshold_tilde_theory,
    )
    add(
        "adap_tt_eq11",
        "adap_tt",
        "leader bonus: k at n → k at Ñ_a (Eq. 11 as printed)",
        "adap_tt",
        EQ11_MAX_SAMPLES,
        bonus=components.bonus_private_eq11,
    )
    add(
        "star_eq11",
        "adap_tt_star",
        "leader bonus: k at n → k at Ñ_a (Eq. 11 as printed)",
        "adap_tt_eq11",
        EQ11_MAX_SAMPLES,
        bonus=components.bonus_private_eq11,
    )
    add("adap_tt_sigma1", "adap_tt", "σ = 1/2 → 1 (costs and threshold)", sigma=1.0)
    add(
        "star_sigma1",
        "adap_tt_star",
        "σ = 1/2 → 1 (costs and threshold)",
        "adap_tt_sigma1",
        sigma=1.0,
    )
    add(
        "tt_eq11_challenger_wge",
        "adap_tt_eq11",
        "challenger cost W^G → W^{G,ε}, with the Eq. 11 bonus",
        "adap_tt_eq11",
        EQ11_MAX_SAMPLES,
        challenger=components.tc_challenger_private_cost,
    )
    add(
        "star_eq11_challenger_wg",
        "star_eq11",
        "challenger cost W^{G,ε} → W^G, with the Eq. 11 bonus",
        "adap_tt_eq11",
        EQ11_MAX_SAMPLES,
        challenger=components.tc_challenger_gaussian_cost,
    )
    return out


def _instances(names: Sequence[str]) -> list[Any]:
    return [jaxbai.bernoulli(jaxbai.PAPER_INSTANCES[i]) for i in names]


def _grid(
    variant: Variant, instances: Sequence[str], epsilons: Sequence[float], runs: int, seed: int
) -> list[dict[str, Any]]:
    """Per-cell statistics of one variant on instances × ε (one compiled grid)."""
    labels = {"variant": variant.algorithm.name, "base": variant.base, "swap": variant.swap}
    return cell_rows(
        variant.algorithm,
        instances,
        epsilons,
        DELTA,
        runs,
        seed,
        variant.max_samples,
        **labels,
        reference=variant.reference,
    )


def with_ratios(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each row with ``ratio`` = mean τ / mean τ of its reference in the same cell, and its
    standard error (delta method, the two means taken as independent); None without one."""
    means = {(r["variant"], r["instance"], r["epsilon"]): r for r in rows}
    out = []
    for r in rows:
        ref = means.get((r["reference"], r["instance"], r["epsilon"]))
        ratio = se = None
        if ref is not None:
            ratio = r["mean_tau"] / ref["mean_tau"]
            rel = (r["se_tau"] / r["mean_tau"]) ** 2 + (ref["se_tau"] / ref["mean_tau"]) ** 2
            se = ratio * math.sqrt(rel) if r["variant"] != r["reference"] else 0.0
        out.append({**r, "ratio": ratio, "se_ratio": se})
    return out


def table(
    names: Sequence[str],
    instances: Sequence[str],
    epsilons: Sequence[float],
    runs: int,
    seed: int,
    on_variant: Callable[[list[dict[str, Any]]], None] | None = None,
) -> list[dict[str, Any]]:
    """Rows of the named variants, in order; ``on_variant`` gets the rows so far after each."""
    all_variants = variants()
    rows: list[dict[str, Any]] = []
    for name in names:
        rows += _grid(all_variants[name], instances, epsilons, runs, seed)
        if on_variant is not None:
            on_variant(with_ratios(rows))
    return with_ratios(rows)


def _final_states(alg: EpisodicTopTwo, inst: Any, epsilon: float, runs: int, seed: int) -> Any:
    """Final states of ``runs`` runs (per-episode draws, no budget), one vmapped while loop."""
    import jax
    import jax.numpy as jnp

    per_episode = alg.per_episode()
    params = alg.params(epsilon, DELTA)
    num_arms = int(np.asarray(inst.means).shape[-1])
    budget = jnp.int32(MAX_SAMPLES)

    def one(key):
        init_key, stream = jax.random.split(key)
        state = per_episode.init(init_key, params, num_arms)
        return jax.lax.while_loop(
            lambda s: ~s.stopped & (s.n < budget),
            lambda s: per_episode.budgeted_step(stream, s, inst, params, budget),
            state,
        )

    keys = jax.random.split(jax.random.key(seed), runs)
    return jax.device_get(jax.jit(jax.vmap(one))(keys)), params


def stopping_diagnostics(
    variant: Variant, instance: str, epsilon: float, runs: int, seed: int
) -> dict[str, Any]:
    """What the GLR test saw when ``runs`` runs of ``variant`` stopped, on one cell.

    Per arm b (the best arm excluded): the mean share N_b/τ of the samples, the share of runs
    whose pair (â, b) was in the branch d ≥ ε/2 of Eq. (14) at stopping (d = μ̃_â − μ̃_b), and
    the share of runs in which the pair had the smallest W/c (the last to pass its test);
    with the mean τ of these runs and the best arm's share.
    """
    import jax.numpy as jnp

    alg = variant.algorithm
    inst = _instances([instance])[0]
    state, params = _final_states(alg, inst, epsilon, runs, seed)
    num_arms = state.counts.shape[-1]
    best = int(np.argmax(jaxbai.PAPER_INSTANCES[instance]))
    means, local = np.asarray(state.means), np.asarray(state.local_counts)
    rec = np.asarray(state.recommendation)
    mu_a = means[np.arange(runs), rec][:, None]
    w_a = local[np.arange(runs), rec][:, None]
    n = jnp.asarray(state.n)[:, None]
    pair = (jnp.asarray(x) for x in (mu_a, means, w_a, local))
    cost, threshold = components.glr_pair(alg, *pair, n, num_arms, params)
    ratio = np.where(np.arange(num_arms) == rec[:, None], np.inf, np.asarray(cost / threshold))
    high = (mu_a - means) >= epsilon / 2
    tau = np.asarray(state.n, np.float64)
    share = np.asarray(state.counts) / tau[:, None]
    others = [b for b in range(num_arms) if b != best]
    return {
        "variant": alg.name,
        "instance": instance,
        "epsilon": float(epsilon),
        "runs": runs,
        "stopped": int(np.asarray(state.stopped).sum()),
        "errors": int((rec != best).sum()),
        "mean_tau": float(tau.mean()),
        "best_share": float(share[:, best].mean()),
        "share": [float(share[:, b].mean()) for b in others],
        "high_branch": [float(high[:, b].mean()) for b in others],
        "last_to_pass": [float((ratio.argmin(axis=1) == b).mean()) for b in others],
        "arms": others,
    }


DIAGNOSTIC_CELLS = (("mu1", 0.01), ("mu1", 0.1), ("mu1", 0.4), ("mu6", 0.4), ("mu1", 10.0))
DIAGNOSTIC_VARIANTS = ("adap_tt", "adap_tt_star", "star_threshold_eq12", "tt_threshold_eq14")


def diagnostics(runs: int, seed: int) -> list[dict[str, Any]]:
    """`stopping_diagnostics` of `DIAGNOSTIC_VARIANTS` on `DIAGNOSTIC_CELLS`."""
    all_variants = variants()
    rows = []
    for name in DIAGNOSTIC_VARIANTS:
        start = time.perf_counter()
        for inst, eps in DIAGNOSTIC_CELLS:
            rows.append(stopping_diagnostics(all_variants[name], inst, eps, runs, seed))
        print(f"  diagnostics {name}: {time.perf_counter() - start:.0f} s", file=sys.stderr)
    return rows


def _cell(row: dict[str, Any]) -> str:
    return f"{row['mean_tau']:.3g} ± {row['se_tau']:.2g}"


def _ratio(row: dict[str, Any]) -> str:
    if row["ratio"] is None:
        return "–"
    if row["variant"] == row["reference"]:
        return "1"
    return f"{row['ratio']:.2f} ± {row['se_ratio']:.2f}"


def markdown_table(rows: list[dict[str, Any]]) -> str:
    """One row per variant × instance × ε: mean τ ± s.e., ratio to the reference, errors,
    censored runs."""
    lines = [
        "| variant | instance | ε | mean τ ± s.e. | ratio to reference | errors | censored |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r['variant']} | {r['instance']} | {r['epsilon']:g} | {_cell(r)} | {_ratio(r)} "
            f"| {r['errors']} | {r['censored']} |"
        )
    return "\n".join(lines)


def markdown_ratios(rows: list[dict[str, Any]]) -> str:
    """Ratio to the reference, variants as rows, instance × ε as columns."""
    cells = sorted({(r["instance"], r["epsilon"]) for r in rows}, key=lambda c: c)
    names = list(dict.fromkeys(r["variant"] for r in rows))
    by = {(r["variant"], r["instance"], r["epsilon"]): r for r in rows}
    head = "| variant (reference) | " + " | ".join(f"{i} ε={e:g}" for i, e in cells) + " |"
    lines = [head, "|" + "---|" * (len(cells) + 1)]
    for name in names:
        ref = next(r["reference"] for r in rows if r["variant"] == name)
        vals = [_ratio(by[name, i, e]) if (name, i, e) in by else "" for i, e in cells]
        lines.append(f"| {name} ({ref}) | " + " | ".join(vals) + " |")
    return "\n".join(lines)


def markdown_diagnostics(rows: list[dict[str, Any]]) -> str:
    """One row per variant × cell: τ of the diagnostic runs, shares, branches, last to pass."""

    def per_arm(values: list[float], arms: list[int]) -> str:
        return " ".join(f"{a}:{v:.3f}" for a, v in zip(arms, values, strict=True))

    lines = [
        "| variant | instance | ε | runs (stopped, errors) | mean τ | N_best/τ | N_b/τ "
        "| share d ≥ ε/2 | share last to pass |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r['variant']} | {r['instance']} | {r['epsilon']:g} | {r['runs']} "
            f"({r['stopped']}, {r['errors']}) | {r['mean_tau']:.3g} | {r['best_share']:.2f} "
            f"| {per_arm(r['share'], r['arms'])} | {per_arm(r['high_branch'], r['arms'])} "
            f"| {per_arm(r['last_to_pass'], r['arms'])} |"
        )
    return "\n".join(lines)


FIGURE_ROWS = (
    (
        "one factor swapped",
        (
            "adap_tt",
            "adap_tt_star",
            "star_challenger_wg",
            "star_stopping_wg",
            "star_threshold_eq12",
            "tt_challenger_wge",
            "tt_stopping_wge",
            "tt_threshold_eq14",
        ),
    ),
    (
        "theory thresholds, Eq. 11 bonus, σ = 1",
        (
            "adap_tt",
            "adap_tt_star",
            "adap_tt_theory",
            "star_theory",
            "adap_tt_eq11",
            "star_eq11",
            "tt_eq11_challenger_wge",
            "star_eq11_challenger_wg",
            "adap_tt_sigma1",
            "star_sigma1",
        ),
    ),
)
"""The figure's two rows of panels: the variants each shows."""


def figure(rows: list[dict[str, Any]], path: str) -> None:
    """Mean τ (± 2 s.e., clipped above 0) against ε, log-log, one column per instance, one
    line per variant; a cross marks a cell with censored runs, a ring one with errors."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    instances = list(dict.fromkeys(r["instance"] for r in rows))
    present = set(r["variant"] for r in rows)
    panels = [(t, [n for n in names if n in present]) for t, names in FIGURE_ROWS]
    panels = [(t, names) for t, names in panels if names]
    fig, axes = plt.subplots(
        len(panels),
        len(instances),
        figsize=(3.6 * len(instances) + 2.2, 3.3 * len(panels)),
        squeeze=False,
    )
    colors = {"adap_tt": "k", "adap_tt_star": "tab:red"}
    palette = ("C0", "C1", "C2", "C4", "C5", "C6", "C8", "C9")
    for (title, names), ax_row in zip(panels, axes, strict=True):
        for ax, inst in zip(ax_row, instances, strict=True):
            for k, name in enumerate(names):
                sel = [r for r in rows if r["instance"] == inst and r["variant"] == name]
                eps = np.asarray([r["epsilon"] for r in sel])
                mean = np.asarray([r["mean_tau"] for r in sel])
                err = 2 * np.asarray([r["se_tau"] for r in sel])
                base = name in colors
                ax.errorbar(
                    eps,
                    mean,
                    yerr=[np.minimum(err, 0.9 * mean), err],
                    marker="os^Dv<>p"[k % 8],
                    ms=3.5,
                    lw=1.6 if base else 1.0,
                    ls="-" if base else ("--" if name.startswith("tt_") else ":"),
                    color=colors.get(name, palette[k % len(palette)]),
                    label=name,
                )
                bad = [r for r in sel if r["censored"]]
                ax.plot([r["epsilon"] for r in bad], [r["mean_tau"] for r in bad], "kx", ms=7)
                bad = [r for r in sel if r["errors"]]
                ax.plot(
                    [r["epsilon"] for r in bad],
                    [r["mean_tau"] for r in bad],
                    "o",
                    ms=9,
                    mfc="none",
                    mec="r",
                )
            ax.set(xscale="log", yscale="log", title=f"{inst}: {title}")
            ax.title.set_fontsize(9)
            ax.grid(alpha=0.3, which="both")
        ax_row[0].set_ylabel(f"mean τ (δ = {DELTA:g})")
        ax_row[-1].legend(fontsize=6.5, loc="upper left", bbox_to_anchor=(1.02, 1))
    for ax in axes[-1]:
        ax.set_xlabel("ε")
    fig.tight_layout()
    fig.savefig(path, dpi=72)
    plt.close(fig)
