"""The privacy audit's command line, ``python -m experiments.audit``.

Runs the rows of `experiments.audit.table` (or the planted bugs) at every claimed ε and writes
the table as CSV, JSON metadata and a plot under ``--out``; the package docstring
(`experiments.audit`) describes what is audited and how.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import sys
import time
from collections.abc import Sequence

import jax

from experiments.audit.table import EPSILONS, audit_row, markdown, plot, rows

__all__ = ["DESCRIPTION", "main"]


DESCRIPTION = """\
Privacy audit of every private mechanism and algorithm: for each claimed ε, the certified
lower bound ε_lower at 95% confidence from samples of neighbouring inputs (mechanisms) or
runs on neighbouring reward tables (algorithms), the event that achieved it, and a plot of
ε_lower against ε. An ε_lower above the claimed ε is a privacy violation (exit status 1).
Where no event separates the two inputs the audit reports "no evidence at these tables (N
events tried)": nothing was found on those inputs, which is not a lower bound of 0.

Without --algorithms every mechanism and every registered private algorithm is audited.
--algorithms NAME ... audits only those registered algorithms, and no mechanism: a global-DP
algorithm on two neighbouring reward tables, a local-DP one at its participant mechanism.
jaxbai's own algorithms run on their hand-made tables; any other, such as one registered by
a plugin loaded with --plugin MODULE, on tables searched for it at each ε on pilot runs
independent of the audit's (jaxbai.audit.neighbouring_tables, docs/audits.md).

--planted audits deliberately broken mechanisms and algorithms instead, which the audit must
catch. Writes OUT/audit.csv, audit.json and audit.png (planted.* with --planted)."""
"""The command's description in ``--help`` (plain text)."""


def main(argv: Sequence[str] | None = None) -> int:
    """Run the audit table (or the planted bugs) and write it under ``--out``; returns the exit
    code (1: a violation, 2: bad arguments)."""
    parser = argparse.ArgumentParser(
        prog="python -m experiments.audit",
        description=DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add = parser.add_argument
    add(
        "--runs",
        type=int,
        default=100_000,
        help="runs per table, algorithms (default: %(default)s)",
    )
    add("--samples", type=int, default=1_000_000, help="samples per input (default: %(default)s)")
    add(
        "--epsilons",
        type=float,
        nargs="+",
        default=list(EPSILONS),
        metavar="EPS",
        help="claimed privacy budgets ε (default: %(default)s)",
    )
    add(
        "--algorithms",
        nargs="+",
        default=None,
        metavar="NAME",
        help="audit only these registered private algorithms, and no mechanism "
        "(default: every mechanism and algorithm)",
    )
    add("--planted", action="store_true", help="audit the planted bugs instead")
    add("--device", choices=("cpu", "gpu"), default=None, help="platform (default: JAX's default)")
    add("--seed", type=int, default=0, help="master seed (default: %(default)s)")
    add(
        "--out",
        default=os.path.join("results", "audit"),
        metavar="DIR",
        help="output directory (default: %(default)s)",
    )
    from jaxbai import (  # installed plugins' algorithms are audited like the built-ins
        compilation,
        plugins,
    )

    plugins.add_argument(parser)
    compilation.add_argument(parser)
    args = parser.parse_args(argv)
    compilation.from_arguments(args)
    if args.runs < 2 or args.samples < 2 or min(args.epsilons) <= 0:
        parser.error("--runs and --samples must be >= 2 and every epsilon > 0")
    if args.planted and args.algorithms is not None:
        parser.error("--planted audits the planted bugs: it takes no --algorithms")
    try:
        audited = rows(args.planted, args.algorithms)
    except ValueError as err:
        parser.error(str(err))
    start = time.perf_counter()
    records = []
    for row in audited:
        for eps in args.epsilons:
            record = audit_row(row, eps, args.samples, args.runs, args.seed, args.device)
            records.append(record)
            print(
                f"{row.name:40s} ε={eps:<4g} {record['verdict']}  {record['event']}"
                f"  ({record['seconds']} s)",
                flush=True,
            )
    wall = time.perf_counter() - start
    os.makedirs(args.out, exist_ok=True)
    name = "planted" if args.planted else "audit"
    with open(os.path.join(args.out, f"{name}.csv"), "w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(records[0]))
        writer.writeheader()
        writer.writerows(records)
    meta = {"argv": list(argv or sys.argv[1:]), "wall_s": round(wall, 1), "jax": jax.__version__}
    meta["devices"] = [str(d) for d in jax.devices()]
    with open(os.path.join(args.out, f"{name}.json"), "w") as fh:
        json.dump(meta, fh, indent=2)
    plot(records, os.path.join(args.out, f"{name}.png"))
    print(markdown(records))
    print(f"wall time {wall:.0f} s on {len(jax.devices())} device(s); written to {args.out}")
    return 1 if any(r["violation"] for r in records if r["kind"] != "planted bug") else 0
