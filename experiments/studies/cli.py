"""The studies' command line, ``python -m experiments.studies STUDY [options]``.

One subcommand per study (`STUDIES`), each a thin layer over its module: ``adap-tt-star-ablation``
(`experiments.studies.adap_tt_star_ablation`), ``published-code``
(`experiments.studies.published_code`), ``ratio-challenger``
(`experiments.studies.ratio_challenger`), ``dp-tt`` (`experiments.studies.dp_tt`),
``dp-tt-trajectory`` (`experiments.studies.dp_tt_trajectory`) and ``dp-tt-theory``
(`experiments.studies.dp_tt_theory`). Every study takes ``--out`` (default
``results/<study>``) and each but ``dp-tt-theory`` (which draws nothing) ``--seed``;
``--runs``, ``--instances`` and ``--epsilons`` are taken by ``adap-tt-star-ablation``,
``published-code`` and ``dp-tt``, ``--runs`` alone by ``ratio-challenger``, ``--instances``
and ``--epsilons`` by ``dp-tt-theory``, ``--runs``, ``--instance``, ``--epsilon`` and
``--max-samples`` by ``dp-tt-trajectory``. The study modules are imported when `main` builds the
parser (for their default grids), not when this module is.

Examples:
    >>> sorted(STUDIES)[:2]
    ['adap-tt-star-ablation', 'dp-tt']
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable, Sequence
from typing import Any

from experiments.config.arguments import (
    OneLineParser,
    non_negative_int,
    positive_epsilon,
    positive_int,
)
from jaxbai import compilation
from jaxbai.instances import PAPER_INSTANCES

__all__ = ["DESCRIPTION", "STUDIES", "build_parser", "main"]

DESCRIPTION = """\
Run one of the studies beside the paper: measurements that compare algorithms or variants on
the paper's instances and write JSON, Markdown tables and figures under --out. Each study's page
in docs/ gives the figures it reproduces; 'python -m experiments.studies STUDY --help' lists
its options."""
"""The command's description in ``--help`` (plain text)."""

STUDIES = {
    "adap-tt-star-ablation": (
        "AdaP-TT* against AdaP-TT, one ingredient swapped at a time",
        "Ablation of AdaP-TT* against AdaP-TT, one ingredient swapped at a time\n"
        "(docs/adap-tt-star-ablation.md). Writes OUT/diagnostics.json and OUT/ablation.json\n"
        "(rewritten after each variant), prints both as Markdown tables and draws\n"
        "OUT/adap_tt_star_ablation.png.",
    ),
    "published-code": (
        "the published code against the paper, one difference at a time",
        "The paper's published code against the paper: the effect of each difference, one at\n"
        "a time (docs/published-code.md). Writes OUT/published_code.json (rewritten after each\n"
        "variant) and prints one Markdown table per algorithm.",
    ),
    "ratio-challenger": (
        "AdaP-TT* with the threshold-aware challenger",
        "AdaP-TT* with the threshold-aware challenger (adap_tt_star_ratio) against AdaP-TT and\n"
        "AdaP-TT* (docs/threshold-aware-challenger.md): the table, the correctness check at\n"
        "δ = 0.05 and small δ. Writes OUT/<part>.json and prints each part as a Markdown table;\n"
        "the table also draws OUT/threshold_aware_challenger.png.",
    ),
    "dp-tt": (
        "DP-TT beside the other ε-global-DP algorithms",
        "DP-TT (Jourdan & Azize 2025) beside the other ε-global-DP algorithms (docs/dp-tt.md):\n"
        "the reduced Figure 1 table with each cell's lower bound, and the tail of DP-TT's\n"
        "stopping time against single changes to it (η = 2, forced exploration, TCI at the\n"
        "phase counts). Writes OUT/<part>.json and prints each part as a Markdown table.",
    ),
    "dp-tt-trajectory": (
        "one DP-TT run's noisy means and counts over time",
        "The median and the longest of a few DP-TT runs, replayed with their noisy means and\n"
        "counts recorded over time (jaxbai.record_trajectories, docs/engine.md). Draws\n"
        "OUT/dp_tt_trajectory.png and prints what it drew (the runs' τ, the chosen runs, their\n"
        "final counts) as JSON.",
    ),
    "dp-tt-theory": (
        "DP-TT's lower bound against the 2024 paper's",
        "The ε-global-DP lower bound of DP-TT, T*_ε log(1/(3δ)), against the 2024 paper's,\n"
        "T*_g log(1/(2.4δ)), on the paper instances (docs/dp-tt-theory.md). Writes\n"
        "OUT/dp_tt_theory.json and prints the Markdown table.",
    ),
}
"""Subcommand → (one-line help, description)."""


def _common(parser: argparse.ArgumentParser, study: str, seed: int | None) -> None:
    """``--out`` (default ``results/<study>``) and ``--seed`` (None: a study that draws
    nothing, without one)."""
    parser.add_argument(
        "--out",
        default=os.path.join("results", study),
        metavar="DIR",
        help="output directory (default: %(default)s)",
    )
    if seed is not None:
        parser.add_argument(
            "--seed", type=int, default=seed, help="master seed (default: %(default)s)"
        )


def _measured(
    parser: argparse.ArgumentParser,
    study: str,
    runs: int,
    seed: int,
    instances: Sequence[str],
    epsilons: Sequence[float],
) -> None:
    """`_common`, then ``--runs``, ``--instances`` and ``--epsilons`` with the study's defaults."""
    _common(parser, study, seed)
    parser.add_argument(
        "--runs", type=positive_int, default=runs, help="runs per cell (default: %(default)s)"
    )
    _cells(parser, instances, epsilons, "privacy budgets ε")


def _cells(
    parser: argparse.ArgumentParser,
    instances: Sequence[str],
    epsilons: Sequence[float],
    epsilons_help: str,
) -> None:
    """``--instances`` and ``--epsilons`` with the study's defaults."""
    add = parser.add_argument
    add(
        "--instances",
        nargs="+",
        default=list(instances),
        choices=list(PAPER_INSTANCES),
        metavar="NAME",
        help="paper instances, mu1 to mu6 (default: %(default)s)",
    )
    add(
        "--epsilons",
        nargs="+",
        type=positive_epsilon,
        default=list(epsilons),
        metavar="EPS",
        help=f"{epsilons_help} (default: %(default)s)",
    )


def _ablation_options(parser: argparse.ArgumentParser) -> None:
    from experiments.studies import adap_tt_star_ablation as study

    _measured(parser, "adap-tt-star-ablation", 20, 3, study.INSTANCES, study.EPSILONS)
    names = list(study.variants())
    parser.add_argument(
        "--variants",
        nargs="*",
        default=names,
        metavar="NAME",
        help=f"variants in the table; none: no table (default: all, {', '.join(names)})",
    )
    parser.add_argument(
        "--diagnostic-runs",
        type=non_negative_int,
        default=12,
        help="runs per cell of the diagnostics; 0: none (default: %(default)s)",
    )


def _ablation(args: argparse.Namespace, parser: argparse.ArgumentParser) -> None:
    """Run the diagnostics and the ablation table; write JSON, print Markdown, draw the figure."""
    from experiments.studies import adap_tt_star_ablation as study

    unknown = sorted(set(args.variants) - set(study.variants()))
    if unknown:
        parser.error(f"--variants: unknown {unknown}; choose from {list(study.variants())}")
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


def _published_options(parser: argparse.ArgumentParser) -> None:
    from experiments.studies import published_code as study

    _measured(parser, "published-code", 200, 5, study.INSTANCES, study.EPSILONS)
    parser.add_argument(
        "--algorithms",
        nargs="+",
        default=["ttucb", "adap_tt", "dp_se"],
        choices=sorted(study.variants()),
        help="the published algorithms to measure (default: %(default)s)",
    )


def _published(args: argparse.Namespace, parser: argparse.ArgumentParser) -> None:
    """Measure every variant of the chosen algorithms; print one Markdown table per algorithm."""
    from experiments.studies import published_code as study

    if args.runs < 2:
        parser.error("--runs must be at least 2")
    os.makedirs(args.out, exist_ok=True)
    rows: list[dict[str, Any]] = []
    for algorithm in args.algorithms:
        study.measure(
            algorithm, args.instances, args.epsilons, args.runs, args.seed, args.out, rows
        )
        print(f"\n### {algorithm}\n\n{study.markdown_table(rows, algorithm)}")


def _ratio_options(parser: argparse.ArgumentParser) -> None:
    _common(parser, "ratio-challenger", 3)
    add = parser.add_argument
    add(
        "--part",
        choices=("all", "table", "correctness", "small-delta"),
        default="all",
        help="which part to run (default: %(default)s)",
    )
    add(
        "--runs",
        type=positive_int,
        default=200,
        help="runs per cell of the table (default: %(default)s)",
    )
    add(
        "--correctness-runs",
        type=positive_int,
        default=1000,
        help="runs per cell of the correctness check (default: %(default)s)",
    )
    add(
        "--small-delta-runs",
        type=positive_int,
        default=100,
        help="runs per cell at δ = 1e-6 (default: %(default)s)",
    )


def _ratio(args: argparse.Namespace, parser: argparse.ArgumentParser) -> None:
    """Run the chosen parts; write ``OUT/<part>.json`` and print each as a Markdown table."""
    from experiments.studies import ratio_challenger as study
    from experiments.studies.cells import write_part

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


def _dp_tt_options(parser: argparse.ArgumentParser) -> None:
    from experiments.studies import dp_tt as study

    _measured(parser, "dp-tt", 100, 0, ("mu1", "mu2"), study.EPSILONS)
    add = parser.add_argument
    add(
        "--part",
        choices=("all", "table", "tail"),
        default="all",
        help="which part to run (default: %(default)s)",
    )
    add(
        "--max-samples",
        type=positive_int,
        default=10**7,
        help="per-run sample budget; runs reaching it are censored (default: %(default)s)",
    )
    add(
        "--tail-runs",
        type=positive_int,
        default=400,
        help="runs per cell of the tail (default: %(default)s)",
    )
    add(
        "--tail-epsilons",
        nargs="+",
        type=positive_epsilon,
        default=[0.1, 1.0],
        metavar="EPS",
        help="privacy budgets ε of the tail (default: %(default)s)",
    )


def _dp_tt(args: argparse.Namespace, parser: argparse.ArgumentParser) -> None:
    """Run the chosen parts; write ``OUT/<part>.json`` and print each as a Markdown table."""
    from experiments.studies import dp_tt as study
    from experiments.studies.cells import write_part

    os.makedirs(args.out, exist_ok=True)
    for part in ("table", "tail") if args.part == "all" else (args.part,):
        print(f"{part}:", file=sys.stderr)
        if part == "table":
            rows = study.table(
                args.runs, args.seed, args.instances, args.epsilons, args.max_samples
            )
            text = study.markdown_table(rows)
        else:
            rows = study.tail(
                args.tail_runs, args.seed, args.instances, args.tail_epsilons, args.max_samples
            )
            text = study.markdown_tail(rows)
        write_part(args.out, part, rows, text)


def _trajectory_options(parser: argparse.ArgumentParser) -> None:
    _common(parser, "dp-tt-trajectory", 0)
    add = parser.add_argument
    add(
        "--instance",
        default="mu1",
        choices=list(PAPER_INSTANCES),
        metavar="NAME",
        help="paper instance, mu1 to mu6 (default: %(default)s)",
    )
    add(
        "--epsilon",
        type=positive_epsilon,
        default=0.1,
        help="privacy budget ε (default: %(default)s)",
    )
    add("--runs", type=positive_int, default=16, help="runs to choose from (default: %(default)s)")
    add(
        "--max-samples",
        type=positive_int,
        default=200_000,
        help="per-run sample budget; runs reaching it are cut (default: %(default)s)",
    )


def _trajectory(args: argparse.Namespace, parser: argparse.ArgumentParser) -> None:
    """Simulate, record the chosen runs, draw the figure and print the summary as JSON."""
    from experiments.studies import dp_tt_trajectory as study

    os.makedirs(args.out, exist_ok=True)
    rec, summary = study.record(args.instance, args.epsilon, args.runs, args.seed, args.max_samples)
    study.figure(rec, summary, os.path.join(args.out, "dp_tt_trajectory.png"))
    print(json.dumps(summary))


def _theory_options(parser: argparse.ArgumentParser) -> None:
    from experiments.studies import dp_tt_theory as study

    _common(parser, "dp-tt-theory", None)
    add = parser.add_argument
    add(
        "--delta", type=float, default=study.DELTA, help="risk δ in (0, 1/3) (default: %(default)s)"
    )
    _cells(parser, study.INSTANCES, study.EPSILONS, "privacy budgets ε, inf allowed")


def _theory(args: argparse.Namespace, parser: argparse.ArgumentParser) -> None:
    """Solve every cell, write ``OUT/dp_tt_theory.json`` and print the Markdown table."""
    from experiments.studies import dp_tt_theory as study

    if not 0.0 < args.delta < 1.0 / 3.0:
        parser.error("--delta must lie in (0, 1/3), where log(1/(3δ)) > 0")
    os.makedirs(args.out, exist_ok=True)
    rows = study.table(args.instances, args.epsilons, args.delta)
    with open(os.path.join(args.out, "dp_tt_theory.json"), "w") as f:
        json.dump(rows, f, indent=1)
    print(study.markdown_table(rows))
    flagged = sum(not r["dp_above"] for r in rows)
    print(f"\n{flagged} of {len(rows)} cells flagged", file=sys.stderr)


Runner = Callable[[argparse.Namespace, argparse.ArgumentParser], None]
_COMMANDS: dict[str, tuple[Callable[[argparse.ArgumentParser], None], Runner]] = {
    "adap-tt-star-ablation": (_ablation_options, _ablation),
    "published-code": (_published_options, _published),
    "ratio-challenger": (_ratio_options, _ratio),
    "dp-tt": (_dp_tt_options, _dp_tt),
    "dp-tt-trajectory": (_trajectory_options, _trajectory),
    "dp-tt-theory": (_theory_options, _theory),
}


def build_parser() -> tuple[argparse.ArgumentParser, dict[str, argparse.ArgumentParser]]:
    """The command's parser and each study's subparser (by name)."""
    parser = OneLineParser(
        prog="python -m experiments.studies",
        description=DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    studies = parser.add_subparsers(dest="study", required=True, metavar="STUDY", title="studies")
    subparsers = {}
    for name, (summary, description) in STUDIES.items():
        subparsers[name] = studies.add_parser(
            name,
            help=summary,
            description=description,
            formatter_class=argparse.RawDescriptionHelpFormatter,
        )
        _COMMANDS[name][0](subparsers[name])
        compilation.add_argument(subparsers[name])
    return parser, subparsers


def main(argv: Sequence[str] | None = None) -> int:
    """Run one study (``argv``: the command line without the program name; None:
    ``sys.argv[1:]``); returns the exit code (2: bad arguments)."""
    parser, subparsers = build_parser()
    args = parser.parse_args(argv)
    compilation.from_arguments(args)
    _COMMANDS[args.study][1](args, subparsers[args.study])
    return 0
