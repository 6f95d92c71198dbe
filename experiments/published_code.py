"""Command line of the published-code comparison (`experiments.studies.published_code`).

Usage:
    python -m experiments.published_code --out DIR [--runs 200] [--seed 5]
        [--instances mu1 mu2] [--epsilons 0.1 1 10] [--algorithms ttucb adap_tt dp_se]
"""

from __future__ import annotations

import os
from typing import Any

from experiments.studies import published_code as study
from experiments.studies.cells import measurement_parser

__all__ = ["main"]


def main(argv: list[str] | None = None) -> int:
    """Measure every variant of the chosen algorithms; print one Markdown table per algorithm."""
    parser = measurement_parser(
        "experiments.published_code", 200, 5, study.INSTANCES, study.EPSILONS
    )
    parser.add_argument("--algorithms", nargs="+", default=["ttucb", "adap_tt", "dp_se"])
    args = parser.parse_args(argv)
    variants = study.variants()
    unknown = sorted(set(args.algorithms) - set(variants))
    if unknown:
        parser.error(f"--algorithms: unknown {unknown}; choose from {sorted(variants)}")
    if args.runs < 2:
        parser.error("--runs must be at least 2")
    os.makedirs(args.out, exist_ok=True)
    rows: list[dict[str, Any]] = []
    for algorithm in args.algorithms:
        study.measure(
            algorithm, args.instances, args.epsilons, args.runs, args.seed, args.out, rows
        )
        print(f"\n### {algorithm}\n\n{study.markdown_table(rows, algorithm)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
