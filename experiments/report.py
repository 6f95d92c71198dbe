"""Claims report: every claim of Section 5 against the measured stopping times, as Markdown.

``python -m experiments.report RESULTS.csv [--out report.md]`` prints the report and writes it
as Markdown. The claims, their evidence and verdicts (holds / fails / inconclusive, with 95%
intervals) are `experiments.claims`; this module renders them and holds the command line.
The names of `experiments.claims` that a report needs (`Claim`, `Context`, `evaluate`, …) are
re-exported here.

Example:
    >>> claim = Claim("A1", "Every cell: error ≤ δ", "mu1: error rate 0 (ε=1; 1 holds)", HOLDS)
    >>> print(claims_table([claim]))
    | # | claim | measured evidence | verdict |
    | --- | --- | --- | --- |
    | A1 | Every cell: error ≤ δ | mu1: error rate 0 (ε=1; 1 holds) | **holds** |
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence

from experiments import results
from experiments.claims import (
    FAILS,
    HOLDS,
    INCONCLUSIVE,
    Cell,
    Claim,
    Context,
    combine,
    context_from_runs,
    evaluate,
)

__all__ = [
    "FAILS",
    "HOLDS",
    "INCONCLUSIVE",
    "Cell",
    "Claim",
    "Context",
    "claims_table",
    "combine",
    "context_from_runs",
    "evaluate",
    "main",
    "render",
    "report_from_csv",
]


def _md_escape(text: str) -> str:
    return text.replace("|", "\\|").replace("*", "\\*")


def claims_table(claims: Sequence[Claim]) -> str:
    """The claims as a Markdown table."""
    lines = ["| # | claim | measured evidence | verdict |", "| --- | --- | --- | --- |"]
    for c in claims:
        lines.append(
            f"| {c.key} | {_md_escape(c.statement)} | {_md_escape(c.evidence)} | **{c.verdict}** |"
        )
    return "\n".join(lines)


def render(claims: Sequence[Claim], ctx: Context, source: str) -> str:
    """The full Markdown report: conventions, claims table, regime switches, per-cell details."""
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
        "Cells with censored runs are inconclusive in comparisons.",
        "",
        claims_table(claims),
        "",
        "## Regime switches ε_s",
        "",
        "| instance | local | global |",
        "| --- | --- | --- |",
    ]
    for inst in dict.fromkeys(s["instance"].tolist()):
        header.append(
            f"| {inst} | {ctx.switch[(inst, 'local')]:.3g} | {ctx.switch[(inst, 'global')]:.3g} |"
        )
    header += ["", "## Per-cell evidence", ""]
    for c in claims:
        header.append(f"### {c.key}: {c.statement} — {c.verdict}")
        header.append("")
        header += [f"- {d}" for d in c.details] or ["- (no cells)"]
        header.append("")
    return "\n".join(header)


def report_from_csv(path: str) -> tuple[str, list[Claim]]:
    """(Markdown report, claims) of a run CSV."""
    ctx = context_from_runs(results.read_csv(path))
    claims = evaluate(ctx)
    return render(claims, ctx, os.path.basename(path)), claims


def main(argv: Sequence[str] | None = None) -> int:
    """CLI: ``python -m experiments.report RESULTS.csv [--out FILE]``."""
    parser = argparse.ArgumentParser(prog="python -m experiments.report", description=__doc__)
    parser.add_argument("csv", help="per-run CSV written by experiments.sweep")
    parser.add_argument("--out", help="Markdown output (default: report.md next to the CSV)")
    args = parser.parse_args(argv)
    if not os.path.exists(args.csv):
        print(f"report: error: no such file {args.csv}", file=sys.stderr)
        return 2
    text, _ = report_from_csv(args.csv)
    out = args.out or os.path.join(os.path.dirname(os.path.abspath(args.csv)), "report.md")
    with open(out, "w") as f:
        f.write(text + "\n")
    print(text)
    print(f"\nreport written to {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
