"""The benchmarks' command lines: `main` (``python -m experiments.bench``) and what every
benchmark shares.

`parser_for` is a benchmark's parser (``--device``, ``--out``, ``--quick``), `table` the
Markdown table of a report's headline figures and `write_report` writes the report as JSON;
`experiments.bench.kernels` and `experiments.bench.ablation` use them too. `main` runs the
workloads of `experiments.bench.workloads` (or, with ``--trial``, the trial load benchmark).

Example:
    >>> print(table({"W1": {"engine": {"samples_per_s": 3.6e7}, "engine_over_numba": 1.14}}))
    | workload | figure | value |
    | --- | --- | --- |
    | W1 | engine.samples_per_s | 3.6e+07 |
    | W1 | engine_over_numba | 1.14 |
"""

from __future__ import annotations

import argparse
import json
import os
from typing import Any

from experiments.bench.workloads import w1, w2, w4, w5

__all__ = ["main", "parser_for", "table", "write_report"]


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


def parser_for(prog: str, doc: str, out: str) -> argparse.ArgumentParser:
    """A benchmark's command line: ``--device``, ``--out`` (default ``out``), ``--quick``."""
    parser = argparse.ArgumentParser(prog=prog, description=doc.splitlines()[0])
    parser.add_argument("--device", choices=("cpu", "gpu"), default="cpu")
    parser.add_argument("--out", help=f"JSON report (default {out})")
    parser.add_argument("--quick", action="store_true", help="small sizes (smoke test)")
    return parser


def write_report(report: dict[str, Any], out: str, text: str) -> int:
    """Write ``report`` as JSON to ``out``, print ``text`` (its table); exit status 0."""
    os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
    with open(out, "w") as f:
        json.dump(report, f, indent=2, default=float)
    print(text)
    print(f"written {out}")
    return 0


def main(argv: list[str] | None = None) -> int:
    """Run W1–W3 and print a table; write JSON."""
    from experiments import bench
    from jaxbai.engine import KERNELS

    parser = parser_for("python -m experiments.bench", bench.__doc__, "results/bench.json")
    parser.add_argument(
        "--kernel",
        choices=KERNELS,
        default="auto",
        help="the engine's lane program in W1-W3; with fused, W4 and W5 (per-episode draws "
        "and shared δ, which only the XLA program runs) are skipped, and the kernel is "
        "interpreted on a CPU (default auto)",
    )
    parser.add_argument(
        "--trial", action="store_true", help="the trial load benchmark (experiments.bench.trial)"
    )
    args, rest = parser.parse_known_args(argv)
    if args.trial:
        from experiments import bench_trial

        return bench_trial.main(rest + (["--out", args.out] if args.out else []))
    if rest:
        parser.error(f"unrecognized arguments: {' '.join(rest)}")
    out = args.out or "results/bench.json"
    import jax

    from jaxbai import engine

    try:
        engine.select_devices(args.device)
    except ValueError as err:
        parser.exit(2, f"error: {err}\n")
    runs_w1, runs_w2, py_runs = (256, 20, 2) if args.quick else (4096, 200, 5)
    report: dict[str, Any] = {
        "devices": [str(d) for d in jax.devices()],
        "cores": engine.available_cores(),
        "xla_flags": os.environ.get("XLA_FLAGS", ""),
        "kernel": args.kernel,
        "W1": w1(args.device, runs_w1, py_runs, args.kernel),
        "W2": w2(args.device, runs_w2, args.kernel),
    }
    if args.kernel != "fused":  # per-episode draws and shared δ: the XLA program only
        report["W4"] = w4(args.device, runs_w2)
        report["W5"] = w5(args.device, runs_w2 * 5)
    if args.device == "gpu":
        report["W3"] = w1("gpu", 10**4 if args.quick else 10**5, 1, args.kernel)
    return write_report(report, out, table(report))
