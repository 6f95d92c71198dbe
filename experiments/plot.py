"""Command line of the figures: ``python -m experiments.plot RESULTS.csv [--out DIR]``.

Redraws every figure of a sweep from its per-run CSV (and the ``sweep.json`` next to it, for
the instances, algorithm options and plot options); the drawing is `experiments.analysis.plot`.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence

from experiments import config
from experiments.analysis import plot, results, stats

__all__ = ["main"]


def main(argv: Sequence[str] | None = None) -> int:
    """CLI: ``python -m experiments.plot RESULTS.csv [--out DIR]``; returns the exit code."""
    description = __doc__ + "\n" + (plot.__doc__ or "")
    out_help = "figure directory (default: figures/ next to the CSV)"
    args = results.parse_csv_command("experiments.plot", description, out_help, argv)
    table, sweep_config = results.read_csv(args.csv), config.load_sidecar(args.csv)
    targets = stats.allocation_targets(table, stats.algorithms_of(sweep_config))
    summary = stats.summarize(table, targets)
    out = args.out or os.path.join(os.path.dirname(os.path.abspath(args.csv)), "figures")
    for path in plot.draw_all(summary, out, sweep_config):
        print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
