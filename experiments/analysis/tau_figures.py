"""The τ (or rounds C) figures against ε or δ, a panel per instance (`experiments.analysis.plot`).

`figure_specs` lists the figures a summary supports (`FigureSpec`: kind, trust model,
algorithms, axis, δ); `draw_figure` draws one: per panel the theory of `draw_theory` and one
curve per algorithm (`draw_algorithm`), in the legend names and styles of `Labels` and `styles`.
What each figure shows, its theory overlay and its censored cells are described in
`experiments.analysis.plot`, which draws and saves every figure.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import NamedTuple

import matplotlib.ticker
import numpy as np
from matplotlib.figure import Figure
from matplotlib.lines import Line2D

from experiments.analysis import overlay, results, rounds
from experiments.analysis.results import Table
from experiments.config import SweepConfig
from experiments.config.specs import AlgorithmSpec, display_name, registry
from jaxbai.registry import Style, free_styles

__all__ = [
    "FigureSpec",
    "Labels",
    "draw_algorithm",
    "draw_figure",
    "draw_theory",
    "figure_specs",
    "styles",
]

_BOUND_STYLE = {"per_arm": "--", "global": ":"}


class FigureSpec(NamedTuple):
    """What one figure shows.

    Attributes:
        name: figure kind (`experiments.config.FIGURE_KINDS`).
        privacy: trust model of its private algorithms (``"none"``: δ on the x axis).
        algorithms: algorithms drawn, in order.
        yscale: ``"log"`` or ``"linear"``.
        delta: δ of an ε figure (None for δ figures).
        rounds: plot rounds of adaptivity instead of τ.
    """

    name: str
    privacy: str
    algorithms: tuple[str, ...]
    yscale: str
    delta: float | None
    rounds: bool = False


class Labels(NamedTuple):
    """What a figure needs to know beyond the summary (from the sweep's configuration)."""

    names: dict[str, str]
    """Legend name of every algorithm label."""
    episodes: dict[str, str | None]
    """Episode mode of every algorithm label (`experiments.analysis.rounds.episode_modes`)."""
    instances: dict
    """`experiments.config.specs.InstanceSpec` of every instance name that has one."""
    styles: dict[str, Style]
    """Colour, marker and line style of every algorithm label (`styles`)."""
    threshold: str = "heuristic"
    """The sweep's stopping-threshold family (its practical bound is drawn)."""

    @classmethod
    def of(cls, summary: Table, sweep_config: SweepConfig | None) -> Labels:
        """Names, episode modes, instances and styles for ``summary``'s algorithms and
        instances."""
        labels = results.unique(summary["algorithm"])
        own = {a.label: a for a in sweep_config.algorithms} if sweep_config else {}
        names = {a: own[a].display_name() if a in own else display_name(a) for a in labels}
        instances = {i.name: i for i in sweep_config.instances} if sweep_config else {}
        threshold = sweep_config.threshold if sweep_config else "heuristic"
        episodes = rounds.episode_modes(labels, sweep_config)
        return cls(names, episodes, instances, styles(labels, own), threshold)


def styles(labels: Sequence[str], specs: Mapping[str, AlgorithmSpec]) -> dict[str, Style]:
    """The style of every algorithm label: a registry name run with no options has its entry's
    (`jaxbai.registry.AlgorithmEntry.style`); any other label (a variant with options, an
    unregistered name) the next style that no entry and no earlier label has
    (`jaxbai.registry.free_styles`).

    Examples:
        >>> from experiments.config.specs import AlgorithmSpec
        >>> b03 = AlgorithmSpec("b03", "adap_tt", (("beta", 0.3),))
        >>> s = styles(["adap_tt", "b03"], {"b03": b03})
        >>> s["adap_tt"].color, s["b03"] != s["adap_tt"]
        ('tab:orange', True)
    """
    entries = registry()
    out: dict[str, Style] = {}
    for label in labels:
        spec = specs.get(label)
        if label in entries and (spec is None or not spec.options):
            out[label] = entries[label].style
    free = free_styles([*out.values(), *(e.style for e in entries.values())])
    for label in labels:
        if label not in out:
            out[label] = next(free)
    return out


def _privacy(summary: Table) -> dict[str, str]:
    """Trust model of every algorithm of ``summary`` (its ``privacy`` column, written from the
    algorithm as it ran): registry names first, in registry order, then the other labels in
    order of appearance."""
    present = dict(zip(summary["algorithm"].tolist(), summary["privacy"].tolist(), strict=True))
    order = [a for a in registry() if a in present] + [a for a in present if a not in registry()]
    return {a: present[a] for a in order}


def _counts_rounds(summary: Table) -> set[str]:
    """Algorithms that report rounds of adaptivity (C ≥ 0)."""
    return set(summary["algorithm"][summary["rounds_max"] >= 0].tolist())


def figure_specs(summary: Table, kinds: Sequence[str] = ()) -> list[FigureSpec]:
    """The figures a summary supports, in a fixed order (only ``kinds`` if given); an ε figure
    at δ holds the algorithms that ran at that δ."""
    privacy_of = _privacy(summary)
    with_rounds = _counts_rounds(summary)
    specs = []
    for delta in sorted(set(summary["delta"].tolist())):
        here = set(summary["algorithm"][summary["delta"] == delta].tolist())
        at = {a: p for a, p in privacy_of.items() if a in here}
        for privacy in ("local", "global"):
            algs = tuple(a for a, p in at.items() if p in (privacy, "none"))
            if any(at[a] == privacy for a in algs):
                specs.append(FigureSpec(privacy, privacy, algs, "log", delta))
        if {"adap_tt", "adap_tt_star"} <= here:
            algs = tuple(a for a in ("adap_tt", "adap_tt_star", "ttucb") if a in here)
            specs.append(FigureSpec("global_linear", "global", algs, "linear", delta))
        for privacy in ("local", "global"):
            algs = tuple(a for a, p in at.items() if p == privacy and a in with_rounds)
            if algs:
                specs.append(FigureSpec(f"rounds_{privacy}", privacy, algs, "log", delta, True))
    if all(p == "none" for p in privacy_of.values()):
        specs.append(FigureSpec("nonprivate", "none", tuple(privacy_of), "log", None))
    algs = tuple(a for a, p in privacy_of.items() if p == "none" and a in with_rounds)
    if algs:
        specs.append(FigureSpec("rounds_nonprivate", "none", algs, "log", None, True))
    return [s for s in specs if not kinds or s.name in kinds]


def _cells(summary: Table, algorithm: str, instance: str, delta: float | None) -> np.ndarray:
    """Rows of one curve, sorted by its x (ε, or δ when ``delta`` is None)."""
    mask = (summary["algorithm"] == algorithm) & (summary["instance"] == instance)
    if delta is not None:
        mask &= summary["delta"] == delta
    idx = np.flatnonzero(mask)
    return idx[np.argsort(summary["delta" if delta is None else "epsilon"][idx])]


def _x_range(summary: Table, spec: FigureSpec) -> tuple[float, float]:
    mask = np.isin(summary["algorithm"], spec.algorithms)
    x = summary["delta" if spec.delta is None else "epsilon"][mask]
    x = x[np.isfinite(x)]
    return float(x.min()) / 1.5, float(x.max()) * 1.5


def _hollow(ax, x, y, cens, runs, color, marker) -> None:
    """Cells with censored runs: hollow markers annotated with the censored count."""
    ax.plot(x, y, ls="none", marker=marker, ms=6, mfc="none", color=color)
    for e, m, c, n in zip(x, y, cens, runs, strict=True):
        ax.annotate(
            f"≥ ({c}/{n} cens.)",
            (e, m),
            textcoords="offset points",
            xytext=(3, 5),
            fontsize=6,
            color=color,
        )


def draw_algorithm(
    ax,
    summary: Table,
    algorithm: str,
    instance: str,
    delta: float | None,
    labels: Labels | None = None,
    rounds_of: bool = False,
) -> None:
    """One algorithm's curve on one panel: τ (or C if ``rounds_of``) against ε at ``delta``, or
    against δ if ``delta`` is None; a non-private algorithm in an ε figure is a horizontal band."""
    labels = labels or Labels.of(summary, None)
    color, marker, ls = labels.styles[algorithm]
    label = labels.names.get(algorithm, algorithm)
    idx = _cells(summary, algorithm, instance, delta)
    if not len(idx):
        return
    x = summary["delta" if delta is None else "epsilon"][idx].astype(float)
    mean_col, std_col = ("rounds_mean", "rounds_std") if rounds_of else ("mean", "std")
    mean, std = summary[mean_col][idx].astype(float), summary[std_col][idx].astype(float)
    cens = summary["censored"][idx]
    privacy = summary["privacy"][idx[0]]
    if privacy == "none" and delta is not None:
        ax.axhline(mean[0], color=color, ls=ls, lw=1.2, label=f"{label} (non-private)")
        ax.axhspan(mean[0] - std[0], mean[0] + std[0], color=color, alpha=0.08)
        return
    done = cens == 0
    ax.errorbar(
        x[done],
        mean[done],
        yerr=std[done],
        color=color,
        marker=marker,
        ms=4,
        lw=1.2,
        ls=ls,
        capsize=2,
        label=label,
    )
    if (~done).any():
        _hollow(ax, x[~done], mean[~done], cens[~done], summary["runs"][idx][~done], color, marker)
    mode = labels.episodes.get(algorithm) if (rounds_of and labels) else None
    if mode is not None:
        bound = [rounds.rounds_bound(mode, int(summary["K"][i]), summary["mean"][i]) for i in idx]
        ax.plot(x, bound, ls=_BOUND_STYLE[mode], color=color, lw=1)


def draw_theory(
    ax,
    means: np.ndarray,
    privacy: str,
    delta: float | None,
    x_range: tuple[float, float],
    family: str = "bernoulli",
    sigma: float | None = None,
    threshold: str = "heuristic",
) -> None:
    """Lower-bound and practical-bound curves (`experiments.analysis.overlay`) and the regime-switch
    line of one instance (against ε at ``delta``, or against δ if ``delta`` is None); a note on
    the panel where `jaxbai.theory` has none."""
    model = overlay.theory_model(family, privacy) or overlay.theory_model(family, "none")
    if model is None:
        ax.text(
            0.02,
            0.02,
            f"no lower bound drawn ({family}: see report)",
            transform=ax.transAxes,
            fontsize=6,
            color="gray",
        )
        return
    grid = np.geomspace(*x_range, 60)
    # against δ: the non-private bounds (ε = ∞) at every δ of the grid
    eps, dlt = (np.full(60, np.inf), grid) if delta is None else (grid, delta)
    bound = overlay.lower_bound(means, model, eps, dlt, family, sigma)
    practical = overlay.practical_bound(means, model, eps, dlt, threshold, family, sigma)
    ax.plot(grid, bound, ls="--", color="gray", lw=1, label="lower bound T*·log(1/(2.4δ))")
    label = f"practical bound: t = T*·c(t, δ), {threshold} c"
    ax.plot(grid, practical, ls=":", color="gray", lw=1, label=label)
    switch = overlay.regime_switch(means, privacy, family)
    if delta is not None and math.isfinite(switch):
        ax.axvline(switch, color="gray", lw=8, alpha=0.2, label="regime switch ε_s (theory)")
    if privacy == "global" and family == "bernoulli" and delta is not None and delta < 1 / 3:
        draw_dp_bound(ax, means, delta, x_range)


def draw_dp_bound(ax, means: np.ndarray, delta: float, x_range: tuple[float, float]) -> None:
    """The ε-global-DP lower bound T*_ε log(1/(3δ)) of Jourdan & Azize (2025) against ε (16
    points, one batched solve) and the ε beyond which privacy is free (T*_ε = T*_KL)."""
    from jaxbai import theory

    grid = np.geomspace(*x_range, overlay.DP_BOUND_BATCH)
    label = "lower bound T*_ε·log(1/(3δ)) (Jourdan & Azize 2025)"
    ax.plot(
        grid, overlay.dp_lower_bound(means, grid, delta), ls="-.", color="gray", lw=1, label=label
    )
    free = float(theory.free_privacy_epsilon(means))
    if x_range[0] <= free <= x_range[1]:
        ax.axvline(
            free, color="gray", ls=(0, (1, 3)), lw=1, label="privacy free beyond ε (T*_ε = T*_KL)"
        )


def _ylabel(spec: FigureSpec) -> str:
    return "rounds of adaptivity C(τ)" if spec.rounds else "stopping time τ"


def _title(spec: FigureSpec, runs: list[int]) -> str:
    what = "C(τ)" if spec.rounds else "τ"
    runs_text = "/".join(map(str, runs))
    if spec.delta is None:
        return f"non-private: {what} (mean ± std over {runs_text} runs) against δ"
    return f"{spec.privacy} DP: {what} (mean ± std over {runs_text} runs), δ = {spec.delta:g}"


def _legend(fig, axes, summary: Table, spec: FigureSpec, ncols: int, nrows: int) -> None:
    handles, labels = axes[0, 0].get_legend_handles_labels()
    if (summary["censored"][np.isin(summary["algorithm"], spec.algorithms)] > 0).any():
        handles.append(Line2D([], [], ls="none", marker="o", mfc="none", color="gray"))
        labels.append("hollow: censored runs (mean is a lower bound)")
    if spec.rounds:
        for mode, ls in _BOUND_STYLE.items():
            handles.append(Line2D([], [], ls=ls, color="gray"))
            labels.append(f"{rounds.BOUND_TEXT[mode]} ({mode.replace('_', '-')} episodes)")
    legend_cols = 2 if ncols == 1 else 4
    fig.legend(
        handles,
        labels,
        loc="lower center",
        ncol=min(legend_cols, max(len(labels), 1)),
        fontsize=7,
        frameon=False,
    )
    rows_of_legend = math.ceil(len(labels) / legend_cols)
    fig.tight_layout(rect=(0, 0.05 * rows_of_legend / nrows, 1, 0.95))


def draw_figure(summary: Table, spec: FigureSpec, labels: Labels | None = None) -> Figure:
    """One figure: a panel per instance of the summary that the figure's algorithms ran on."""
    labels = labels or Labels.of(summary, None)
    shown = np.isin(summary["algorithm"], spec.algorithms)
    instances = list(dict.fromkeys(summary["instance"][shown].tolist()))
    means_of = dict(zip(summary["instance"], summary["means"], strict=True))
    ncols = min(3, len(instances))
    nrows = math.ceil(len(instances) / ncols)
    fig = Figure(figsize=(max(6.5, 4.2 * ncols), 3.4 * nrows))
    axes = fig.subplots(nrows, ncols, squeeze=False)
    x_range = _x_range(summary, spec)
    for ax, instance in zip(axes.ravel(), instances, strict=False):
        means = results.parse_means(means_of[instance])
        family, sigma = overlay.instance_family(instance, labels.instances)
        if not spec.rounds:
            theory = (family, sigma, labels.threshold)
            draw_theory(ax, means, spec.privacy, spec.delta, x_range, *theory)
        for algorithm in spec.algorithms:
            draw_algorithm(ax, summary, algorithm, instance, spec.delta, labels, spec.rounds)
        ax.set_xscale("log")
        ax.xaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
        ax.set_yscale(spec.yscale)
        ax.set_xlim(*x_range)
        if spec.delta is None:  # a few δ: label each
            deltas = sorted(set(summary["delta"][shown].tolist()))
            ax.set_xticks(deltas, [f"{d:g}" for d in deltas])
        kind = "" if family == "bernoulli" else f" [{labels.instances[instance].describe()}]"
        ax.set_title(f"{instance} = ({', '.join(f'{m:g}' for m in means)}){kind}", fontsize=9)
        ax.set_xlabel("δ" if spec.delta is None else "ε")
        ax.set_ylabel(_ylabel(spec))
        ax.grid(True, which="major", alpha=0.3)
    for ax in axes.ravel()[len(instances) :]:
        ax.set_visible(False)
    fig.suptitle(_title(spec, sorted(set(summary["runs"][shown].tolist()))), fontsize=10)
    _legend(fig, axes, summary, spec, ncols, nrows)
    return fig
