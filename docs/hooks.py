"""MkDocs hooks of the documentation site (mkdocs.yml `hooks:`).

* Math notation: the docstrings and pages write math in plain text, `T*_{KL,β}`, `Δ_min`,
  `N^B_B`, `2^-49`; a Markdown extension renders the sub- and superscripts as `<sub>`/`<sup>`
  and keeps the `*` of `T*`, `ω*`, `a*` a star (Markdown would pair two of them into italics).
* Semantics sections: every `**§N Title.**` of docs/semantics.md gets the anchor `sN`, and every
  `§N` (or `docs/semantics.md §N`) of every rendered page, the API reference included, becomes a
  link to it; a link to the semantics page whose text names a `§N` gets that anchor.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as etree
from typing import Any

from markdown import Extension, Markdown
from markdown.inlinepatterns import InlineProcessor
from markdown.util import AtomicString
from mkdocs.plugins import event_priority
from mkdocs.utils import get_relative_url

SEMANTICS = "semantics.md"
"""The page whose `**§N Title.**` paragraphs are the numbered sections."""

LETTER = r"[A-Za-zÀ-ÖØ-öø-ſΑ-Ωα-ωϑϕϵℓ𝒞][\u0300-\u036f]*"
"""One letter of a math name, with its combining accents (c̃, μ̂)."""

GROUP = r"\{(?:[^{}]|\{[^{}]*\})*\}"
"""A braced script, one level of nested braces allowed (`_{a^{b}}`)."""

SUPERSCRIPTS = "⁰¹²³⁴⁵⁶⁷⁸⁹⁺⁻"
"""Unicode superscripts: after a script they square the whole name (`Δ_a²` is (Δ_a)²), except
after capitals (`T*_TV²` is the TV² time)."""

RUN = rf"[-−]?(?:[^\W_{SUPERSCRIPTS}]|[±′\u0300-\u036f])+(?:(?<=[A-Z])[{SUPERSCRIPTS}])?\*?"
"""An unbraced script: letters and digits (`_KL`, `^-49`, `_a*`), never an underscore."""

SCRIPT = rf"(?:[_^](?:{GROUP}|{RUN}|[+−-](?!\w)))"
"""One sub- (`_`) or superscript (`^`): a braced group, a run, or a sign (`(x − μ)_+`)."""

BASE = (
    rf"(?<![^\W\d]|[.\\])(?<![A-Za-z_]/)(?:{LETTER})+[{SUPERSCRIPTS}]*[*±]?"
    r"|(?<!\w)\d+(?=\^)|\)"
)
"""What carries the scripts: a math name (not inside a word, a dotted name or a file path; after a
coefficient such as the 2 of `2Δ_a` is fine) with its Unicode scripts and star, a number before
`^`, or a closing parenthesis (`(1 + η)^{k_a}`, `(x − μ)_+`)."""

MATH = re.compile(rf"({BASE}){SCRIPT}+(?![^\W{SUPERSCRIPTS}]|\{{)")
"""A math name with its scripts: `T*_KL`, `μ_{a*}`, `d±_ε`, `N^B_B`, `c̃^{G,ε}`, `2^-49`."""

IDENTIFIER = re.compile(r"[A-Za-z][A-Za-z0-9]*(?:_[A-Za-z0-9]+)+")
"""snake_case or UPPER_CASE: a Python name written without backticks, left alone if it looks
like one (see `is_identifier`)."""

STAR = r"(?<![\w*\\])(?:" + LETTER + r"|TT)\*(?![\w*_^])"
"""The star of `T*`, `ω*`, `a*`, `AdaP-TT*` (a single letter or TT, then `*`)."""

SECTION = re.compile(r"(?:docs/semantics\.md\s+)?§(\d+)(?:[–-]\d+)?")
"""A reference to a semantics section: `§25`, `§18–20`, `docs/semantics.md §31`."""

HEADING = re.compile(r"^\*\*§(\d+)\b(.*?)\*\*", flags=re.M)
"""A numbered section of the semantics page: `**§N Title.**` at the start of a paragraph."""


def is_identifier(token: str) -> bool:
    """Whether `token` reads as a Python name (`t_star`, `max_samples`, `PAPER_INSTANCES`) rather
    than math (`max_a`, `T_k`, `log_2`): ASCII only, and some part after the first `_` is a word
    of three or more characters, or the name has several parts of two or more."""
    if not IDENTIFIER.fullmatch(token):
        return False
    parts = token.split("_")
    return any(len(p) >= 3 for p in parts[1:]) or sum(len(p) >= 2 for p in parts) >= 2


def split_scripts(text: str) -> list[tuple[str, str]]:
    """`"_{KL,β}^2"` → `[("_", "KL,β"), ("^", "2")]`: each script of `text` without its braces."""
    scripts = []
    for m in re.finditer(SCRIPT, text):
        body = m.group(0)[1:]
        scripts.append((m.group(0)[0], body[1:-1] if body.startswith("{") else body))
    return scripts


def script_element(kind: str, body: str) -> etree.Element:
    """A `<sub>` (`_`) or `<sup>` (`^`) holding `body`, its own scripts rendered too."""
    element = etree.Element("sub" if kind == "_" else "sup")
    render_into(element, body)
    return element


def render_into(parent: etree.Element, text: str) -> None:
    """Append `text` to `parent`, its math names' scripts as nested `<sub>`/`<sup>`."""
    last: etree.Element | None = None
    position = 0
    for m in MATH.finditer(text):
        append_text(parent, last, text[position : m.start()] + m.group(1))
        for kind, body in split_scripts(m.group(0)[len(m.group(1)) :]):
            last = script_element(kind, body)
            parent.append(last)
        position = m.end()
    append_text(parent, last, text[position:])


def append_text(parent: etree.Element, last: etree.Element | None, text: str) -> None:
    """Append plain `text` after `last` (or into `parent` when it has no child yet)."""
    if last is None:
        parent.text = AtomicString((parent.text or "") + text)
    else:
        last.tail = AtomicString((last.tail or "") + text)


class MathProcessor(InlineProcessor):
    """`T*_{KL,β}` → `T*<sub>KL,β</sub>`; Python names such as `t_star` are left alone."""

    def handleMatch(self, m: re.Match, data: str) -> tuple[Any, int, int]:
        if is_identifier(m.group(0)):
            return None, None, None
        span = etree.Element("span", {"class": "math-notation"})
        render_into(span, m.group(0))
        return span, m.start(0), m.end(0)


class StarProcessor(InlineProcessor):
    """The star of `T*` or `ω*` as plain text, never the start or end of italics."""

    def handleMatch(self, m: re.Match, data: str) -> tuple[Any, int, int]:
        return AtomicString(m.group(0)), m.start(0), m.end(0)


class MathNotation(Extension):
    """Plain-text math rendered: sub- and superscripts, and stars that stay stars."""

    def extendMarkdown(self, md: Markdown) -> None:
        # after code spans, escapes, links and raw HTML (priority ≥ 90), before italics (≤ 70)
        md.inlinePatterns.register(MathProcessor(MATH.pattern, md), "math_notation", 76)
        md.inlinePatterns.register(StarProcessor(STAR, md), "math_star", 75)


@event_priority(100)  # before mkdocstrings copies the extensions for the docstrings
def on_config(config: Any) -> Any:
    """Render the math notation on every page and in every docstring."""
    config.markdown_extensions.append(MathNotation())
    return config


def on_page_markdown(markdown: str, page: Any, **kwargs: Any) -> str:
    """Give every `**§N Title.**` of the semantics page the anchor `sN`."""
    if page.file.src_uri != SEMANTICS:
        return markdown
    return HEADING.sub(lambda m: f"{m.group(0)}{{: #s{m.group(1)} }}", markdown)


def link_sections(text: str, href: str) -> str:
    """Every `§N` of the HTML text `text` as a link to `href#sN`."""
    return SECTION.sub(lambda m: f'<a href="{href}#s{m.group(1)}">{m.group(0)}</a>', text)


SKIPPED = ("a", "script", "style", "title", "textarea")
"""Elements whose text is not linked (a link inside a link is invalid HTML)."""

TAG = re.compile(r"(<!--.*?-->|<[^>]*>)", flags=re.S)


def link_semantics(html: str, href: str) -> str:
    """Link every `§N` of `html` outside links, scripts and styles to the semantics page at
    `href`; a link to that page (no anchor yet) whose text names a `§N` gets `#sN`."""
    pieces = TAG.split(html)
    skipped: list[str] = []
    opened: int | None = None
    for i, piece in enumerate(pieces):
        name = re.match(r"<(/?)([a-zA-Z][\w-]*)", piece)
        if name and name.group(2).lower() in SKIPPED:
            if name.group(1):
                if skipped and skipped[-1] == name.group(2).lower():
                    skipped.pop()
                if name.group(2).lower() == "a" and opened is not None:
                    pieces[opened] = anchor_link(pieces[opened], "".join(pieces[opened:i]), href)
                    opened = None
            elif not piece.endswith("/>"):
                skipped.append(name.group(2).lower())
                opened = i if name.group(2).lower() == "a" else opened
        elif i % 2 == 0 and not skipped:
            pieces[i] = link_sections(piece, href)
    return "".join(pieces)


def anchor_link(tag: str, inner: str, href: str) -> str:
    """The opening `<a …>` `tag`, pointed at `href#sN` if it links the semantics page without an
    anchor and its text `inner` names `§N`."""
    section = SECTION.search(re.sub(r"<[^>]*>", "", inner))
    target = re.search(r'href="([^"#]*)"', tag)
    if section is None or target is None or target.group(1) != href:
        return tag
    return tag.replace(target.group(0), f'href="{href}#s{section.group(1)}"', 1)


def on_page_content(html: str, page: Any, config: Any, files: Any) -> str:
    """Link the semantics sections named on `page`."""
    semantics = files.get_file_from_path(SEMANTICS)
    href = "" if page.file.src_uri == SEMANTICS else get_relative_url(semantics.url, page.url)
    return link_semantics(html, href)
