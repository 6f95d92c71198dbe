"""Figures in the paper's layouts: mean τ (or rounds C) with its 95% interval against ε or δ, a
panel per instance.

``python -m experiments.plot RESULTS.csv [--out DIR]`` redraws every figure from a saved run
CSV (instance families, option labels and plot options from the ``sweep.json`` next to it).
Each curve is the cells' mean with the 95% interval of the mean as a bar at each cell and a
band between cells: normal on the log scale, mean·exp(±1.96·se/mean) (delta method, as the
report's ratios), so both ends are positive and the band stays on log axes (`mean_interval`).
The curves of one panel are drawn a few points apart (`dodges`), so that equal curves (an
algorithm and its variant) stay side by side rather than one hiding the other; the offset is a
drawing one, the ε and δ of the cells are not changed. Each τ figure
overlays the theory of `experiments.analysis.overlay` where `jaxbai.theory` supports the
instance's family: the lower bound T*·log(1/(2.4δ)) as a dashed curve (T*_ℓ(ε) for local DP,
T*_g(ε) for global DP, T*_KL without privacy) and the regime switch as a shaded vertical line;
a panel without theory says so. Theory is grey; no algorithm is
(`experiments.analysis.styles`: jaxbai's algorithms' fixed styles, and a colour and marker of
its own for any other label). Non-private algorithms are horizontal lines with their
interval's band in the ε figures. Cells with censored runs are hollow markers without an
interval, annotated with the censored count: their mean is only a lower bound. The legend
lists only what a panel draws. PNGs are written at the plot options' dpi (200 by default)
beside the PDFs.

Figures (`experiments.config.FIGURE_KINDS`; per δ for the ε figures):

* ``local``, ``global``: τ against ε, log-log (Figures 1–4);
* ``global_linear``: AdaP-TT and AdaP-TT* on a linear y axis, when both ran (Figure 5);
* ``nonprivate``: τ against δ, when no private algorithm ran (e.g. Gaussian arms);
* ``rounds_local``, ``rounds_global``: rounds of adaptivity C(τ) against ε for the algorithms
  that count them (episodic ones, DP-SE's epochs), with the bound of Appendix H at the
  measured mean τ in the algorithm's colour: K log₂ E[τ] dashed (per-arm episodes), log₂ E[τ]
  dotted (one global episode); DP-SE has none;
* ``rounds_nonprivate``: C(τ) against δ for non-private episodic algorithms (TTUCB-DPA).

Beside them, one small PNG per instance, ``allocations_<instance>.png`` (`draw_allocations`): a
panel per algorithm, grouped bars of the empirical proportions N_a/τ per arm (mean over the
cell's runs, ± std) for each (ε, δ) cell (at most `MAX_ALLOCATION_CELLS`, evenly spread), with
the allocation ω* the algorithm targets (`experiments.analysis.stats.target_allocation`) as a black
tick
on each bar where one is known; hatched bars are cells with censored runs (their counts are the
budget's). Drawn whenever the summary has proportions (a sweep's runs.csv records the counts).

Trust models, legend names and the order of the curves come from the registry
(`jaxbai.ALGORITHMS`) and the sweep's algorithm options; an algorithm of the CSV that is not
registered in this process keeps the trust model of its ``privacy`` column, its label as name,
and comes after the registered ones.

The τ and C figures are drawn by `experiments.analysis.tau_figures` (its names are re-exported
here); this module draws the allocation and τ-against-log(1/δ) figures and saves every figure.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from typing import TYPE_CHECKING

import matplotlib
import numpy as np
from matplotlib.figure import Figure

from experiments.analysis import overlay, results, stats
from experiments.analysis.results import Table
from experiments.analysis.tau_figures import (
    FigureSpec,
    Labels,
    _privacy,
    dodges,
    draw_algorithm,
    draw_figure,
    draw_theory,
    figure_specs,
    mean_interval,
)
from experiments.config import PlotOptions, SweepConfig

if TYPE_CHECKING:
    from jaxbai.base import Algorithm

__all__ = [
    "MAX_ALLOCATION_CELLS",
    "FigureSpec",
    "Labels",
    "allocation_figures",
    "allocation_instances",
    "dodges",
    "draw_algorithm",
    "draw_all",
    "draw_allocation_figures",
    "draw_allocations",
    "draw_figure",
    "draw_figures",
    "draw_theory",
    "figure_specs",
    "mean_interval",
    "save_figures",
]

MAX_ALLOCATION_CELLS = 6
"""Most (ε, δ) cells of one algorithm drawn in an allocation panel."""


def allocation_instances(summary: Table) -> list[str]:
    """Instances with empirical proportions in the summary, in order of appearance."""
    has = np.array([bool(str(p).strip()) for p in summary["proportions"].tolist()], bool)
    return list(dict.fromkeys(summary["instance"][has].tolist()))


def _spread(idx: np.ndarray, most: int) -> np.ndarray:
    """At most ``most`` of ``idx``, evenly spread (the first and last kept)."""
    if len(idx) <= most:
        return idx
    return idx[np.unique(np.linspace(0, len(idx) - 1, most).round().astype(int))]


def _cell_label(summary: Table, i: int, privacy: str, many_deltas: bool) -> str:
    parts = [] if privacy == "none" else [f"ε={summary['epsilon'][i]:g}"]
    if many_deltas or privacy == "none":
        parts.append(f"δ={summary['delta'][i]:g}")
    return ", ".join(parts)


def draw_allocations(summary: Table, instance: str, labels: Labels | None = None) -> Figure:
    """Empirical proportions against ω* on one instance: a panel per algorithm (module
    docstring)."""
    labels = labels or Labels.of(summary, None)
    has = np.array([bool(str(p).strip()) for p in summary["proportions"].tolist()], bool)
    here = has & (summary["instance"] == instance)
    privacy_of = _privacy(summary)
    algorithms = [a for a in privacy_of if (here & (summary["algorithm"] == a)).any()]
    means = results.parse_means(summary["means"][here][0])
    arms = np.arange(len(means))
    ncols = min(3, len(algorithms))
    nrows = math.ceil(len(algorithms) / ncols)
    fig = Figure(figsize=(3.3 * ncols + 0.4, 2.6 * nrows + 0.5))
    axes = fig.subplots(nrows, ncols, squeeze=False)
    many_deltas = len(set(summary["delta"][here].tolist())) > 1
    for ax, algorithm in zip(axes.ravel(), algorithms, strict=False):
        idx = np.flatnonzero(here & (summary["algorithm"] == algorithm))
        idx = _spread(idx[np.lexsort((summary["epsilon"][idx], summary["delta"][idx]))],
                      MAX_ALLOCATION_CELLS)  # fmt: skip
        width = 0.8 / len(idx)
        colours = matplotlib.colormaps["viridis"](np.linspace(0.1, 0.9, len(idx)))
        targeted = False
        for k, i in enumerate(idx):
            x = arms - 0.4 + (k + 0.5) * width
            mean = stats.parse_floats(summary["proportions"][i])
            std = stats.parse_floats(summary["proportions_std"][i])
            censored = summary["censored"][i] > 0
            ax.bar(
                x, mean, width * 0.9, yerr=std, color=colours[k], hatch="//" if censored else None,
                error_kw={"lw": 0.7, "capsize": 1.5},
                label=_cell_label(summary, i, privacy_of[algorithm], many_deltas),
            )  # fmt: skip
            omega = stats.parse_floats(summary["omega_star"][i])
            if omega is not None:
                targeted = True
                ax.hlines(omega, x - width * 0.45, x + width * 0.45, color="black", lw=1.4)
        name = labels.names.get(algorithm, algorithm)
        ax.set_title(name if targeted else f"{name} (no ω* known)", fontsize=8)
        ax.set_xticks(arms, [f"{a}" for a in arms], fontsize=7)  # as count_a in runs.csv
        ax.tick_params(axis="y", labelsize=7)
        ax.set_xlabel("arm a (count_a in runs.csv)", fontsize=7)
        ax.set_ylabel("N_a / τ", fontsize=7)
        ax.set_ylim(0, 1)
        ax.grid(True, axis="y", alpha=0.3)
        ax.legend(fontsize=5.5, frameon=False, loc="upper right")
    for ax in axes.ravel()[len(algorithms) :]:
        ax.set_visible(False)
    runs = "/".join(map(str, sorted(set(summary["runs"][here].tolist()))))
    fig.suptitle(
        f"{instance} = ({', '.join(f'{m:g}' for m in means)}): N_a/τ (mean ± std over {runs} "
        "runs); black: ω*; hatched: censored runs",
        fontsize=8,
    )
    fig.tight_layout(rect=(0, 0, 1, 0.94))
    return fig


def _file_stem(name: str) -> str:
    """``name`` with every character but letters, digits, ``.``, ``-`` and ``_`` as ``_``."""
    return "".join(c if c.isalnum() or c in "._-" else "_" for c in name)


def draw_figures(
    summary: Table,
    sweep_config: SweepConfig | None = None,
    algorithms: Mapping[str, Algorithm] | None = None,
) -> dict[str, Figure]:
    """Every figure of `figure_specs` (selected by the configuration's plot options), the
    allocation figures (`draw_allocations`) unless the options select figures without
    ``"allocations"``, and the τ-against-log(1/δ) figure where it has curves; by file stem.
    ``algorithms``: label → the algorithm as the sweep ran it (`Labels.of`)."""
    options = sweep_config.plot if sweep_config else PlotOptions()
    labels = Labels.of(summary, sweep_config, algorithms)
    figures: dict[str, Figure] = {}
    many_deltas = len(set(summary["delta"].tolist())) > 1
    for spec in figure_specs(summary, options.figures):
        per_delta = many_deltas and spec.delta is not None
        prefix = "rounds_vs" if spec.rounds else "tau_vs"
        axis = "delta" if spec.delta is None else "epsilon"
        name = spec.name.removeprefix("rounds_")
        stem = f"{prefix}_{axis}_{name}" + (f"_delta{spec.delta:g}" if per_delta else "")
        figures[stem] = draw_figure(summary, spec, labels)
    if not options.figures or "allocations" in options.figures:
        figures |= allocation_figures(summary, labels)
    if log_delta_curves(summary) and (not options.figures or "log_delta" in options.figures):
        figures["tau_vs_log_delta"] = draw_log_delta(summary, labels)
    return figures


def save_figures(
    figures: dict[str, Figure], out_dir: str, sweep_config: SweepConfig | None = None
) -> list[str]:
    """Save `draw_figures`' figures in ``out_dir``, each in the plot options' formats (the
    allocation figures as PNG); returns the written paths. ``out_dir`` may not be a symbolic
    link (`experiments.analysis.results.output_directory`)."""
    options = sweep_config.plot if sweep_config else PlotOptions()
    results.output_directory(out_dir)  # never a link planted in a received folder
    paths = []
    for stem, fig in figures.items():
        formats = ("png",) if stem.startswith("allocations_") else options.formats
        for ext in formats:
            paths.append(os.path.join(out_dir, f"{stem}.{ext}"))
            with results.replacing(paths[-1], "wb") as f:  # never through a planted link
                fig.savefig(f, format=ext, dpi=options.dpi)
    return paths


def allocation_figures(summary: Table, labels: Labels | None = None) -> dict[str, Figure]:
    """``allocations_<instance>`` (`draw_allocations`) of every instance with proportions
    (`allocation_instances`), by file stem."""
    if "proportions" not in summary:
        return {}
    labels = labels or Labels.of(summary, None)
    return {
        f"allocations_{_file_stem(instance)}": draw_allocations(summary, instance, labels)
        for instance in allocation_instances(summary)
    }


def draw_allocation_figures(
    summary: Table, out_dir: str, labels: Labels | None = None
) -> list[str]:
    """Save `allocation_figures` in ``out_dir`` (PNG); returns the written paths."""
    return save_figures(allocation_figures(summary, labels), out_dir)


def draw_all(summary: Table, out_dir: str, sweep_config: SweepConfig | None = None) -> list[str]:
    """Draw and save every figure (`draw_figures`, `save_figures`); returns the written paths."""
    return save_figures(draw_figures(summary, sweep_config), out_dir, sweep_config)


MIN_LOG_DELTA_POINTS = 3
"""δ values a curve needs in the τ-against-log(1/δ) figure (and its slope claim)."""


def log_delta_curves(summary: Table) -> dict[tuple[str, str, float], np.ndarray]:
    """Rows of every (algorithm, instance, ε) with at least `MIN_LOG_DELTA_POINTS` δ, by δ
    decreasing (log(1/δ) increasing)."""
    curves: dict[tuple[str, str, float], list[int]] = {}
    keys = zip(summary["algorithm"], summary["instance"], summary["epsilon"], strict=True)
    for i, key in enumerate(keys):
        curves.setdefault((key[0], key[1], float(key[2])), []).append(i)
    return {
        key: np.array(sorted(idx, key=lambda i: -summary["delta"][i]))
        for key, idx in curves.items()
        if len(idx) >= MIN_LOG_DELTA_POINTS
    }


def draw_log_delta(summary: Table, labels: Labels | None = None) -> Figure:
    """τ against log(1/δ): a panel per instance, a curve per (algorithm, ε) with mean ± se, its
    weighted least-squares line (slope: the characteristic time reached, cf. the D1 claim of
    `experiments.analysis.claims`), and in its colour the lower bound T*(ε)·log(1/(2.4δ)) (dashed)
    and
    the practical bound (dotted) of `experiments.analysis.overlay`."""
    labels = labels or Labels.of(summary, None)
    curves = log_delta_curves(summary)
    instances = list(dict.fromkeys(key[1] for key in curves))
    ncols = min(3, len(instances))
    nrows = math.ceil(len(instances) / ncols)
    fig = Figure(figsize=(max(6.5, 4.6 * ncols), 3.8 * nrows))
    axes = fig.subplots(nrows, ncols, squeeze=False)
    for ax, instance in zip(axes.ravel(), instances, strict=False):
        ax.set_title(instance, fontsize=9)
        for (algorithm, where, eps), idx in curves.items():
            if where == instance:
                _draw_log_delta_curve(ax, summary, algorithm, eps, idx, labels)
        ax.set_xlabel("log(1/δ)")
        ax.set_ylabel("stopping time τ")
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=6, frameon=False)
    for ax in axes.ravel()[len(instances) :]:
        ax.set_visible(False)
    fig.suptitle(
        "τ against log(1/δ) (mean ± se); dashed: T*·log(1/(2.4δ)); dotted: practical bound "
        f"({labels.threshold} threshold)",
        fontsize=9,
    )
    fig.tight_layout(rect=(0, 0, 1, 0.94))
    return fig


def _draw_log_delta_curve(ax, summary, algorithm, eps, idx, labels: Labels) -> None:
    color, marker, ls = labels.styles[algorithm]
    delta = summary["delta"][idx].astype(float)
    x = np.log(1 / delta)
    mean, se = summary["mean"][idx].astype(float), summary["se"][idx].astype(float)
    name = labels.names.get(algorithm, algorithm)
    fit = stats.log_delta_line(delta, mean, se)
    slope = f", slope {fit[0].value:.3g}" if fit else ""
    where = "" if math.isinf(eps) else f" ε={eps:g}"
    ax.errorbar(x, mean, yerr=se, color=color, marker=marker, ms=4, ls="none", capsize=2)
    if fit:
        ax.plot(x, fit[1] + fit[0].value * x, color=color, ls=ls, lw=1, label=name + where + slope)
    instance = summary["instance"][idx[0]]
    means = results.parse_means(summary["means"][idx[0]])
    family, sigma = overlay.instance_family(instance, labels.instances)
    privacy = summary["privacy"][idx[0]]
    model = overlay.theory_model(family, privacy)
    if model is None:
        return
    grid = np.geomspace(delta.min(), delta.max(), 40)
    eps_grid = np.full(grid.shape, eps)
    bound = overlay.lower_bound(means, model, eps_grid, grid, family, sigma)
    practical = overlay.practical_bound(
        means, model, eps_grid, grid, labels.threshold, family, sigma
    )
    ax.plot(np.log(1 / grid), bound, color=color, ls="--", lw=0.8, alpha=0.7)
    ax.plot(np.log(1 / grid), practical, color=color, ls=":", lw=0.8, alpha=0.7)
