"""How the figures draw each algorithm: one rule for every label, registered or not.

jaxbai's own algorithms have fixed styles (`PAPER_STYLES`), so a curve looks the same in every
figure and every sweep; a published-code variant
(`jaxbai.registry.AlgorithmEntry.published_code_of`) is drawn as the algorithm it stands for,
dashed. Every other label of a figure (a plugin's
algorithm, a variant run with options, an unregistered name, or a fixed style that clashes with
an earlier one) gets a colour of `COLOURS` and a marker of `MARKERS` that no other label of the
figure has, preferably ones no fixed style has either, never black or grey (the reference
curves', bands' and patches'). The registry holds facts about algorithms, not their styles: a
plugin that wants its own style gives it here (`register_style`, any colour but a grey, black
included), and it is drawn so unless it clashes with a curve drawn before it (the same colour,
however written, or marker), which is then said in one warning.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence
from typing import NamedTuple

import matplotlib.colors
import matplotlib.markers

from experiments.config.specs import AlgorithmSpec, registry

__all__ = [
    "COLOURS",
    "MARKERS",
    "PAPER_STYLES",
    "REGISTERED_STYLES",
    "Style",
    "fixed_style",
    "register_style",
    "styles",
]


class Style(NamedTuple):
    """How an algorithm's curve is drawn (matplotlib colour, marker and line style)."""

    color: str
    marker: str
    linestyle: str = "-"


# No two share a colour or a marker; black is TTUCB's alone (grey is left to the references).
PAPER_STYLES = {
    "ttucb": Style("black", "s"),
    "ctb_tt": Style("tab:blue", "p"),
    "gauss_ldp_tt": Style("tab:cyan", "v"),
    "adap_tt": Style("tab:orange", "o"),
    "adap_tt_star": Style("tab:green", "D"),
    "dp_se": Style("tab:red", "^"),
    "ttucb_dpa": Style("tab:purple", "P"),
    "ttucb_dpa_global": Style("tab:pink", "X"),
    "adap_tt_global": Style("tab:brown", "h"),
    "adap_tt_star_global": Style("tab:olive", "d"),
    "adap_tt_star_ratio": Style("teal", ">"),
    "dp_tt": Style("crimson", "*"),
    "eb_tci": Style("goldenrod", "<", "--"),
}
"""The style of each of jaxbai's own algorithms (the registry's built-in names)."""

COLOURS = (
    "tab:blue", "tab:orange", "tab:green", "tab:red", "tab:purple", "tab:brown", "tab:pink",
    "tab:olive", "tab:cyan", "navy", "magenta", "teal", "goldenrod", "lime", "sienna",
    "indigo", "deeppink", "chocolate", "steelblue", "olivedrab",
)  # fmt: skip
"""Colours a label without a fixed style may take (never an achromatic one)."""

MARKERS = ("o", "s", "D", "^", "v", "P", "X", "*", "<", ">", "h", "p", "d", "H", "8")
"""Markers a label without a fixed style may take."""


REGISTERED_STYLES: dict[str, Style] = {}
"""The styles plugins gave their algorithms (`register_style`), by registry name."""


def register_style(name: str, color: str, marker: str, linestyle: str = "-") -> Style:
    """Draw the algorithm registered as ``name`` (a plugin's, run with no options) in this
    style, unless it clashes with a curve drawn before it (`styles` then warns and gives it
    another). Call it next to `jaxbai.register`, in the plugin's module.

    Raises:
        ValueError: a colour, marker or line style matplotlib does not know, or a grey (the
            theory curves' colour), an invisible marker, or ``name`` has a fixed style (one of
            jaxbai's algorithms or their published-code variants, `fixed_style`).

    Examples:
        >>> register_style("my_lab_tt", "black", "X", "--")
        Style(color='black', marker='X', linestyle='--')
        >>> del REGISTERED_STYLES["my_lab_tt"]
    """
    if fixed_style(name) is not None:
        raise ValueError(f"{name!r} is one of jaxbai's algorithms, whose styles are fixed")
    if not matplotlib.colors.is_color_like(color):
        raise ValueError(f"{color!r} is not a matplotlib colour")
    invisible = ("", " ", "None", "none")
    if marker not in matplotlib.markers.MarkerStyle.markers or marker in invisible:
        raise ValueError(f"{marker!r} is not a visible matplotlib marker")
    if linestyle not in ("-", "--", "-.", ":"):
        raise ValueError(f"line style {linestyle!r} is not one of '-', '--', '-.', ':'")
    r, g, b = matplotlib.colors.to_rgb(color)
    if max(r, g, b) - min(r, g, b) < 0.05 and max(r, g, b) > 0.05:
        raise ValueError(f"{color!r} is a grey: greys are the reference curves' (theory)")
    REGISTERED_STYLES[name] = Style(color, marker, linestyle)
    return REGISTERED_STYLES[name]


def fixed_style(name: str) -> Style | None:
    """The style of a registered name: `PAPER_STYLES`' for jaxbai's own, that of the algorithm
    a published-code variant stands for, dashed; None for any other (a plugin's, a user's that
    replaced one of jaxbai's, an unregistered label), whose style `register_style` may give.

    Examples:
        >>> fixed_style("adap_tt_published")
        Style(color='tab:orange', marker='o', linestyle='--')
    """
    entries = registry()
    if name not in entries:
        return None
    entry = entries[name]
    if entry.plugin_source is None and name in PAPER_STYLES:  # jaxbai's own
        return PAPER_STYLES[name]
    paper = entry.published_code_of
    style = PAPER_STYLES.get(paper) if paper is not None else None
    return style._replace(linestyle="--") if style is not None else None


def _first(candidates: Sequence[str], taken: set[str], reserved: set[str], k: int) -> str:
    """The first candidate neither taken nor reserved, else the first not taken, else the
    ``k``-th (cyclically)."""
    free = [c for c in candidates if c not in taken]
    return next(
        (c for c in free if c not in reserved), free[0] if free else candidates[k % len(candidates)]
    )


def _free_style(taken: Sequence[Style]) -> Style:
    """A colour of `COLOURS` and a marker of `MARKERS` that none of ``taken`` has, preferably
    ones no fixed style has either (so it is not mistaken for one of jaxbai's algorithms)."""
    reserved = PAPER_STYLES.values()
    colour = _first(COLOURS, {s.color for s in taken}, {s.color for s in reserved}, len(taken))
    marker = _first(MARKERS, {s.marker for s in taken}, {s.marker for s in reserved}, len(taken))
    return Style(colour, marker)


def _related(a: str, b: str) -> bool:
    """Is one of two registry names the published-code variant of the other (drawn in its
    colour and marker, dashed)?"""
    entries = registry()
    paper = {n: entries[n].published_code_of if n in entries else None for n in (a, b)}
    return a in (paper[b], b) or b == paper[a]


def _clash(label: str, style: Style, drawn: Mapping[str, Style]) -> str | None:
    """Why ``label`` cannot have ``style`` next to the styles already ``drawn`` (the curve
    whose colour or marker it shares, unless one is the other's published-code variant)."""
    for other, s in drawn.items():
        colour = matplotlib.colors.to_hex(s.color) == matplotlib.colors.to_hex(style.color)
        same = {"colour": colour, "marker": s.marker == style.marker}
        shared = [what for what, equal in same.items() if equal]
        if shared and not _related(label, other):
            return f"{' and '.join(shared)} of {other!r}"
    return None


def styles(labels: Sequence[str], specs: Mapping[str, AlgorithmSpec]) -> dict[str, Style]:
    """The style of every algorithm label of a figure: a name with a `fixed_style`, run with no
    options, has it (in registry order) unless an earlier one has its colour or marker (a
    published-code variant shares its paper algorithm's); then a name with a registered style
    (`register_style`), likewise, with a warning naming it and the curve it clashes with when it
    cannot have it; any other label gets a colour and a marker that no other label has
    (`COLOURS`, `MARKERS`), in the order of ``labels``.

    Examples:
        >>> from experiments.config.specs import AlgorithmSpec
        >>> b03 = AlgorithmSpec("b03", "adap_tt", (("beta", 0.3),))
        >>> s = styles(["adap_tt", "b03"], {"b03": b03})
        >>> s["adap_tt"].color, s["b03"].color != "tab:orange", s["b03"].marker != "o"
        ('tab:orange', True, True)
    """
    out: dict[str, Style] = {}
    named = [name for name in registry() if name in labels]
    for label in named:
        spec, style = specs.get(label), fixed_style(label)
        if style is not None and not (spec is not None and spec.options):
            if _clash(label, style, out) is None:
                out[label] = style
    for label in named:
        spec, style = specs.get(label), REGISTERED_STYLES.get(label)
        if label in out or style is None or (spec is not None and spec.options):
            continue
        clash = _clash(label, style, out)
        if clash is None:
            out[label] = style
        else:
            warnings.warn(
                f"{label!r} is not drawn in its registered style {tuple(style)}: its {clash}, "
                "drawn before it; it gets a colour and a marker of its own",
                stacklevel=2,
            )
    for label in labels:
        if label not in out:
            out[label] = _free_style([*out.values()])
    return {label: out[label] for label in labels}
