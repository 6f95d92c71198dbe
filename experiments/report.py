"""Command line of the claims report: ``python -m experiments.report RESULTS.csv [--out FILE]``.

Writes the Markdown report of a sweep's per-run CSV (`experiments.analysis.report`: the claims
of Section 5, rounds of adaptivity, allocations against ω*) and prints it.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence

from experiments.analysis import report, results

__all__ = ["main"]


def main(argv: Sequence[str] | None = None) -> int:
    """CLI: ``python -m experiments.report RESULTS.csv [--out FILE]``; returns the exit code."""
    description = __doc__ + "\n" + (report.__doc__ or "")
    out_help = "Markdown output (default: report.md next to the CSV)"
    args = results.parse_csv_command("experiments.report", description, out_help, argv)
    text, _ = report.report_from_csv(args.csv)
    out = args.out or os.path.join(os.path.dirname(os.path.abspath(args.csv)), "report.md")
    with open(out, "w") as f:
        f.write(text + "\n")
    print(text)
    print(f"\nreport written to {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
