"""Figures in the paper's layouts: mean τ ± std against ε, one panel per instance.

``python -m experiments.plot RESULTS.csv [--out DIR]`` redraws every figure from a saved run
CSV. Each figure overlays the theory of `experiments.overlay`: the lower bound
T*·log(1/(2.4δ)) as a dashed curve (T*_ℓ(ε) for local DP, T*_g(ε) for global DP) and the regime
switch as a shaded vertical line. Non-private TTUCB (ε = ∞) is a horizontal line with a ±std
band. Cells with censored runs are drawn as hollow markers without error bars and annotated
with the censored count: their mean is only a lower bound.

Figures (per δ): ``local`` (Figures 1, 3), ``global`` (log-log, Figures 2, 4) and, when both
AdaP-TT and AdaP-TT* ran, ``global_linear`` (linear y axis, Figure 5). Trust models, legend
names and the order of the curves come from the registry (`jaxbai.ALGORITHMS`); an algorithm
of the CSV that is not registered in this process keeps the trust model of its ``privacy``
column, its registry name as label, and comes after the registered ones.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
from collections.abc import Sequence
from typing import NamedTuple

import matplotlib.ticker
import numpy as np
from matplotlib.figure import Figure
from matplotlib.lines import Line2D

from experiments import overlay, results, stats
from experiments.grids import ALGORITHM_PRIVACY, DISPLAY_NAMES
from experiments.results import Table

__all__ = [
    "STYLE",
    "FigureSpec",
    "draw_algorithm",
    "draw_all",
    "draw_figure",
    "draw_theory",
    "figure_specs",
    "main",
]

STYLE = {
    "ttucb": ("black", "s"),
    "ctb_tt": ("tab:blue", "o"),
    "gauss_ldp_tt": ("tab:cyan", "v"),
    "adap_tt": ("tab:orange", "o"),
    "adap_tt_star": ("tab:green", "D"),
    "dp_se": ("tab:red", "^"),
}
"""(colour, marker) of each algorithm's curve; others are grey circles."""


class FigureSpec(NamedTuple):
    """What one figure shows."""

    name: str
    privacy: str
    algorithms: tuple[str, ...]
    yscale: str
    delta: float


def _privacy(summary: Table) -> dict[str, str]:
    """Trust model of every algorithm of ``summary``: registered ones first, in registry order,
    then the others in order of appearance with their ``privacy`` column."""
    present = dict(zip(summary["algorithm"].tolist(), summary["privacy"].tolist(), strict=True))
    registered = {a: p for a, p in ALGORITHM_PRIVACY.items() if a in present}
    return registered | {a: p for a, p in present.items() if a not in registered}


def figure_specs(summary: Table) -> list[FigureSpec]:
    """The figures a summary supports, in a fixed order."""
    privacy_of = _privacy(summary)
    present = set(privacy_of)
    specs = []
    for delta in sorted(set(summary["delta"].tolist())):
        for privacy in ("local", "global"):
            algs = tuple(a for a, p in privacy_of.items() if p in (privacy, "none"))
            if any(privacy_of[a] == privacy for a in algs):
                specs.append(FigureSpec(privacy, privacy, algs, "log", delta))
        if {"adap_tt", "adap_tt_star"} <= present:
            algs = tuple(a for a in ("adap_tt", "adap_tt_star", "ttucb") if a in present)
            specs.append(FigureSpec("global_linear", "global", algs, "linear", delta))
    return specs


def _cells(summary: Table, algorithm: str, instance: str, delta: float) -> np.ndarray:
    mask = (summary["algorithm"] == algorithm) & (summary["instance"] == instance)
    idx = np.flatnonzero(mask & (summary["delta"] == delta))
    return idx[np.argsort(summary["epsilon"][idx])]


def _epsilon_range(summary: Table, spec: FigureSpec) -> tuple[float, float]:
    mask = np.isin(summary["algorithm"], spec.algorithms) & np.isfinite(summary["epsilon"])
    eps = summary["epsilon"][mask]
    return float(eps.min()) / 1.5, float(eps.max()) * 1.5


def draw_algorithm(ax, summary: Table, algorithm: str, instance: str, delta: float) -> None:
    """One algorithm's curve on one panel (horizontal band if non-private)."""
    color, marker = STYLE.get(algorithm, ("gray", "o"))
    label = DISPLAY_NAMES.get(algorithm, algorithm)
    idx = _cells(summary, algorithm, instance, delta)
    if not len(idx):
        return
    eps, mean, std = (summary[c][idx].astype(float) for c in ("epsilon", "mean", "std"))
    cens = summary["censored"][idx]
    if ALGORITHM_PRIVACY.get(algorithm, summary["privacy"][idx[0]]) == "none":
        ax.axhline(mean[0], color=color, lw=1.2, label=f"{label} (non-private)")
        ax.axhspan(mean[0] - std[0], mean[0] + std[0], color=color, alpha=0.08)
        return
    done = cens == 0
    ax.errorbar(
        eps[done],
        mean[done],
        yerr=std[done],
        color=color,
        marker=marker,
        ms=4,
        lw=1.2,
        capsize=2,
        label=label,
    )
    if (~done).any():
        ax.plot(
            eps[~done],
            mean[~done],
            ls="none",
            marker=marker,
            ms=6,
            mfc="none",
            color=color,
        )
        for e, m, c, n in zip(
            eps[~done], mean[~done], cens[~done], summary["runs"][idx][~done], strict=True
        ):
            ax.annotate(
                f"≥ ({c}/{n} cens.)",
                (e, m),
                textcoords="offset points",
                xytext=(3, 5),
                fontsize=6,
                color=color,
            )


def draw_theory(ax, means: np.ndarray, privacy: str, delta: float, eps_range) -> None:
    """Lower-bound curve and regime-switch line of one instance."""
    grid = np.geomspace(*eps_range, 60)
    ax.plot(
        grid,
        overlay.lower_bound(means, privacy, grid, delta),
        ls="--",
        color="gray",
        lw=1,
        label="lower bound T*·log(1/(2.4δ))",
    )
    switch = overlay.regime_switch(means, privacy)
    if math.isfinite(switch):
        ax.axvline(switch, color="gray", lw=8, alpha=0.2, label="regime switch ε_s (theory)")


def draw_figure(summary: Table, spec: FigureSpec) -> Figure:
    """One figure: a panel per instance of the summary."""
    instances = list(dict.fromkeys(summary["instance"].tolist()))
    means_of = dict(zip(summary["instance"], summary["means"], strict=True))
    ncols = min(3, len(instances))
    nrows = math.ceil(len(instances) / ncols)
    width = max(6.5, 4.2 * ncols)
    fig = Figure(figsize=(width, 3.4 * nrows))
    axes = fig.subplots(nrows, ncols, squeeze=False)
    eps_range = _epsilon_range(summary, spec)
    for ax, instance in zip(axes.ravel(), instances, strict=False):
        means = results.parse_means(means_of[instance])
        draw_theory(ax, means, spec.privacy, spec.delta, eps_range)
        for algorithm in spec.algorithms:
            draw_algorithm(ax, summary, algorithm, instance, spec.delta)
        ax.set_xscale("log")
        ax.xaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
        ax.set_yscale(spec.yscale)
        ax.set_xlim(*eps_range)
        ax.set_title(f"{instance} = ({', '.join(f'{m:g}' for m in means)})", fontsize=9)
        ax.set_xlabel("ε")
        ax.set_ylabel("stopping time τ")
        ax.grid(True, which="major", alpha=0.3)
    for ax in axes.ravel()[len(instances) :]:
        ax.set_visible(False)
    handles, labels = axes[0, 0].get_legend_handles_labels()
    if (summary["censored"] > 0).any():
        handles.append(Line2D([], [], ls="none", marker="o", mfc="none", color="gray"))
        labels.append("hollow: censored runs (mean is a lower bound)")
    legend_cols = 2 if ncols == 1 else 4
    fig.legend(
        handles,
        labels,
        loc="lower center",
        ncol=min(legend_cols, len(labels)),
        fontsize=7,
        frameon=False,
    )
    runs = sorted(set(summary["runs"].tolist()))
    fig.suptitle(
        f"{spec.privacy} DP: τ (mean ± std over {'/'.join(map(str, runs))} runs), "
        f"δ = {spec.delta:g}",
        fontsize=10,
    )
    rows_of_legend = math.ceil(len(labels) / legend_cols)
    fig.tight_layout(rect=(0, 0.05 * rows_of_legend / nrows, 1, 0.95))
    return fig


def draw_all(summary: Table, out_dir: str) -> list[str]:
    """Draw every figure of `figure_specs` as PNG and PDF; returns the written paths."""
    os.makedirs(out_dir, exist_ok=True)
    paths = []
    many_deltas = len(set(summary["delta"].tolist())) > 1
    for spec in figure_specs(summary):
        fig = draw_figure(summary, spec)
        stem = f"tau_vs_epsilon_{spec.name}" + (f"_delta{spec.delta:g}" if many_deltas else "")
        for ext in ("png", "pdf"):
            path = os.path.join(out_dir, f"{stem}.{ext}")
            fig.savefig(path, dpi=110)
            paths.append(path)
    return paths


def main(argv: Sequence[str] | None = None) -> int:
    """CLI: ``python -m experiments.plot RESULTS.csv [--out DIR]``."""
    parser = argparse.ArgumentParser(
        prog="python -m experiments.plot",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("csv", help="per-run CSV written by experiments.sweep")
    parser.add_argument("--out", help="figure directory (default: figures/ next to the CSV)")
    args = parser.parse_args(argv)
    if not os.path.exists(args.csv):
        print(f"plot: error: no such file {args.csv}", file=sys.stderr)
        return 2
    summary = stats.summarize(results.read_csv(args.csv))
    out = args.out or os.path.join(os.path.dirname(os.path.abspath(args.csv)), "figures")
    for path in draw_all(summary, out):
        print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
