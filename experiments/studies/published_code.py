"""The paper's published code against the paper: the effect of each difference, one at a time.

``ttucb_published``, ``adap_tt_published`` and ``dp_se_published`` rebuild the algorithms of
the code published with the paper (docs/published-code.md). Each difference from the paper is
a component; `variants` lists, for each published algorithm, the algorithm itself, the
paper's, and the published one with a single difference put back as the paper has it. δ = 0.01,
Bernoulli paper instances, rewards drawn per episode where the engine can (its default).

Usage:
    python -m experiments.studies published-code [--out DIR] [--runs 200] [--seed 5]
        [--instances mu1 mu2] [--epsilons 0.1 1 10] [--algorithms ttucb adap_tt dp_se]

Writes ``DIR/published_code.json`` (rewritten after each variant, so a cut run keeps what it
measured) and prints one Markdown table per algorithm: mean τ ± s.e. (and the count the
published AdaP-TT reports), errors (censored), and the ratio to the published algorithm.
"""

from __future__ import annotations

import dataclasses
import json
import os
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

from experiments.studies.cells import cell_rows

__all__ = ["Variant", "markdown_table", "measure", "variants"]

DELTA = 0.01
MAX_SAMPLES = {"ttucb": 10**7, "adap_tt": 10**8, "dp_se": 10**9}
"""Sample budget per algorithm, about 100× the published variant's mean τ on mu1 and mu2 (some
single-difference variants never stop: their runs are reported as censored)."""
EPSILONS = (0.1, 1.0, 10.0)
INSTANCES = ("mu1", "mu2")


class Variant(NamedTuple):
    """One algorithm measured: its label, what it puts back as the paper has it, a builder."""

    label: str
    restores: str
    build: Callable[[], Any]


def _restored(name: str, label: str, restores: str, **fields: Any) -> Variant:
    """The published ``name`` with ``fields`` replaced (one difference put back)."""

    def build() -> Any:
        import jaxbai

        alg = jaxbai.ALGORITHMS[name]()
        return dataclasses.replace(alg, name=f"{name}_{label}", **fields)

    return Variant(label, restores, build)


def _registered(name: str, label: str, restores: str) -> Variant:
    def build() -> Any:
        import jaxbai

        return jaxbai.ALGORITHMS[name]()

    return Variant(label, restores, build)


def variants() -> dict[str, list[Variant]]:
    """For each published algorithm: itself, the paper's, and one difference put back at a
    time (each label names the component restored)."""
    from jaxbai.toptwo import components

    common = {
        "sigma": ("σ = 1/2 in the cost and thresholds", {"sigma": 0.5}),
        "tracking": ("β-tracking instead of the β-coin", {"tracking": components.beta_tracking}),
        "ties": ("random tie priority", {"ties": "random"}),
    }

    def top_two(name: str, paper: str, own: dict[str, tuple[str, dict[str, Any]]]):
        rows = [_registered(name, "published", "nothing"), _registered(paper, "paper", "all")]
        for label, (restores, fields) in {**own, **common}.items():
            rows.append(_restored(name, label, restores, **fields))
        return rows

    return {
        "ttucb": top_two(
            "ttucb_published",
            "ttucb",
            {
                "leader": ("UCB leader b^G (Eq. 3)", {"bonus": components.bonus_gaussian}),
                "challenger": (
                    "TC challenger (Alg. 1)",
                    {"challenger": components.tc_challenger_gaussian_cost},
                ),
            },
        ),
        "adap_tt": top_two(
            "adap_tt_published",
            "adap_tt",
            {
                "leader": (
                    "leader bonus b^{G,ε} (Eq. 11, k at n)",
                    {"bonus": components.bonus_private_time},
                ),
                "challenger": (
                    "TC challenger (Alg. 9)",
                    {"challenger": components.tc_challenger_gaussian_cost},
                ),
                "stopping": (
                    "GLR test of argmax μ̃ (Eq. 2)",
                    {"stopping_rule": components.glr_stopping},
                ),
            },
        ),
        "dp_se": [
            _registered("dp_se_published", "published", "nothing"),
            _registered("dp_se", "paper", "all"),
            _restored(
                "dp_se_published", "epoch_means", "epoch means over R_e", epoch_means="epoch"
            ),
            _restored(
                "dp_se_published", "eliminated", "eliminated arms left out", eliminated="excluded"
            ),
            _restored("dp_se_published", "floored", "h_e, c_e from ⌊R_e⌋", floored=True),
        ],
    }


def measure(
    algorithm: str,
    instances: Sequence[str],
    epsilons: Sequence[float],
    runs: int,
    seed: int,
    out: str | None = None,
    rows: list[dict[str, Any]] | None = None,
) -> list[dict[str, Any]]:
    """Rows of every variant of ``algorithm`` (``ttucb``, ``adap_tt`` or ``dp_se``); TTUCB's
    ignore ε, so they run at the first ε only. With ``out``, the JSON is rewritten after each
    variant."""
    rows = [] if rows is None else rows
    eps = epsilons[:1] if algorithm == "ttucb" else epsilons
    for variant in variants()[algorithm]:
        labels = {"algorithm": algorithm, "variant": variant.label, "restores": variant.restores}
        budget = MAX_SAMPLES[algorithm]
        rows += cell_rows(variant.build(), instances, eps, DELTA, runs, seed, budget, **labels)
        if out is not None:
            with open(os.path.join(out, "published_code.json"), "w") as f:
                json.dump(rows, f, indent=1)
    return rows


def markdown_table(rows: list[dict[str, Any]], algorithm: str) -> str:
    """Variants × cells of one algorithm: mean τ ± s.e. (reported count), errors (censored),
    ratio to the published algorithm."""
    mine = [r for r in rows if r["algorithm"] == algorithm]
    cells = list(dict.fromkeys((r["instance"], r["epsilon"]) for r in mine))
    published = {(r["instance"], r["epsilon"]): r for r in mine if r["variant"] == "published"}
    head = "| variant | restores | " + " | ".join(f"{i}, ε = {e:g}" for i, e in cells) + " |"
    lines = [head, "|" + "---|" * (len(cells) + 2)]
    for label in dict.fromkeys(r["variant"] for r in mine):
        by_cell = {(r["instance"], r["epsilon"]): r for r in mine if r["variant"] == label}
        entries = []
        for cell in cells:
            r = by_cell[cell]
            text = f"{r['mean_tau']:.3g} ± {r['se_tau']:.2g}"
            if "mean_reported" in r:
                text += f" (reports {r['mean_reported']:.3g})"
            text += f"; {r['errors']} ({r['censored']})"
            if label != "published" and cell in published:
                text += f"; ×{r['mean_tau'] / published[cell]['mean_tau']:.2f}"
            entries.append(text)
        lines.append(f"| {label} | {by_cell[cells[0]]['restores']} | " + " | ".join(entries) + " |")
    return "\n".join(lines)
