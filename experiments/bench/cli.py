"""The benchmarks' command line, ``python -m experiments.bench [SUITE] [options]``, and what
every benchmark shares.

`SUITES` names the four benchmarks: ``workloads`` (the default, `main`: W1–W5 of
`experiments.bench.workloads`), ``trial`` (`experiments.bench.trial`), ``kernels``
(`experiments.bench.kernels`) and ``ablation`` (`experiments.bench.ablation`); `main` hands
the other three their arguments. `suite_parser` is a suite's parser (its program name and
description), `parser_for` adds the options the engine's benchmarks share (``--device``,
``--out``, ``--preset quick|full``), `table` is the Markdown table of a report's headline
figures and `write_report` writes the report as JSON.

Examples:
    >>> print(table({"W1": {"engine": {"samples_per_s": 3.6e7}, "engine_over_numba": 1.14}}))
    | workload | figure | value |
    | --- | --- | --- |
    | W1 | engine.samples_per_s | 3.6e+07 |
    | W1 | engine_over_numba | 1.14 |
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import sys
from typing import Any

from experiments.bench.workloads import w1, w2, w4, w5, w6
from jaxbai import compilation

__all__ = ["PRESETS", "SUITES", "main", "parser_for", "suite_parser", "table", "write_report"]

SUITES = {
    "workloads": """\
Benchmarks of the engine, as ratios measured in one process (docs/benchmarks.md):
  W1  ttucb on mu1, 4096 runs: the engine's samples/s against the plain-Python
      transcription and numba loops (pip install -e ".[bench]"; skipped without numba)
  W2  adap_tt on mu1 at five ε in one grid: wall time and lane efficiency against a
      plain vmap that runs until every run stops
  W4  adap_tt and adap_tt_star: rewards drawn per sample against per episode
  W5  ttucb and adap_tt at six δ: shared trajectories against separate runs
  W6  dp_tt, eb_tci, adap_tt, adap_tt_star, dp_se and ttucb on mu1 at ε = 0.001, 0.1
      and 10, each path (per sample, per episode): samples/s, and DP-TT over AdaP-TT
  W3  W1 at 10^5 runs on a GPU (--device gpu only)
Compilation is excluded. The other suites: 'python -m experiments.bench trial',
'... kernels' and '... ablation' (each with --help).""",
    "trial": """\
Load benchmark of real trials: the time per record as a trial grows (10^3 to 10^6
participants), one by one and in cohorts, recorded durably; optionally the
δ-correctness check of the rehearsal noise (docs/trials.md).""",
    "kernels": """\
The engine's two lane programs (xla and fused) side by side: the cost of one step of a
pool of lanes, the paper grid's tail, and the operations of one lane-step of each
algorithm the fused kernel covers. On a CPU the fused kernel runs in Pallas' interpret
mode: a check that it runs, not a speed.""",
    "ablation": """\
What each part of the Top Two step costs in the XLA lane program on a CPU: TTUCB on mu1
with parts of the step removed one at a time, in ns per lane-step.""",
}
"""Benchmark suite → its description in ``--help`` (plain text)."""

PRESETS = ("quick", "full")
"""``--preset``: ``quick`` runs small sizes (a smoke test), ``full`` the documented ones."""


def _cell(value: Any) -> str:
    """A table cell: a number to 4 significant digits, a text (a refusal) as it is."""
    return f"{value:.4g}" if isinstance(value, (int, float)) else str(value).replace("|", "/")


def table(report: dict[str, Any]) -> str:
    """A Markdown table of the headline figures."""
    rows = ["| workload | figure | value |", "| --- | --- | --- |"]
    for name, section in report.items():
        if not isinstance(section, dict):
            continue
        for key, value in section.items():
            if isinstance(value, dict):
                for sub, number in value.items():
                    rows.append(f"| {name} | {key}.{sub} | {_cell(number)} |")
            elif isinstance(value, (int, float, str)):
                rows.append(f"| {name} | {key} | {_cell(value)} |")
    return "\n".join(rows)


def suite_parser(suite: str) -> argparse.ArgumentParser:
    """The parser of one of `SUITES`: its program name and description, no options yet."""
    prog = "python -m experiments.bench" + ("" if suite == "workloads" else f" {suite}")
    parser = argparse.ArgumentParser(
        prog=prog, description=SUITES[suite], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    compilation.add_argument(parser)
    return parser


def parser_for(suite: str, out: str) -> argparse.ArgumentParser:
    """`suite_parser` with the options the engine's benchmarks share: ``--device``,
    ``--out`` (default ``out``) and ``--preset``."""
    parser = suite_parser(suite)
    add = parser.add_argument
    add("--device", choices=("cpu", "gpu"), default="cpu", help="platform (default: %(default)s)")
    add("--out", default=out, help="JSON report (default: %(default)s)")
    add(
        "--preset",
        choices=PRESETS,
        default="full",
        help="quick: small sizes (a smoke test); full: the sizes of docs/benchmarks.md "
        "(default: %(default)s)",
    )
    return parser


def write_report(report: dict[str, Any], out: str, text: str = "") -> int:
    """Write ``report`` as JSON to ``out``, print ``text`` (its table; none if empty); exit
    status 0."""
    os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
    with open(out, "w") as f:
        json.dump(report, f, indent=2, default=float)
    if text:
        print(text)
    print(f"written {out}")
    return 0


def _suite_position(argv: list[str]) -> int | None:
    """Where the suite's name stands in ``argv``: the first word of `SUITES` that is not an
    option's value (every option of the benchmarks but ``-h``/``--help`` takes one), or None.

    Examples:
        >>> _suite_position(["--preset", "quick", "kernels"]), _suite_position(["--out", "trial"])
        (2, None)
    """
    takes_value = False
    for position, word in enumerate(argv):
        if takes_value:
            takes_value = False
        elif word.startswith("-"):
            takes_value = "=" not in word and word not in ("-h", "--help")
        elif word in SUITES:
            return position
    return None


def main(argv: list[str] | None = None) -> int:
    """``python -m experiments.bench [SUITE] ...``: run a suite (``argv``: the command line
    without the program name; None: ``sys.argv[1:]``; the suite's name may stand anywhere
    among the options); returns the exit code."""
    argv = list(sys.argv[1:] if argv is None else argv)
    position = _suite_position(argv)
    suite = "workloads" if position is None else argv.pop(position)
    if suite != "workloads":
        return importlib.import_module(f"experiments.bench.{suite}").main(argv)
    from jaxbai.engine import KERNELS

    parser = parser_for("workloads", os.path.join("results", "bench.json"))
    parser.add_argument(
        "suite",
        nargs="?",
        choices=tuple(SUITES),
        default="workloads",
        help="the benchmark to run (default: %(default)s)",
    )
    parser.add_argument(
        "--kernel",
        choices=KERNELS,
        default="auto",
        help="the engine's lane program in W1-W3; W4-W6 (per-episode draws and shared δ, "
        "which only the XLA program runs) run the XLA program, and are skipped with fused; "
        "the fused kernel is interpreted on a CPU (default: %(default)s)",
    )
    args = parser.parse_args(argv)
    compilation.from_arguments(args)
    if args.suite != "workloads":  # a second suite's name after the first
        parser.error(f"one suite at a time: {suite} and {args.suite}")
    import jax

    from jaxbai import engine

    try:
        engine.select_devices(args.device)
    except ValueError as err:
        parser.error(str(err))
    quick = args.preset == "quick"
    runs_w1, runs_w2, py_runs = (256, 20, 2) if quick else (4096, 200, 5)
    report: dict[str, Any] = {
        "devices": [str(d) for d in jax.devices()],
        "cores": engine.available_cores(),
        "xla_flags": os.environ.get("XLA_FLAGS", ""),
        "kernel": args.kernel,
        "W1": w1(args.device, runs_w1, py_runs, args.kernel),
        "W2": w2(args.device, runs_w2, args.kernel),
    }
    if args.kernel != "fused":  # per-episode draws and shared δ: the XLA program only (W4-W6)
        report["W4"] = w4(args.device, runs_w2)
        report["W5"] = w5(args.device, runs_w2 * 5)
        report["W6"] = w6(args.device, *((32, 20_000) if quick else (256, 100_000)))
    if args.device == "gpu":
        report["W3"] = w1("gpu", 10**4 if quick else 10**5, 1, args.kernel)
    return write_report(report, args.out, table(report))
