"""The figures' command line, ``python -m experiments.plot RESULTS.csv [--out DIR]``.

Redraws every figure of a sweep from its per-run CSV (and the ``sweep.json`` next to it, for
the instances, algorithm options and plot options); the drawing is `experiments.analysis.drawing`.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence

from experiments import config
from experiments.analysis import drawing, results, stats

__all__ = ["DESCRIPTION", "main"]

DESCRIPTION = """\
Redraw every figure of a sweep from its per-run CSV (runs.csv), with the instances, algorithm
options and plot options of the sweep.json next to it: mean stopping time against epsilon per
instance with the lower bounds and regime switches, and the empirical allocations against the
optimal ones. Writes PNG and PDF files and prints their paths."""
"""The command's description in ``--help`` (plain text)."""


def main(argv: Sequence[str] | None = None) -> int:
    """Redraw the figures of ``RESULTS.csv`` (``argv``: the command line without the program
    name; None: ``sys.argv[1:]``); returns the exit code."""
    out_help = "figure directory (default: figures/ next to the CSV)"
    args = results.parse_csv_command("experiments.plot", DESCRIPTION, out_help, argv)
    table, sweep_config = args.runs, config.load_sidecar(args.csv)
    targets = stats.allocation_targets(table, stats.algorithms_of(sweep_config))
    summary = stats.summarize(table, targets)
    out = args.out or os.path.join(os.path.dirname(os.path.abspath(args.csv)), "figures")
    try:
        written = drawing.draw_all(summary, out, sweep_config)
    except (ValueError, OSError) as err:  # a linked or unwritable figure directory
        print(f"python -m experiments.plot: error: {err}", file=sys.stderr)
        return 2
    for path in written:
        print(path)
    return 0
