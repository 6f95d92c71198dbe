"""The τ (or rounds C) figures against ε or δ, a panel per instance
(`experiments.analysis.drawing`).

`figure_specs` lists the figures a summary supports (`FigureSpec`: kind, trust model,
algorithms, axis, δ); `draw_figure` draws one: per panel the theory of `draw_theory` and one
curve per algorithm (`draw_algorithm`), in the legend names and styles of `Labels`
(`experiments.analysis.styles`).
What each figure shows, its theory overlay and its censored cells are described in
`experiments.analysis.drawing`, which draws and saves every figure.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, NamedTuple

import matplotlib.ticker
import numpy as np
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.text import Annotation
from matplotlib.transforms import offset_copy

from experiments.analysis import overlay, results, rounds
from experiments.analysis.results import Table
from experiments.analysis.stats import Z95
from experiments.analysis.styles import Style, styles
from experiments.config import SweepConfig
from experiments.config.specs import display_name, registry

if TYPE_CHECKING:
    from jaxbai.base import Algorithm

__all__ = [
    "FigureSpec",
    "Labels",
    "dodges",
    "draw_algorithm",
    "draw_figure",
    "draw_theory",
    "figure_specs",
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
    """Colour, marker and line style of every algorithm label
    (`experiments.analysis.styles.styles`)."""
    threshold: str = "heuristic"
    """The sweep's stopping-threshold family (its practical bound is drawn)."""

    @classmethod
    def of(
        cls,
        summary: Table,
        sweep_config: SweepConfig | None,
        algorithms: Mapping[str, Algorithm] | None = None,
    ) -> Labels:
        """Names, episode modes, instances and styles for ``summary``'s algorithms and
        instances (``algorithms``: `experiments.analysis.rounds.episode_modes`')."""
        labels = results.unique(summary["algorithm"])
        own = {a.label: a for a in sweep_config.algorithms} if sweep_config else {}
        names = {a: own[a].display_name() if a in own else display_name(a) for a in labels}
        instances = {i.name: i for i in sweep_config.instances} if sweep_config else {}
        threshold = sweep_config.threshold if sweep_config else "heuristic"
        episodes = rounds.episode_modes(labels, sweep_config, algorithms)
        return cls(names, episodes, instances, styles(labels, own), threshold)


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


DODGE_POINTS = 4.0
"""Horizontal distance, in points, between the curves of neighbouring algorithms in a panel
(a marker's width)."""
DODGE_SPREAD = 24.0
"""Most points between a panel's outermost curves (many algorithms are drawn closer)."""


def dodges(count: int) -> np.ndarray:
    """The horizontal offsets (points) of ``count`` curves drawn on one panel: evenly spaced
    `DODGE_POINTS` apart (closer if that spans more than `DODGE_SPREAD`) and centred on 0, so
    that curves with equal values (one algorithm and its variant) stay side by side instead of
    one hiding the other. Only where a curve is drawn moves; its data (the ε or δ of each cell)
    are unchanged.

    Examples:
        >>> dodges(3).tolist(), dodges(13).tolist()[:2]
        ([-4.0, 0.0, 4.0], [-12.0, -10.0])
    """
    spacing = min(DODGE_POINTS, DODGE_SPREAD / max(count - 1, 1))
    return (np.arange(count) - (count - 1) / 2) * spacing


MAX_LOG_HALF_WIDTH = 20.0
"""Cap on Z95·se/mean, the half-width of an interval on the log scale (keeps it finite)."""


def mean_interval(mean: np.ndarray, se: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """95% interval of positive means, normal on the log scale (delta method, as the claims'
    ratios): mean·exp(∓1.96·se/mean); both ends positive and finite (NaN where the mean is not
    positive, the mean itself where se is not finite).

    Examples:
        >>> lo, hi = mean_interval(np.array([100.0]), np.array([1000.0]))
        >>> bool(0 < lo[0] < 100 < hi[0] < np.inf)
        True
    """
    mean, se = np.asarray(mean, float), np.asarray(se, float)
    with np.errstate(divide="ignore", invalid="ignore"):
        half = np.where(np.isfinite(se), np.nan_to_num(Z95 * se / mean, nan=0.0), 0.0)
    half = np.minimum(half, MAX_LOG_HALF_WIDTH)
    mean = np.where(mean > 0, mean, np.nan)
    return mean * np.exp(-half), mean * np.exp(half)


def _se(summary: Table, idx: np.ndarray, rounds_of: bool) -> np.ndarray:
    """Standard error of the mean τ (or C) of the rows ``idx``."""
    if not rounds_of:
        return summary["se"][idx].astype(float)
    return summary["rounds_std"][idx].astype(float) / np.sqrt(summary["runs"][idx].astype(float))


def draw_algorithm(
    ax,
    summary: Table,
    algorithm: str,
    instance: str,
    delta: float | None,
    labels: Labels | None = None,
    rounds_of: bool = False,
    dodge: float = 0.0,
) -> str | None:
    """One algorithm's curve on one panel: mean τ (or C if ``rounds_of``) against ε at
    ``delta``, or against δ if ``delta`` is None, with its 95% interval (`mean_interval`) as a
    bar at each cell and, between cells, a band; a non-private algorithm in an ε figure is a
    horizontal line and band. ``dodge``: the curve is drawn that many points to the right
    (`dodges`). Returns the episode mode whose bound it drew (rounds only), else None."""
    labels = labels or Labels.of(summary, None)

    color, marker, ls = labels.styles[algorithm]
    label = labels.names.get(algorithm, algorithm)
    idx = _cells(summary, algorithm, instance, delta)
    if not len(idx):
        return None
    x = summary["delta" if delta is None else "epsilon"][idx].astype(float)
    mean = summary["rounds_mean" if rounds_of else "mean"][idx].astype(float)
    lo, hi = mean_interval(mean, _se(summary, idx, rounds_of))
    cens = summary["censored"][idx]
    if summary["privacy"][idx[0]] == "none" and delta is not None:
        ax.axhline(mean[0], color=color, ls=ls, lw=1.2, label=f"{label} (non-private)")
        ax.axhspan(lo[0], hi[0], color=color, alpha=0.12, lw=0)
        return None
    done = cens == 0
    before = set(ax.get_children())
    ax.plot(x[done], mean[done], color=color, marker=marker, ms=4, lw=1.2, ls=ls, label=label)
    if done.sum() > 1:
        ax.fill_between(x[done], lo[done], hi[done], color=color, alpha=0.18, lw=0)
    if done.any():
        err = np.stack([mean[done] - lo[done], hi[done] - mean[done]])
        ax.errorbar(x[done], mean[done], yerr=err, color=color, ls="none", lw=0.8, capsize=2)
    if (~done).any():
        runs = summary["runs"][idx][~done]
        _hollow(ax, x[~done], mean[~done], cens[~done], runs, color, marker)
    mode = labels.episodes.get(algorithm) if rounds_of else None
    if mode is not None:
        bound = [rounds.rounds_bound(mode, int(summary["K"][i]), summary["mean"][i]) for i in idx]
        ax.plot(x, bound, ls=_BOUND_STYLE[mode], color=color, lw=1)
    shifted = offset_copy(ax.transData, fig=ax.figure, x=dodge, y=0.0, units="points")
    for artist in set(ax.get_children()) - before:  # drawn shifted, the axis limits unchanged
        if isinstance(artist, Annotation):
            artist.xycoords = shifted
        else:
            artist.set_transform(shifted)
    return mode


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
    shown = f"mean {what}, band: 95% interval of the mean ({runs_text} runs)"
    if spec.delta is None:
        return f"non-private: {shown} against δ"
    return f"{spec.privacy} DP: {shown}, δ = {spec.delta:g}"


def _legend(fig, axes, drawn: Drawn, ncols: int, nrows: int) -> None:
    """One legend below the panels: every labelled artist of any panel (once), then a proxy for
    hollow markers and for each rounds bound only where one was drawn."""
    entries: dict[str, object] = {}
    for ax in axes.ravel():
        for handle, label in zip(*ax.get_legend_handles_labels(), strict=True):
            entries.setdefault(label, handle)
    if drawn.censored:
        label = "hollow: censored runs (mean is a lower bound)"
        entries[label] = Line2D([], [], ls="none", marker="o", mfc="none", color="gray")
    for mode, ls in _BOUND_STYLE.items():
        if mode in drawn.modes:
            label = f"{rounds.BOUND_TEXT[mode]} ({mode.replace('_', '-')} episodes)"
            entries[label] = Line2D([], [], ls=ls, color="gray")
    width = fig.get_figwidth()
    longest = max((len(label) for label in entries), default=1)
    legend_cols = max(1, min(4, len(entries), int(width * 72 / (longest * 4.2 + 30))))
    fig.legend(
        list(entries.values()), list(entries), loc="lower center", ncol=legend_cols, fontsize=7,
        frameon=False,
    )  # fmt: skip
    rows_of_legend = math.ceil(len(entries) / legend_cols)
    legend_height = 0.15 + 0.16 * rows_of_legend  # inches, added below the panels
    fig.set_figheight(fig.get_figheight() + legend_height)
    bottom = legend_height / fig.get_figheight()
    fig.tight_layout(rect=(0, bottom, 1, 0.95))


class Drawn(NamedTuple):
    """What a figure's panels drew beyond their labelled artists (for the legend)."""

    modes: frozenset[str]
    """Episode modes whose rounds bound a curve drew."""
    censored: bool
    """Whether a hollow marker (a cell with censored runs) was drawn."""


def _panel(ax, summary: Table, spec: FigureSpec, instance: str, labels: Labels, x_range) -> set:
    """One panel (theory, then every algorithm's curve); returns the episode modes drawn."""
    means = results.parse_means(summary["means"][summary["instance"] == instance][0])
    family, sigma = overlay.instance_family(instance, labels.instances)
    if not spec.rounds:
        draw_theory(ax, means, spec.privacy, spec.delta, x_range, family, sigma, labels.threshold)
    privacy = _privacy(summary)
    curves = [a for a in spec.algorithms if spec.delta is None or privacy[a] != "none"]
    offsets = dict(zip(curves, dodges(len(curves)), strict=True))  # not a non-private line
    modes = {
        draw_algorithm(
            ax,
            summary,
            algorithm,
            instance,
            spec.delta,
            labels,
            spec.rounds,
            offsets.get(algorithm, 0.0),
        )
        for algorithm in spec.algorithms
    }
    ax.set_xscale("log")
    ax.xaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
    ax.set_yscale(spec.yscale)
    if spec.yscale == "linear":  # no offset text ("1e6") above the axis, under the title
        ax.yaxis.set_major_formatter(matplotlib.ticker.EngFormatter(sep=""))
    ax.set_xlim(*x_range)
    kind = "" if family == "bernoulli" else f" [{labels.instances[instance].describe()}]"
    ax.set_title(f"{instance} = ({', '.join(f'{m:g}' for m in means)}){kind}", fontsize=9)
    ax.set_xlabel("δ" if spec.delta is None else _epsilon_label(summary, spec), fontsize=8)
    ax.set_ylabel(_ylabel(spec))
    ax.grid(True, which="major", alpha=0.3)
    return modes - {None}


def _epsilon_label(summary: Table, spec: FigureSpec) -> str:
    """The ε axis's label, with the privacy measure(s) its private curves claim at that ε
    (``privacy_measure``, `jaxbai.base.AlgorithmInfo.claim`), so that curves of different
    measures on one axis say so."""
    rows = np.isin(summary["algorithm"], spec.algorithms) & (summary["privacy"] != "none")
    claims = sorted(set(summary["privacy_measure"][rows].tolist()))
    return f"ε of {' | '.join(claims)}" if claims else "ε"


def _hollow_rows(summary: Table, spec: FigureSpec) -> np.ndarray:
    """Rows a figure draws as points (hollow where censored): its algorithms at its δ, less a
    non-private line in an ε figure."""
    rows = np.isin(summary["algorithm"], spec.algorithms)
    if spec.delta is not None:
        rows &= (summary["delta"] == spec.delta) & (summary["privacy"] != "none")
    return rows


def draw_figure(summary: Table, spec: FigureSpec, labels: Labels | None = None) -> Figure:
    """One figure: a panel per instance of the summary that the figure's algorithms ran on."""
    labels = labels or Labels.of(summary, None)
    shown = np.isin(summary["algorithm"], spec.algorithms)
    instances = list(dict.fromkeys(summary["instance"][shown].tolist()))
    ncols = min(3, len(instances))
    nrows = math.ceil(len(instances) / ncols)
    fig = Figure(figsize=(max(6.5, 4.2 * ncols), 3.4 * nrows))
    axes = fig.subplots(nrows, ncols, squeeze=False)
    x_range = _x_range(summary, spec)
    modes: set[str] = set()
    for ax, instance in zip(axes.ravel(), instances, strict=False):
        modes |= _panel(ax, summary, spec, instance, labels, x_range)
        if spec.delta is None:  # a few δ: label each
            deltas = sorted(set(summary["delta"][shown].tolist()))
            ax.set_xticks(deltas, [f"{d:g}" for d in deltas])
    for ax in axes.ravel()[len(instances) :]:
        ax.set_visible(False)
    fig.suptitle(_title(spec, sorted(set(summary["runs"][shown].tolist()))), fontsize=10)
    censored = bool((summary["censored"][_hollow_rows(summary, spec)] > 0).any())
    drawn = Drawn(frozenset(modes), censored)
    _legend(fig, axes, drawn, ncols, nrows)
    return fig
