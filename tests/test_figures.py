"""Figures fit to publish and the claims report's verdicts: intervals that stay on log axes,
a style of its own for every curve, no legend entry without its artist, 200 dpi PNGs beside
the PDFs; claims outside a sweep's regime listed once, every "fails" linked to its reason."""

from __future__ import annotations

import dataclasses
import os
import pathlib
import re

import matplotlib.colors
import numpy as np
import pytest
from matplotlib.collections import LineCollection, PolyCollection
from matplotlib.figure import Figure

import jaxbai
from experiments.analysis import drawing, markdown_report, results, stats, tau_figures, verdicts
from experiments.analysis.styles import (
    COLOURS,
    PAPER_STYLES,
    REGISTERED_STYLES,
    Style,
    fixed_style,
    register_style,
    styles,
)
from experiments.config.specs import AlgorithmSpec

DOCS = os.path.join(os.path.dirname(os.path.dirname(__file__)), "docs")


def _runs(algorithm, eps=1.0, taus=(1000, 1100), rounds=-1, errors=0, delta=0.01):
    """Runs of one cell on instance ``i`` with the given stopping times."""
    n = len(taus)
    privacy = jaxbai.ALGORITHMS[algorithm].info().privacy
    return {
        "algorithm": np.full(n, algorithm, object),
        "privacy": np.full(n, privacy, object),
        "privacy_measure": np.full(
            n,
            jaxbai.base.privacy.claim(None if privacy == "none" else jaxbai.base.PURE, privacy),
            object,
        ),
        "instance": np.full(n, "i", object),
        "means": np.full(n, "0.9 0.5", object),
        "K": np.full(n, 2),
        "epsilon": np.full(n, eps if privacy != "none" else np.inf),
        "delta": np.full(n, delta),
        "threshold": np.full(n, "heuristic", object),
        "seed": np.zeros(n, int),
        "run": np.arange(n),
        "tau": np.asarray(taus, np.int64),
        "recommendation": np.zeros(n, int),
        "correct": np.arange(n) >= errors,
        "censored": np.zeros(n, bool),
        "rounds": np.full(n, rounds),
    }


def _summary(*cells):
    return stats.summarize(
        results.concat([_runs(*c) if isinstance(c, tuple) else c for c in cells])
    )


def _spec(summary, name):
    return next(s for s in drawing.figure_specs(summary) if s.name == name)


def test_intervals_on_a_log_axis_with_a_large_spread_stay_positive_and_finite():
    """mean − 1.96·se < 0 here: a symmetric bar would leave the log axis; the band must not."""
    spread = (1, 2, 3, 10**7)
    summary = _summary(*[("adap_tt", e, spread) for e in (0.1, 1.0)], ("dp_se", 1.0, spread))
    row = 0
    assert summary["mean"][row] - 1.96 * summary["se"][row] < 0, "the case the test is about"
    lo, hi = drawing.mean_interval(summary["mean"], summary["se"])
    assert np.all((lo > 0) & (lo < summary["mean"]) & (summary["mean"] < hi) & np.isfinite(hi))
    lo, hi = drawing.mean_interval(np.array([100.0, 100.0, -1.0]), np.array([np.inf, np.nan, 1.0]))
    np.testing.assert_array_equal(lo[:2], [100.0, 100.0])  # se not finite: the mean itself
    np.testing.assert_array_equal(hi[:2], [100.0, 100.0])
    assert np.isnan(lo[2]) and np.isnan(hi[2])  # a mean that is not positive
    ax = Figure().subplots()
    ax.set_yscale("log")
    for algorithm in ("adap_tt", "dp_se"):
        drawing.draw_algorithm(ax, summary, algorithm, "i", 0.01)
    bands = [c for c in ax.collections if isinstance(c, PolyCollection)]
    assert bands, "the interval is drawn as a band"
    for band in bands:
        for path in band.get_paths():
            assert np.all(np.isfinite(path.vertices)) and np.all(path.vertices[:, 1] > 0)
    bars = [c for c in ax.collections if c not in bands]  # DP-SE's lone cell: an error bar
    assert bars and all(np.all(np.concatenate(c.get_segments())[:, 1] > 0) for c in bars)


def _legend_labels(fig) -> list[str]:
    return [t.get_text() for t in fig.legends[0].get_texts()]


def _artist_labels(fig) -> set[str]:
    return {a.get_label() for ax in fig.axes for a in ax.get_children()}


@pytest.mark.parametrize(
    ("algorithm", "rounds", "bounds"),
    [("dp_se", 3, set()), ("adap_tt", 40, {"per-arm"}), ("adap_tt_global", 9, {"global"})],
)
def test_a_rounds_figure_lists_only_the_bounds_it_draws(algorithm, rounds, bounds):
    summary = _summary(*[(algorithm, e, (1000, 1100), rounds) for e in (0.1, 1.0)])
    fig = drawing.draw_figure(summary, _spec(summary, "rounds_global"))
    labels = _legend_labels(fig)
    listed = {m for m in ("per-arm", "global") if any(f"({m} episodes)" in t for t in labels)}
    assert listed == bounds
    dashed = {ls for line in fig.axes[0].get_lines() for ls in [line.get_linestyle()]}
    assert ("--" in dashed) == ("per-arm" in bounds) and (":" in dashed) == ("global" in bounds)


def test_every_legend_entry_of_a_tau_figure_is_a_drawn_artist():
    cells = [("ttucb", 1.0), *[(a, e) for a in ("adap_tt", "adap_tt_star") for e in (0.1, 1.0)]]
    summary = _summary(*[(*c, (1000, 1100), -1, 0, 0.34) for c in cells])  # δ ≥ 1/3: no T*_ε
    for spec in drawing.figure_specs(summary):
        fig = drawing.draw_figure(summary, spec)
        drawn = _artist_labels(fig)
        assert set(_legend_labels(fig)) <= drawn, spec.name  # no proxy: nothing censored


def test_equal_curves_are_drawn_side_by_side_each_with_its_intervals():
    """AdaP-TT and its published-code variant with equal cells (one curve hid the other): the
    two curves keep the cells' ε as data but are drawn `DODGE_POINTS` apart, and each draws an
    interval bar at each of its cells."""
    taus = (1000, 1100, 1300)
    summary = _summary(*[(a, e, taus) for a in ("adap_tt", "adap_tt_published") for e in (0.1, 1)])
    fig = drawing.draw_figure(summary, _spec(summary, "global"))
    ax = fig.axes[0]
    labelled = [line for line in ax.get_lines() if not line.get_label().startswith("_")]
    a, b = [line for line in labelled if line.get_marker() != "None"]  # not the theory
    np.testing.assert_array_equal(a.get_xdata(), [0.1, 1.0])
    np.testing.assert_array_equal(b.get_xdata(), a.get_xdata())
    np.testing.assert_array_equal(b.get_ydata(), a.get_ydata())
    shown = [line.get_transform().transform(line.get_xydata())[:, 0] for line in (a, b)]
    pixels = tau_figures.DODGE_POINTS * fig.dpi / 72
    np.testing.assert_allclose(shown[1] - shown[0], pixels, rtol=1e-9)
    bars = [c for c in ax.collections if isinstance(c, LineCollection)]
    assert sorted(len(c.get_segments()) for c in bars) == [2, 2], "one bar per cell and curve"


def _achromatic(colour: str) -> bool:
    r, g, b = matplotlib.colors.to_rgb(colour)
    return max(r, g, b) - min(r, g, b) < 0.05


def test_user_labels_get_a_colour_and_a_marker_of_their_own():
    """A variant with options and an unregistered label: a colour and a marker no other curve
    of the sweep has, never black or grey; the paper's algorithms keep their fixed ones."""
    labels = ["ttucb", "adap_tt", "adap_tt_star", "dp_se", "b03", "b07", "plugin_alg"]
    specs = {f"b0{k}": AlgorithmSpec(f"b0{k}", "adap_tt", (("beta", k / 10),)) for k in (3, 7)}
    drawn = styles(labels, specs)
    for name in labels[:4]:
        assert drawn[name] == PAPER_STYLES[name]
    assert len({s.color for s in drawn.values()}) == len(labels)
    assert len({s.marker for s in drawn.values()}) == len(labels)
    assert not any(_achromatic(drawn[a].color) for a in labels[4:])


@pytest.fixture
def plugin_algorithm():
    """A plugin algorithm (unregistered afterwards)."""
    name = "plugin_figure_alg"
    jaxbai.register(name, lambda **o: dataclasses.replace(jaxbai.adap_tt(**o), name=name))
    try:
        yield name
    finally:
        jaxbai.unregister(name)


def test_a_plugin_is_drawn_by_the_rule_of_every_other_label(plugin_algorithm):
    """Black and grey are TTUCB's and the reference curves': a plugin's algorithm takes a
    chromatic colour and a marker no curve of the figure has and none of jaxbai's algorithms
    has, the same as an unregistered label in its place."""
    drawn = styles(["ttucb", "adap_tt", plugin_algorithm], {})
    assert fixed_style(plugin_algorithm) is None
    unregistered = styles(["ttucb", "adap_tt", "other"], {})
    assert drawn[plugin_algorithm] == unregistered["other"]
    own = drawn[plugin_algorithm]
    assert own.color not in {s.color for s in PAPER_STYLES.values()}
    assert own.marker not in {s.marker for s in PAPER_STYLES.values()}
    assert not any(_achromatic(c) for c in COLOURS)


@pytest.fixture
def registered_style(plugin_algorithm):
    """The plugin's algorithm with the style it registered (removed afterwards)."""
    try:
        yield plugin_algorithm, register_style(plugin_algorithm, "black", "X", "--")
    finally:
        REGISTERED_STYLES.pop(plugin_algorithm, None)


def test_a_style_a_plugin_registers_is_honoured(registered_style):
    name, style = registered_style
    assert style == Style("black", "X", "--")
    assert styles(["adap_tt", name, "other"], {})[name] == style
    with_options = {name: AlgorithmSpec(name, name, (("beta", 0.3),))}
    assert styles(["adap_tt", name], with_options)[name] != style, "options: not the same curve"


def test_a_registered_style_that_clashes_is_replaced_with_one_warning_that_says_why(
    registered_style,
):
    """Black is TTUCB's: drawn with TTUCB, the plugin gets a style of its own and a warning
    that names it, its registered style and the curve it clashes with."""
    name, style = registered_style
    with pytest.warns(UserWarning) as caught:
        drawn = styles(["ttucb", "adap_tt", name], {})
    assert len(caught) == 1
    message = str(caught[0].message)
    assert repr(name) in message and "colour of 'ttucb'" in message and "'black'" in message
    assert drawn[name] != style and drawn[name].color not in {"black", "tab:orange"}


def test_a_colour_written_another_way_is_the_same_colour(plugin_algorithm):
    """AdaP-TT's orange written in hex clashes with it as tab:orange does."""
    register_style(plugin_algorithm, "#ff7f0e", "X")
    try:
        with pytest.warns(UserWarning, match="colour of 'adap_tt'"):
            drawn = styles(["adap_tt", plugin_algorithm], {})
    finally:
        REGISTERED_STYLES.pop(plugin_algorithm, None)
    assert drawn[plugin_algorithm].color != "#ff7f0e"


@pytest.mark.parametrize(
    ("name", "color", "marker", "linestyle", "match"),
    [
        ("plugin_x", "not-a-colour", "o", "-", "colour"),
        ("plugin_x", "tab:blue", "not-a-marker", "-", "marker"),
        ("plugin_x", "tab:blue", "o", "wavy", "line style"),
        ("plugin_x", "grey", "o", "-", "grey"),
        ("adap_tt", "tab:blue", "o", "-", "fixed"),
        ("adap_tt_published", "tab:blue", "o", "-", "fixed"),
        ("plugin_x", "tab:blue", "none", "-", "marker"),
    ],
)
def test_register_style_refuses_what_it_cannot_draw(name, color, marker, linestyle, match):
    with pytest.raises(ValueError, match=match):
        register_style(name, color, marker, linestyle)
    assert name not in REGISTERED_STYLES


def test_a_plugins_published_code_variant_is_drawn_as_its_paper_algorithm_dashed():
    name = "adap_tt_published_copy"
    factory = jaxbai.ALGORITHMS["adap_tt_published"].factory
    jaxbai.register(
        name, lambda: dataclasses.replace(factory(), name=name), name, published_code_of="adap_tt"
    )
    try:
        drawn = styles(["adap_tt", name], {})
        assert drawn[name] == PAPER_STYLES["adap_tt"]._replace(linestyle="--")
    finally:
        jaxbai.unregister(name)


def test_a_users_algorithm_under_a_built_in_name_is_drawn_as_a_users():
    """A replacement registered under one of jaxbai's names is not jaxbai's algorithm: it gets
    a style of its own, not the fixed one."""
    entry = jaxbai.ALGORITHMS["adap_tt"]
    jaxbai.register("adap_tt", lambda **o: jaxbai.adap_tt(beta=0.3, **o), "mine", replace=True)
    try:
        assert fixed_style("adap_tt") is None
        assert styles(["adap_tt"], {})["adap_tt"] != PAPER_STYLES["adap_tt"]
    finally:
        jaxbai.register("adap_tt", entry.factory, entry.display_name, replace=True)
    assert fixed_style("adap_tt") == PAPER_STYLES["adap_tt"]


def test_more_labels_than_colours_and_markers_still_get_styles():
    """Past the free colours and markers (a narrowed-algorithms sweep draws 20 and more) the
    styles repeat cyclically; they used to index past the markers (IndexError)."""
    labels = [f"user_{k}" for k in range(60)]
    drawn = styles(labels, {})
    assert len(drawn) == 60 and len({(s.color, s.marker) for s in drawn.values()}) >= 15


def test_the_built_in_entries_share_no_colour_and_no_marker():
    """Every one of jaxbai's algorithms has a fixed style (a published-code variant its paper
    algorithm's, dashed), and no two of the paper's share a colour or a marker."""
    built_in = jaxbai.registry.BUILT_IN_NAMES
    papers = {n for n in built_in if not jaxbai.ALGORITHMS[n].published_code_of}
    assert set(PAPER_STYLES) == papers
    own = list(PAPER_STYLES.values())
    assert len({s.color for s in own}) == len(own) and len({s.marker for s in own}) == len(own)
    for name in built_in - papers:
        paper = jaxbai.ALGORITHMS[name].published_code_of
        assert fixed_style(name) == PAPER_STYLES[paper]._replace(linestyle="--"), name


def test_pngs_are_saved_at_200_dpi_beside_the_pdfs(tmp_path):
    from PIL import Image

    summary = _summary(*[("adap_tt", e, (1000, 1100), 40) for e in (0.1, 1.0)])
    figure = drawing.draw_figure(summary, _spec(summary, "rounds_global"))  # no theory to solve
    paths = drawing.save_figures({"tau": figure}, str(tmp_path))
    assert sorted(os.path.basename(p) for p in paths) == ["tau.pdf", "tau.png"]
    with Image.open(tmp_path / "tau.png") as image:
        assert image.info["dpi"][0] == pytest.approx(200, abs=0.5)


def _report(*cells) -> str:
    summary = _summary(*cells)
    switch = {("i", "local"): 1.0, ("i", "global"): 0.1}
    ctx = markdown_report.Context(summary, switch, np.full(len(summary["mean"]), 50.0))
    return markdown_report.render(markdown_report.evaluate(ctx), ctx, "runs.csv")


def test_a_global_only_sweep_lists_the_local_claims_once_as_not_applicable():
    text = _report(("ttucb", 1.0), *[("adap_tt", e) for e in (0.1, 1.0)])
    table = [line for line in text.splitlines() if line.startswith("| L")]
    assert not table and "### L1" not in text and "### L2" not in text
    lines = [line for line in text.splitlines() if "not applicable" in line.lower()]
    assert len(lines) == 1 and "L1, L2" in lines[0] and "CTB-TT" in lines[0]


def test_every_fails_links_to_the_section_of_the_report_that_explains_it():
    """AdaP-TT* slower than AdaP-TT at high privacy (G5, explained) and wrong answers (A1, not
    explained: the link goes to the claim's cells). Every link is an anchor of the report
    itself, so it resolves wherever the report's folder is copied; the explanation is printed
    once, in full, and names the docs page it summarises."""
    slow = (30000, 31000)
    text = _report(
        *[("adap_tt", e, (1000, 1100)) for e in (0.01, 0.03)],
        *[("adap_tt_star", e, slow) for e in (0.01, 0.03)],
        ("ttucb", 1.0, (1000, 1100, 1050, 1020), -1, 3),
    )
    rows = {line.split(" | ")[0][2:]: line for line in text.splitlines() if line.startswith("| ")}
    failing = [key for key, line in rows.items() if "**fails**" in line]
    assert {"G5", "A1"} <= set(failing)
    for key in failing:
        link = re.search(r"\*\*fails\*\* \(\[\w+\]\(([^)]+)\)\)", rows[key])
        assert link, key
        assert link.group(1).startswith("#") and f'<a id="{link.group(1)[1:]}"></a>' in text
    assert "#explained-adap-tt-star" in rows["G5"] and "#evidence-a1" in rows["A1"]
    assert "](" not in text.replace("](#", ""), "no link leaves the report"
    title, explanation = verdicts.EXPLANATIONS[verdicts.ADAP_TT_STAR_EXPLAINED]
    assert text.count(f"## {title}") == 1 and explanation in text
    heading = "## What the numbers show"
    assert heading in (pathlib.Path(DOCS) / "adap-tt-star-ablation.md").read_text()
    assert "'What the numbers show'" in explanation and "'AdaP-TT* ablation'" in explanation
