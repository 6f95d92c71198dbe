"""Run a paper grid: one engine grid per algorithm, then CSV, summary, JSON, figures, report.

``python -m experiments.sweep`` (no arguments) runs the ``quick`` preset: global DP on mu1 and
mu2, TTUCB, AdaP-TT, AdaP-TT* and DP-SE at a few ε, 100 runs — a few minutes on two CPU cores.
Other presets follow the paper's grids (see ``--help`` and `experiments.grids.PRESETS`); any
option overrides the preset. Output directory (``--out``, default ``results/<preset>``):

    runs.csv        one row per run (`experiments.results.RUN_COLUMNS`)
    summary.csv     one row per cell: mean, std, se, median, error rate + 95% Wilson interval,
                    censored count
    sweep.json      versions, JAX backend and devices, git commit, configuration, wall time,
                    samples/s
    figures/        PNG and PDF (`experiments.plot`)
    report.md       claims of Section 5 (`experiments.report`)
    checkpoints/    one engine checkpoint per algorithm (``--resume`` continues from them)

Python API (notebooks): ``main(argv)`` takes the command line as a list and returns the exit
code. ``--algorithms`` names are keys of the registry `jaxbai.ALGORITHMS`, read when `main` is
called, so an algorithm registered with ``jaxbai.register`` beforehand runs like the paper's
(on the ε grid of its trust model, with ``--threshold`` if it has threshold families)::

    jaxbai.register("my_alg", my_factory, "My algorithm")
    sweep.main(["--algorithms", "my_alg", "ttucb", "--runs", "100", "--out", "results/mine"])
"""

from __future__ import annotations

import argparse
import datetime
import os
import sys
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from experiments import grids, results

if TYPE_CHECKING:  # at run time jaxbai is imported inside functions, when first needed
    from jaxbai.base import Algorithm
    from jaxbai.engine import GridResult

__all__ = [
    "EXIT_INTERRUPTED",
    "EXIT_USAGE",
    "build_parser",
    "config_from_args",
    "configure_host_devices",
    "engine_stats",
    "main",
    "make_algorithm",
    "run_algorithm",
    "run_table",
    "sweep",
    "unfinished",
    "write_outputs",
]

EXIT_USAGE, EXIT_INTERRUPTED = 2, 3


class _Parser(argparse.ArgumentParser):
    """argparse with one-line errors (no usage dump)."""

    def error(self, message: str):
        self.exit(EXIT_USAGE, f"{self.prog}: error: {message}\n")


def _floats(text: str) -> list[float]:
    try:
        return [float(x) for x in text.replace(",", " ").split()]
    except ValueError as err:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from err


def _names(text: str) -> list[str]:
    return [x for x in text.replace(",", " ").split() if x]


def build_parser() -> argparse.ArgumentParser:
    """The sweep's command line."""
    presets = "\n".join(f"  {k:<20}{p.description}" for k, p in grids.PRESETS.items())
    parser = _Parser(
        prog="python -m experiments.sweep",
        description=__doc__ + "\npresets:\n" + presets,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add = parser.add_argument
    add("--preset", default="quick", help="grid to start from (default: quick)")
    add("--device", choices=("cpu", "gpu"), help="platform (default: JAX's default)")
    add("--runs", type=int, help="runs per (instance, ε, δ) cell")
    add("--instances", type=_names, nargs="+", help="instance names, e.g. mu1 mu2")
    add("--epsilons", type=_floats, nargs="+", help="ε grid for every private algorithm")
    add("--deltas", type=_floats, nargs="+", help="risks δ (default 0.01)")
    add("--algorithms", type=_names, nargs="+", help="algorithm names, e.g. adap_tt ttucb")
    add("--threshold", choices=("heuristic", "theory"), help="stopping threshold family")
    add("--max-samples", type=int, help="per-run sample budget (runs hitting it are censored)")
    add("--seed", type=int, help="master seed (default 0)")
    add("--out", help="output directory (default results/<preset>)")
    add("--resume", action="store_true", help="continue from the checkpoints in --out")
    add("--quiet", action="store_true", help="no progress lines")
    # test hooks: stop after N engine chunks of S steps (simulates an interruption)
    add("--max-chunks", type=int, help=argparse.SUPPRESS)
    add("--chunk-steps", type=int, default=1 << 15, help=argparse.SUPPRESS)
    return parser


def _flat(values: list[list] | None) -> tuple | None:
    return None if values is None else tuple(v for group in values for v in group)


def config_from_args(args: argparse.Namespace) -> grids.SweepConfig:
    """The configuration of the parsed command line (ValueError if invalid)."""
    eps = _flat(args.epsilons)
    return grids.config_from_preset(
        args.preset,
        instances=_flat(args.instances),
        algorithms=_flat(args.algorithms),
        local_epsilons=eps,
        global_epsilons=eps,
        deltas=_flat(args.deltas),
        runs=args.runs,
        threshold=args.threshold,
        max_samples=args.max_samples,
        seed=args.seed,
        device=args.device,
        out=args.out,
    )


def configure_host_devices(config: grids.SweepConfig) -> None:
    """Expose every CPU core to JAX as a device (before JAX is imported), unless told otherwise.

    The engine shards jobs over ``jax.devices()``; on a GPU run, or when ``XLA_FLAGS`` is
    already set, nothing changes.
    """
    if config.device == "gpu" or "XLA_FLAGS" in os.environ:
        return
    cores = max(1, os.cpu_count() or 1)
    os.environ["XLA_FLAGS"] = f"--xla_force_host_platform_device_count={cores}"


def make_algorithm(name: str, threshold: str) -> Algorithm:
    """The registered algorithm ``name``, with the stopping-threshold family ``threshold`` if its
    entry has threshold families (DP-SE has none).

    Raises:
        ValueError: ``name`` is not registered.
    """
    import jaxbai

    entry = jaxbai.ALGORITHMS.get_entry(name)
    return entry(threshold=threshold) if entry.thresholds else entry()


def run_table(name: str, config: grids.SweepConfig, res: GridResult) -> results.Table:
    """The per-run rows of one algorithm's grid result (job order: instance, ε, δ, run).

    The ``threshold`` column is ``"n/a"`` for an algorithm without threshold families.
    """
    import jaxbai

    entry = jaxbai.ALGORITHMS.get_entry(name)
    jobs = res.jobs
    per_instance = len(jobs) // len(config.instances)
    means = [jaxbai.PAPER_INSTANCES[i] for i in config.instances]
    n = len(jobs)
    return {
        "algorithm": np.full(n, name, dtype=object),
        "privacy": np.full(n, entry.privacy, dtype=object),
        "instance": np.repeat(np.array(config.instances, dtype=object), per_instance),
        "means": np.repeat(
            np.array([results.format_means(m) for m in means], object), per_instance
        ),
        "K": np.full(n, len(means[0]), np.int64),
        "epsilon": np.asarray(jobs.epsilon, np.float64),
        "delta": np.asarray(jobs.delta, np.float64),
        "threshold": np.full(n, config.threshold if entry.thresholds else "n/a", dtype=object),
        "seed": np.full(n, config.seed, np.int64),
        "run": np.asarray(jobs.run, np.int64),
        "tau": np.asarray(res.tau, np.int64),
        "recommendation": np.asarray(res.recommendation, np.int64),
        "correct": np.asarray(res.correct, bool),
        "censored": np.asarray(res.censored, bool),
        "rounds": np.asarray(res.rounds, np.int64),
    }


def run_algorithm(name: str, config: grids.SweepConfig, args: argparse.Namespace) -> GridResult:
    """One engine grid (all instances × ε × δ × runs) with its checkpoint; returns the result."""
    import jaxbai
    from jaxbai import engine

    instances = [jaxbai.bernoulli(jaxbai.PAPER_INSTANCES[i]) for i in config.instances]
    jobs = engine.grid_jobs(instances, config.epsilons_for(name), config.deltas, config.runs)
    if not args.quiet:
        print(f"[{name}] {len(jobs)} runs", file=sys.stderr)
    return engine.run_grid(
        make_algorithm(name, config.threshold),
        jobs,
        seed=config.seed,
        max_samples=config.max_samples,
        device=config.device,
        checkpoint=os.path.join(config.out, "checkpoints", f"{name}.npz"),
        resume=args.resume,
        progress=not args.quiet,
        chunk_steps=args.chunk_steps,
        max_chunks=args.max_chunks,
    )


def engine_stats(res: GridResult) -> dict:
    """Wall time and throughput of one engine call."""
    return {
        "jobs": len(res.jobs),
        "censored": int(res.censored.sum()),
        "wall_time_s": res.wall_time,
        "samples": res.samples,
        "lane_steps": res.lane_steps,
        "efficiency": res.efficiency,
        "samples_per_s": res.samples / max(res.wall_time, 1e-9),
    }


def unfinished(res: GridResult) -> bool:
    """Did the engine stop (``--max-chunks``) before every job finished? (τ = 0 marks them.)"""
    return bool((res.censored & (res.tau == 0)).any())


def write_outputs(
    config: grids.SweepConfig, table: results.Table, sidecar: dict
) -> dict[str, object]:
    """CSV, summary, JSON, figures and report; returns the paths written."""
    from experiments import plot, report, stats

    out = config.out
    paths: dict[str, object] = {
        "runs": os.path.join(out, "runs.csv"),
        "summary": os.path.join(out, "summary.csv"),
        "sidecar": os.path.join(out, "sweep.json"),
        "report": os.path.join(out, "report.md"),
    }
    results.write_csv(table, paths["runs"], results.RUN_COLUMNS)
    summary = stats.summarize(table)
    results.write_csv(summary, paths["summary"], stats.SUMMARY_COLUMNS)
    paths["figures"] = plot.draw_all(summary, os.path.join(out, "figures"))
    text, _ = report.report_from_csv(paths["runs"])
    with open(paths["report"], "w") as f:
        f.write(text + "\n")
    sidecar["files"] = {k: v for k, v in paths.items() if k != "sidecar"}
    results.write_json(sidecar, paths["sidecar"])
    return paths


def sweep(config: grids.SweepConfig, args: argparse.Namespace, argv: Sequence[str]) -> int:
    """Run every algorithm, then write the outputs; returns the exit code."""
    started = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
    clock = time.perf_counter()
    os.makedirs(os.path.join(config.out, "checkpoints"), exist_ok=True)
    tables, per_algorithm = [], {}
    for name in config.algorithms:
        res = run_algorithm(name, config, args)
        if unfinished(res):
            print(f"sweep: interrupted during {name}; rerun with --resume", file=sys.stderr)
            return EXIT_INTERRUPTED
        tables.append(run_table(name, config, res))
        per_algorithm[name] = engine_stats(res)
    engine_wall = sum(s["wall_time_s"] for s in per_algorithm.values())
    samples = sum(s["samples"] for s in per_algorithm.values())
    sidecar = {
        "started_utc": started,
        "command": ["python", "-m", "experiments.sweep", *argv],
        "config": config.to_dict(),
        "versions": results.package_versions(),
        "jax": results.jax_environment(),
        "git_commit": results.git_commit(os.path.dirname(os.path.abspath(__file__))),
        "error_interval": "Wilson score, 95%",
        "engine": per_algorithm,
        "engine_wall_time_s": engine_wall,
        "samples": samples,
        "samples_per_s": samples / max(engine_wall, 1e-9),
        "note": "samples count the runs simulated by this invocation (not resumed ones)",
    }
    table = results.concat(tables)
    sidecar["wall_time_s"] = time.perf_counter() - clock
    paths = write_outputs(config, table, sidecar)
    print(
        f"{len(table['tau'])} runs in {sidecar['wall_time_s']:.0f}s "
        f"({sidecar['samples_per_s']:.3g} samples/s on {sidecar['jax']['backend']})"
    )
    for key in ("runs", "summary", "sidecar", "report"):
        print(f"{key:>8}: {paths[key]}")
    print(f" figures: {os.path.join(config.out, 'figures')}/")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """CLI entry point; returns the exit code (2: bad arguments, 3: interrupted)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        config = config_from_args(args)
    except ValueError as err:
        parser.error(str(err))
    if (args.max_chunks is not None and args.max_chunks < 1) or args.chunk_steps < 1:
        parser.error("--max-chunks and --chunk-steps must be positive")
    configure_host_devices(config)
    from jaxbai import engine

    try:
        if config.device is not None:
            engine.select_devices(config.device)
        return sweep(config, args, argv)
    except ValueError as err:  # e.g. a checkpoint written for another grid
        parser.error(str(err))
    return EXIT_USAGE


if __name__ == "__main__":
    sys.exit(main())
