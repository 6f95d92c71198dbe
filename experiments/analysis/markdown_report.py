"""Claims report: every claim of Section 5 against the measured stopping times, as Markdown.

``python -m experiments.report RESULTS.csv [--out report.md]`` prints the report and writes it
as Markdown. The claims, their evidence and verdicts (holds / fails / inconclusive, with 95%
intervals) are `experiments.analysis.claims` and `experiments.analysis.verdicts`; this module
renders them and holds the command line. The names of those modules that a report needs
(`Claim`, `Context`, `evaluate`, …) are re-exported here.

Examples:
    >>> claim = Claim("A1", "Every cell: error ≤ δ", "mu1: error rate 0 (ε=1; 1 holds)", HOLDS)
    >>> print(claims_table([claim]))
    | # | claim | measured evidence | verdict |
    | --- | --- | --- | --- |
    | A1 | Every cell: error ≤ δ | mu1: error rate 0 (ε=1; 1 holds) | **holds** |
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from experiments import config
from experiments.analysis import overlay, results, rounds, stats
from experiments.analysis.claims import claims_context, evaluate
from experiments.analysis.verdicts import (
    EXPLANATIONS,
    FAILS,
    HOLDS,
    INCONCLUSIVE,
    NOT_APPLICABLE,
    Cell,
    Claim,
    Context,
    combine,
)

if TYPE_CHECKING:
    from jaxbai.base import Algorithm

__all__ = [
    "FAILS",
    "HOLDS",
    "INCONCLUSIVE",
    "NOT_APPLICABLE",
    "Cell",
    "Claim",
    "Context",
    "allocation_table",
    "claims_context",
    "claims_table",
    "combine",
    "evaluate",
    "explanation_lines",
    "not_applicable",
    "render",
    "report_from_summary",
    "report_from_table",
    "rounds_table",
    "theory_lines",
]


def _md_escape(text: str) -> str:
    return text.replace("|", "\\|").replace("*", "\\*")


def _anchor(key: str) -> str:
    return f"explained-{key.replace('_', '-')}"


def _verdict(claim: Claim) -> str:
    """The verdict cell: a failing claim links to what explains it (its `Claim.explanation`,
    printed in the report by `explanation_lines`, else its per-cell evidence below the table)."""
    if claim.verdict != FAILS:
        return f"**{claim.verdict}**"
    if claim.explanation:
        return f"**fails** ([explained](#{_anchor(claim.explanation)}))"
    return f"**fails** ([cells](#evidence-{claim.key.lower()}))"


def claims_table(claims: Sequence[Claim]) -> str:
    """The applicable claims as a Markdown table (`not_applicable` lists the others)."""
    lines = ["| # | claim | measured evidence | verdict |", "| --- | --- | --- | --- |"]
    for c in claims:
        if c.verdict != NOT_APPLICABLE:
            statement, evidence = _md_escape(c.statement), _md_escape(c.evidence)
            lines.append(f"| {c.key} | {statement} | {evidence} | {_verdict(c)} |")
    return "\n".join(lines)


def explanation_lines(claims: Sequence[Claim]) -> list[str]:
    """A section per explanation that a failing claim links to (`EXPLANATIONS`), in full: the
    report stays readable wherever its folder is copied (none if no claim needs one)."""
    keys = dict.fromkeys(c.explanation for c in claims if c.verdict == FAILS and c.explanation)
    lines = []
    for key in keys:
        title, text = EXPLANATIONS[key]
        lines += ["", f'<a id="{_anchor(key)}"></a>', "", f"## {title}", "", text]
    return lines


def not_applicable(claims: Sequence[Claim]) -> list[str]:
    """One line naming the claims outside the sweep's regime, by reason (none if every claim
    applies)."""
    reasons: dict[str, list[str]] = {}
    for c in claims:
        if c.verdict == NOT_APPLICABLE:
            reasons.setdefault(c.evidence, []).append(c.key)
    if not reasons:
        return []
    parts = [f"{', '.join(keys)} ({_md_escape(why)})" for why, keys in reasons.items()]
    return ["", f"Not applicable to this sweep: {'; '.join(parts)}."]


def _number(x: float) -> str:
    return f"{x:.3g}" if math.isfinite(x) else "n/a"


def theory_lines(ctx: Context) -> list[str]:
    """What the theory covers for each instance family of the sweep, and which claims apply."""
    by_family: dict[str, list[str]] = {}
    for name, family in ctx.families.items():
        by_family.setdefault(family, []).append(name)
    lines = [
        f"- {family} ({', '.join(names)}): {overlay.theory_note(family)}."
        for family, names in by_family.items()
    ]
    others = [n for f, names in by_family.items() if f != "bernoulli" for n in names]
    if others:
        lines.append(
            "- Claims L1–G6 place cells by the regime switch, which exists for Bernoulli "
            f"instances only: they are evaluated without {', '.join(others)}; A2 leaves out the "
            "cells without a lower bound."
        )
    return lines


def rounds_table(ctx: Context) -> list[str]:
    """Markdown rows: every cell with rounds of adaptivity against its Appendix H bound."""
    s = ctx.summary
    cells = rounds.rounds_ratios(s, ctx.episodes)
    if not cells:
        return ["No algorithm of this sweep reports rounds of adaptivity (all fully sequential)."]
    lines = [
        "E[C] with its 95% interval; both bounds at the measured mean τ; the bound that applies "
        "is K log₂ E[τ] for per-arm episodes and log₂ E[τ] for one global episode (DP-SE counts "
        "epochs, for which Appendix H states no bound).",
        "",
        "| algorithm | instance | ε | δ | K | E[C] | max C | E[τ] | K log₂ E[τ] | log₂ E[τ] "
        "| bound | E[C] / bound |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for cell in cells:
        i = cell.row
        k, tau = int(s["K"][i]), float(s["mean"][i])
        applied = rounds.BOUND_TEXT.get(cell.mode, "—")
        ratio = str(cell.ratio) if cell.mode else "—"
        flag = " (censored runs)" if s["censored"][i] else ""
        lines.append(
            f"| {_md_escape(s['algorithm'][i])} | {s['instance'][i]} | {s['epsilon'][i]:g} "
            f"| {s['delta'][i]:g} | {k} | {cell.rounds} | {s['rounds_max'][i]:.0f} "
            f"| {tau:.4g}{flag}"
            f" | {rounds.rounds_bound('per_arm', k, tau):.3g} "
            f"| {rounds.rounds_bound('global', k, tau):.3g} | {_md_escape(applied)} | {ratio} |"
        )
    return lines


def _shares(text: str) -> str:
    values = stats.parse_floats(text)
    return "—" if values is None else " ".join(f"{v:.3f}" for v in values)


def allocation_table(summary: results.Table) -> list[str]:
    """Markdown rows: every cell's mean empirical proportions N_a/τ against the allocation ω*
    its algorithm targets (`experiments.analysis.stats.target_allocation`; — where none is
    known)."""
    has = [i for i, p in enumerate(summary["proportions"].tolist()) if str(p).strip()]
    if not has:
        return ["The runs hold no final counts (a runs.csv written before they were recorded)."]
    lines = [
        "Mean N_a/τ over the cell's runs (censored runs included, at the budget's counts) in "
        "arm order; ω*: the β-optimal allocation of T*_{KL,β} for TTUCB, CTB-TT and AdaP-TT, "
        "that of the modified instance ν_{G,ε} for AdaP-TT*; dev: the mean over runs of "
        "max_a |N_a/τ − ω*_a|; dev of mean: max_a |mean N_a/τ − ω*_a|.",
        "",
        "| algorithm | instance | ε | δ | censored | mean N_a/τ | ω* | dev | dev of mean |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for i in has:
        dev, dev_mean = summary["omega_deviation"][i], summary["omega_deviation_of_mean"][i]
        lines.append(
            f"| {_md_escape(summary['algorithm'][i])} | {summary['instance'][i]} "
            f"| {summary['epsilon'][i]:g} | {summary['delta'][i]:g} | {summary['censored'][i]} "
            f"| {_shares(summary['proportions'][i])} | {_shares(summary['omega_star'][i])} "
            f"| {_number(dev) if math.isfinite(dev) else '—'} "
            f"| {_number(dev_mean) if math.isfinite(dev_mean) else '—'} |"
        )
    return lines


def privacy_table(summary: results.Table) -> list[str]:
    """One row per algorithm: its privacy claim (``privacy_measure``)."""
    pairs = dict(
        zip(summary["algorithm"].tolist(), summary["privacy_measure"].tolist(), strict=True)
    )
    return ["| algorithm | privacy at ε |", "| --- | --- |"] + [
        f"| {_md_escape(a)} | {claim} |" for a, claim in pairs.items()
    ]


def render(claims: Sequence[Claim], ctx: Context, source: str) -> str:
    """The full Markdown report: conventions, claims table, theory per instance family, regime
    switches, rounds of adaptivity, allocations (against the ω* of the context's summary),
    per-cell details, and in full what explains a failing claim (`explanation_lines`): its
    links stay inside the report, which is read wherever its folder is copied."""
    s = ctx.summary
    runs = sorted(set(s["runs"].tolist()))
    total_censored = int(s["censored"].sum())
    header = [
        "# Claims of Section 5 against the measured stopping times",
        "",
        f"Source: `{source}` — {len(s['mean'])} cells, {int(s['runs'].sum())} runs "
        f"({'/'.join(map(str, runs))} per cell), {total_censored} censored runs.",
        "",
        "Verdicts use 95% intervals: means and ratios of means are normal on the log scale "
        "(delta method), error rates use the Wilson score interval, slopes are weighted "
        "least-squares fits of log mean τ on log ε (standard error inflated by √(χ²/dof) when "
        "the points scatter more than their errors). Low privacy: ε ≥ 10 ε_s; high privacy: "
        "ε < ε_s; slopes at high privacy: ε ≤ ε_s/2, with ε_s = `jaxbai.theory.regime_switch`. "
        "Cells with censored runs are inconclusive in comparisons. A failing claim links to the "
        "section that explains it or to its cells below.",
        "",
        claims_table(claims),
        *not_applicable(claims),
        *explanation_lines(claims),
        "",
        "## Privacy claims",
        "",
        "What each algorithm's ε guarantees (`jaxbai.base.PrivacyMeasure`). Claims put "
        "algorithms on one ε axis only where their measures agree.",
        "",
        *privacy_table(s),
        "",
        "## Theory by instance family",
        "",
        *theory_lines(ctx),
        "",
        "## Regime switches ε_s",
        "",
        "| instance | local | global |",
        "| --- | --- | --- |",
    ]
    for inst in dict.fromkeys(s["instance"].tolist()):
        local, glob = ctx.switch[(inst, "local")], ctx.switch[(inst, "global")]
        header.append(f"| {inst} | {_number(local)} | {_number(glob)} |")
    header += ["", "## Rounds of adaptivity (Appendix H)", "", *rounds_table(ctx)]
    allocated = allocation_table(s)
    header += ["", "## Allocations: empirical proportions against ω*", "", *allocated]
    header += ["", "## Per-cell evidence", ""]
    for c in (c for c in claims if c.verdict != NOT_APPLICABLE):
        header.append(f'<a id="evidence-{c.key.lower()}"></a>')
        header.append("")
        header.append(f"### {c.key}: {c.statement} — {c.verdict}")
        header.append("")
        header += [f"- {d}" for d in c.details] or ["- (no cells)"]
        header.append("")
    return "\n".join(header)


def report_from_table(
    table: results.Table,
    sweep_config: config.SweepConfig | None,
    name: str = "runs.csv",
) -> tuple[str, list[Claim]]:
    """(Markdown report, claims) of a run table (`experiments.analysis.results.RUN_COLUMNS`)
    named ``name`` in the report (`render`).

    Instance families and algorithm options come from ``sweep_config``; without it, every
    instance is taken as Bernoulli and every algorithm as its registry entry (and said so).
    """
    algorithms = stats.algorithms_of(sweep_config)
    summary = stats.summarize(table, stats.allocation_targets(table, algorithms))
    return report_from_summary(summary, sweep_config, algorithms, name)


def report_from_summary(
    summary: results.Table,
    sweep_config: config.SweepConfig | None,
    algorithms: Mapping[str, Algorithm],
    name: str = "runs.csv",
) -> tuple[str, list[Claim]]:
    """`report_from_table` of a summary with its allocation targets
    (`experiments.analysis.stats.summarize`), whose algorithms ran as ``algorithms`` (label →
    algorithm, `experiments.analysis.stats.algorithms_of`)."""
    ctx = claims_context(summary, sweep_config, algorithms)
    claims = evaluate(ctx)
    text = render(claims, ctx, name)
    if sweep_config is None:
        text += (
            "\nNo sweep.json with a configuration next to the CSV: every instance was taken as "
            "Bernoulli and every algorithm as its registry entry.\n"
        )
    return text, claims
