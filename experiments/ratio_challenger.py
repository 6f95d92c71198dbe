"""Command line of the threshold-aware challenger measurements.

The measurements are `experiments.studies.ratio_challenger`.

Usage:
    python -m experiments.ratio_challenger --out DIR [--part all|table|correctness|small-delta]
        [--runs 200] [--correctness-runs 1000] [--small-delta-runs 100] [--seed 3]
"""

from __future__ import annotations

import argparse
import os
import sys

from experiments.studies import ratio_challenger as study
from experiments.studies.cells import write_part

__all__ = ["main"]


def main(argv: list[str] | None = None) -> int:
    """Run the chosen parts; write ``DIR/<part>.json`` and print each as a Markdown table."""
    parser = argparse.ArgumentParser(prog="python -m experiments.ratio_challenger")
    parser.add_argument("--out", required=True)
    parser.add_argument(
        "--part", choices=("all", "table", "correctness", "small-delta"), default="all"
    )
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--correctness-runs", type=int, default=1000)
    parser.add_argument("--small-delta-runs", type=int, default=100)
    parser.add_argument("--seed", type=int, default=3)
    args = parser.parse_args(argv)
    os.makedirs(args.out, exist_ok=True)
    parts = ("table", "correctness", "small-delta") if args.part == "all" else (args.part,)
    for part in parts:
        print(f"{part}:", file=sys.stderr)
        if part == "table":
            rows = study.table(args.runs, args.seed)
            study.figure(rows, os.path.join(args.out, "threshold_aware_challenger.png"))
            text = study.markdown_table(rows)
        elif part == "correctness":
            rows = study.correctness(args.correctness_runs, args.seed)
            text = study.markdown_correctness(rows)
        else:
            rows = study.small_delta(args.small_delta_runs, args.seed)
            text = study.markdown_table(rows)
        write_part(args.out, part, rows, text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
