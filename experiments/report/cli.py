"""The claims report's command line, ``python -m experiments.report RESULTS.csv [--out FILE]``.

Writes the Markdown report of a sweep's per-run CSV (`experiments.analysis.markdown_report`: the
claims of Section 5, rounds of adaptivity, allocations against ω*) and prints it.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

from experiments import config
from experiments.analysis import markdown_report, results

__all__ = ["DESCRIPTION", "main"]

DESCRIPTION = """\
Write the Markdown report of a sweep's per-run CSV (runs.csv) and print it: every claim of
Section 5 with its verdict (holds, fails or inconclusive, from 95% intervals), the rounds of
adaptivity, and the empirical allocations against the optimal ones."""
"""The command's description in ``--help`` (plain text)."""


def main(argv: Sequence[str] | None = None) -> int:
    """Write and print the report of ``RESULTS.csv`` (``argv``: the command line without the
    program name; None: ``sys.argv[1:]``); returns the exit code."""
    out_help = "Markdown output (default: report.md next to the CSV)"
    args = results.parse_csv_command("experiments.report", DESCRIPTION, out_help, argv)
    out = args.out or os.path.join(os.path.dirname(os.path.abspath(args.csv)), "report.md")
    sweep_config = config.load_sidecar(args.csv)
    text, _ = markdown_report.report_from_table(args.runs, sweep_config, os.path.basename(args.csv))
    with results.replacing(out) as f:  # never through a link planted in a received folder
        f.write(text + "\n")
    print(text)
    print(f"\nreport written to {out}")
    return 0
