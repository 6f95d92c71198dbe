"""Command line of the AdaP-TT* ablation (`experiments.studies.adap_tt_star_ablation`).

Usage:
    python -m experiments.adap_tt_star_ablation --out DIR [--runs 20] [--seed 3]
        [--instances mu1 mu2 mu6] [--epsilons 0.01 0.1 0.4 1 10] [--variants NAME ...]
        [--diagnostic-runs 12]
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any

from experiments.studies import adap_tt_star_ablation as study
from experiments.studies.cells import measurement_parser

__all__ = ["main"]


def main(argv: list[str] | None = None) -> int:
    """Run the diagnostics and the ablation table; write JSON, print Markdown, draw the figure."""
    parser = measurement_parser(
        "experiments.adap_tt_star_ablation", 20, 3, study.INSTANCES, study.EPSILONS
    )
    variants = study.variants()
    parser.add_argument("--variants", nargs="*", default=list(variants), help="none: no table")
    parser.add_argument("--diagnostic-runs", type=int, default=12, help="0: no diagnostics")
    args = parser.parse_args(argv)
    unknown = sorted(set(args.variants) - set(variants))
    if unknown:
        parser.error(f"unknown variants {unknown}; known: {list(variants)}")
    os.makedirs(args.out, exist_ok=True)

    def write(name: str, rows: list[dict[str, Any]]) -> None:
        with open(os.path.join(args.out, name), "w") as f:
            json.dump(rows, f, indent=1)

    if args.diagnostic_runs:
        print("diagnostics:", file=sys.stderr)
        diag = study.diagnostics(args.diagnostic_runs, args.seed)
        write("diagnostics.json", diag)
        print(f"\ndiagnostics\n\n{study.markdown_diagnostics(diag)}\n", flush=True)
    if args.variants:
        print("table:", file=sys.stderr)
        rows = study.table(
            args.variants,
            args.instances,
            args.epsilons,
            args.runs,
            args.seed,
            lambda so_far: write("ablation.json", so_far),
        )
        study.figure(rows, os.path.join(args.out, "adap_tt_star_ablation.png"))
        print(
            f"\ntable\n\n{study.markdown_table(rows)}\n\nratios\n\n{study.markdown_ratios(rows)}\n"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
