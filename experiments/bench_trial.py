"""Command line of the trial load benchmark (`experiments.bench.trial`).

Usage:
    python -m experiments.bench_trial [--participants N] [--window W] [--delta-runs R]
        [--out results/bench_trial.json]

``python -m experiments.bench --trial`` calls `main`.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile

from experiments.bench import trial

__all__ = ["main"]


def main(argv: list[str] | None = None) -> int:
    """Run the load benchmark (and the δ check if asked); print and write JSON."""
    parser = argparse.ArgumentParser(
        prog="python -m experiments.bench_trial", description=(trial.__doc__ or "").splitlines()[0]
    )
    parser.add_argument("--participants", type=int, default=1_000_000)
    parser.add_argument("--window", type=int, default=500, help="timed records per path")
    parser.add_argument("--delta-runs", type=int, default=0)
    parser.add_argument("--out", default="results/bench_trial.json")
    args = parser.parse_args(argv)
    if args.participants < 2 or args.window < 1 or args.delta_runs < 0:
        parser.exit(2, "error: --participants ≥ 2, --window ≥ 1, --delta-runs ≥ 0\n")
    results = os.path.dirname(os.path.abspath(args.out))
    os.makedirs(results, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=results) as tmp:
        report = {"load": trial.load(args.participants, args.window, tmp)}
        if args.delta_runs:
            report["delta"] = trial.delta_check(args.delta_runs, tmp)
    with open(args.out, "w") as f:
        json.dump(report, f, indent=2)
    print(f"written {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
