"""Run a grid: one engine grid per algorithm (and per K), then CSV, summary, JSON, figures, report.

``python -m experiments.sweep`` (no arguments) runs the ``quick`` preset: global DP on mu1 and
mu2, TTUCB, AdaP-TT, AdaP-TT* and DP-SE at a few ε, 100 runs — a few minutes on two CPU cores.
The presets are the experiment files of ``experiments/grids/`` (see ``--help``); your own grid
is a file too (``--config my_grid.toml``, schema in `experiments.config`), or inline instances
(``--means 0.31 0.30 0.12``, ``--family gaussian --sigma 0.3``, ``--family beta``). Flags
override the file's values. Output directory (``--out``, default ``results/<name>``):

    runs.csv        one row per run (`experiments.results.RUN_COLUMNS`), with its final
                    counts N_a (``counts``: K integers separated by spaces, since instances
                    of one sweep may have different K) and ``reported_tau`` (the stopping time
                    a `jaxbai.base.ReportsSamples` algorithm reports, e.g. the published
                    AdaP-TT's Σ_a 2^⌊log₂ N_a⌋; −1 for every other algorithm)
    summary.csv     one row per cell: mean, std, se, median, error rate + 95% Wilson interval,
                    censored count, rounds of adaptivity (mean, std, max), mean reported
                    stopping time, mean empirical proportions N_a/τ (± std) against the
                    allocation ω* the algorithm targets (`experiments.stats`)
    sweep.json      the resolved configuration (``--config results/<name>/sweep.json`` reruns
                    it exactly), versions, JAX backend and devices, git commit, wall time,
                    samples/s
    figures/        PNG and PDF (`experiments.plot`); ``allocations_<instance>.png``:
                    empirical proportions against ω*
    report.md       claims of Section 5, rounds of adaptivity, allocations against ω*
                    (`experiments.report`)
    checkpoints/    engine checkpoints per algorithm (``--resume`` continues from them)

Instances of different families or K run as separate engine grids whose rows are merged in
the configuration's order; a job's result depends only on (seed, run, ε, δ), so they equal the
rows of separate sweeps.

Python API (notebooks): ``main(argv)`` takes the command line as a list and returns the exit
code. Algorithm names are keys of the registry `jaxbai.ALGORITHMS`, read when `main` is called,
so an algorithm registered with ``jaxbai.register`` beforehand runs like the paper's (on the ε
grid of its trust model, with ``--threshold`` if it has threshold families)::

    jaxbai.register("my_alg", my_factory, "My algorithm")
    sweep.main(["--algorithms", "my_alg", "ttucb", "--runs", "100", "--out", "results/mine"])
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime
import os
import sys
import tempfile
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from experiments import config, distributed, grids, plan, results
from experiments.config import SweepConfig
from experiments.specs import (
    FAMILIES,
    INSTANCE_KEYS,
    AlgorithmSpec,
    ConfigError,
    InstanceSpec,
    derived_name,
    instance_from_mapping,
    instance_groups,
)

if TYPE_CHECKING:  # at run time jaxbai is imported inside functions, when first needed
    from jaxbai.base import Algorithm
    from jaxbai.engine import GridResult

__all__ = [
    "EXIT_INTERRUPTED",
    "EXIT_USAGE",
    "build_parser",
    "config_from_args",
    "engine_stats",
    "inline_instance",
    "main",
    "make_algorithm",
    "prepare_out",
    "reported_tau",
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
    """The sweep's command line: every flag is defined here.

    Three groups: where the grid comes from (``--preset`` or ``--config``), what it holds
    (instances, algorithms, grids, budget, seed: these override the file and are recorded in
    ``sweep.json``), and how this invocation runs (output, resume, progress). Flags that change
    how the sweep is executed but not its results belong to the last group and must not enter
    `experiments.config.SweepConfig`.
    """
    presets = "\n".join(f"  {k:<20}{p.description}" for k, p in grids.PRESETS.items())
    parser = _Parser(
        prog="python -m experiments.sweep",
        description=__doc__ + "\npresets (experiments/grids/<name>.toml):\n" + presets,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    source = parser.add_argument_group("grid source").add_mutually_exclusive_group()
    source.add_argument("--preset", help="a shipped grid (default: quick)")
    source.add_argument("--config", help="an experiment file (TOML) or a sweep's sweep.json")
    grid = parser.add_argument_group("grid (overrides the preset or file)")
    add = grid.add_argument
    add("--instances", type=_names, nargs="+", help="instance names: the file's or mu1..mu6")
    add("--means", type=_floats, nargs="+", help="an instance of your own: its arms' means")
    add("--family", choices=FAMILIES, help="family of the --means instance (default bernoulli)")
    add("--sigma", type=float, help="σ of a --family gaussian instance")
    add("--concentration", type=float, help="a + b of a --family beta instance given by means")
    add("--beta-a", type=_floats, nargs="+", help="shapes a of a --family beta instance")
    add("--beta-b", type=_floats, nargs="+", help="shapes b of a --family beta instance")
    add("--runs", type=int, help="runs per (instance, ε, δ) cell")
    add("--epsilons", type=_floats, nargs="+", help="ε grid for every private algorithm")
    add("--deltas", type=_floats, nargs="+", help="risks δ (default 0.01)")
    add("--algorithms", type=_names, nargs="+", help="the file's labels or registry names")
    add("--threshold", choices=("heuristic", "theory"), help="every algorithm's threshold family")
    add("--max-samples", type=int, help="per-run sample budget (runs hitting it are censored)")
    add(
        "--draws",
        help="auto, per_sample or per_episode: rewards one by one, or one sum per arm and "
        "episode for episodic algorithms (default auto: per episode where the instance allows)",
    )
    add(
        "--share-deltas",
        action=argparse.BooleanOptionalAction,
        help="one trajectory per (instance, ε, run) tested against every δ, for algorithms "
        "whose sampling ignores δ (DP-SE runs each δ; default: the file's, else off)",
    )
    add("--seed", type=int, help="master seed (default 0)")
    add("--device", choices=("cpu", "gpu"), help="platform (default: JAX's default)")
    run = parser.add_argument_group("this invocation")
    run.add_argument(
        "--out", help="output directory (default results/<name>; results/<instance> with --means)"
    )
    run.add_argument("--resume", action="store_true", help="continue from the checkpoints")
    run.add_argument("--quiet", action="store_true", help="no progress lines")
    run.add_argument(
        "--plan",
        action="store_true",
        help="print the predicted samples and wall time per cell after a short pilot "
        "(experiments.plan); run nothing else",
    )
    # test hooks: stop after N engine chunks of S steps (simulates an interruption)
    run.add_argument("--max-chunks", type=int, help=argparse.SUPPRESS)
    run.add_argument("--chunk-steps", type=int, default=1 << 15, help=argparse.SUPPRESS)
    distributed.add_arguments(parser)
    return parser


def _flat(values: list[list] | None) -> tuple | None:
    return None if values is None else tuple(v for group in values for v in group)


_INLINE_FLAGS = {
    "means": "--means",
    "sigma": "--sigma",
    "concentration": "--concentration",
    "a": "--beta-a",
    "b": "--beta-b",
}


def inline_instance(args: argparse.Namespace) -> InstanceSpec | None:
    """The instance of ``--means``/``--family``/``--sigma``/``--beta-a``… (None if not given),
    named by `experiments.specs.derived_name`.

    Raises:
        ConfigError: naming the flag.
    """
    family = args.family or "bernoulli"
    given = {
        "means": _flat(args.means),
        "sigma": args.sigma,
        "concentration": args.concentration,
        "a": _flat(args.beta_a),
        "b": _flat(args.beta_b),
    }
    given = {k: list(v) if isinstance(v, tuple) else v for k, v in given.items() if v is not None}
    if not given:
        if args.family:
            raise ConfigError(("--family",), "needs --means (or --beta-a and --beta-b)")
        return None
    for key in given:
        if key not in INSTANCE_KEYS[family]:
            raise ConfigError((_INLINE_FLAGS[key],), f"does not apply to --family {family}")
    try:
        spec = instance_from_mapping({"name": family, "family": family, **given}, ())
    except ConfigError as err:
        flag = _INLINE_FLAGS.get(err.path[-1], "--means") if err.path else "--means"
        raise ConfigError((flag,), err.message) from None
    return dataclasses.replace(spec, name=derived_name(spec))


_FLAGS = {
    "instances": "--instances/--means",
    "algorithms": "--algorithms",
    "local_epsilons": "--epsilons",
    "global_epsilons": "--epsilons",
    "deltas": "--deltas",
    "runs": "--runs",
    "threshold": "--threshold",
    "max_samples": "--max-samples",
    "draws": "--draws",
    "share_deltas": "--share-deltas",
    "seed": "--seed",
    "device": "--device",
}


def config_from_args(args: argparse.Namespace) -> SweepConfig:
    """The configuration of the parsed command line: the preset or file, then the flags.

    Raises:
        ConfigError: located in the file, or naming the flag that set the bad value.
    """
    if args.config:
        source, base = args.config, config.load(args.config)
    else:
        name = args.preset or "quick"
        base = grids.config_from_preset(name)
        source = os.path.relpath(grids.PRESETS[name].path)
    inline = inline_instance(args)
    instances = _flat(args.instances)
    if inline is not None:
        instances = (*(instances or ()), inline)
    eps = _flat(args.epsilons)
    overrides = {
        "instances": instances,
        "algorithms": _flat(args.algorithms),
        "local_epsilons": eps,
        "global_epsilons": eps,
        "deltas": _flat(args.deltas),
        "runs": args.runs,
        "threshold": args.threshold,
        "max_samples": args.max_samples,
        "draws": args.draws,
        "share_deltas": args.share_deltas,
        "seed": args.seed,
        "device": args.device,
        "out": args.out or (f"results/{inline.name}" if inline is not None else None),
    }
    try:
        return config.with_overrides(base, **overrides)
    except ConfigError as err:
        key = err.path[0] if err.path else None
        if overrides.get(key) is not None:
            raise ConfigError((_FLAGS[key], *err.path[1:]), err.message) from None
        if source.endswith(".json"):
            raise err.located(source) from None
        raise config.locate(err, source) from None


def make_algorithm(name: str, threshold: str) -> Algorithm:
    """The registered algorithm ``name``, with the stopping-threshold family ``threshold`` if its
    entry has threshold families (DP-SE has none).

    Raises:
        ValueError: ``name`` is not registered.
    """
    return AlgorithmSpec(name, name).build(threshold)


def reported_tau(alg: Algorithm, counts: np.ndarray) -> np.ndarray:
    """``reported_tau`` of runs with final ``counts`` ``(n, K)``: the algorithm's
    `jaxbai.base.ReportsSamples.reported_samples` where it has one, else −1 (int64 ``(n,)``)."""
    from jaxbai.base import ReportsSamples

    counts = np.asarray(counts, np.int64)
    if not isinstance(alg, ReportsSamples):
        return np.full(len(counts), -1, np.int64)
    return np.asarray(alg.reported_samples(counts), np.int64).reshape(len(counts))


def _instance_rows(
    spec: AlgorithmSpec, sweep_config: SweepConfig, instance: InstanceSpec, res, rows: slice
) -> results.Table:
    """The per-run rows of one instance's block of a grid result (order: ε, δ, run)."""
    import jaxbai

    jobs = res.jobs
    n = len(jobs.run[rows])
    entry = jaxbai.ALGORITHMS.get_entry(spec.algorithm)
    counts = np.asarray(res.counts[rows], np.int64)
    return {
        "algorithm": np.full(n, spec.label, dtype=object),
        "privacy": np.full(n, entry.privacy, dtype=object),
        "instance": np.full(n, instance.name, dtype=object),
        "means": np.full(n, results.format_means(instance.means), dtype=object),
        "K": np.full(n, instance.num_arms, np.int64),
        "epsilon": np.asarray(jobs.epsilon[rows], np.float64),
        "delta": np.asarray(jobs.delta[rows], np.float64),
        "threshold": np.full(n, spec.threshold_of(sweep_config.threshold), dtype=object),
        "seed": np.full(n, sweep_config.seed, np.int64),
        "run": np.asarray(jobs.run[rows], np.int64),
        "tau": np.asarray(res.tau[rows], np.int64),
        "recommendation": np.asarray(res.recommendation[rows], np.int64),
        "correct": np.asarray(res.correct[rows], bool),
        "censored": np.asarray(res.censored[rows], bool),
        "rounds": np.asarray(res.rounds[rows], np.int64),
        "counts": results.format_counts(counts),
        "reported_tau": reported_tau(spec.build(sweep_config.threshold), counts),
    }


def run_table(
    spec: AlgorithmSpec, sweep_config: SweepConfig, grid_results: Sequence[GridResult]
) -> results.Table:
    """The per-run rows of one algorithm in the configuration's instance order (then ε, δ,
    run), from its grid results (one per group of `instance_groups`).

    The ``threshold`` column is ``"n/a"`` for an algorithm without threshold families.
    """
    blocks = {}
    for group, res in zip(instance_groups(sweep_config.instances), grid_results, strict=True):
        per_instance = len(res.jobs) // len(group)
        for k, i in enumerate(group):
            rows = slice(k * per_instance, (k + 1) * per_instance)
            blocks[i] = _instance_rows(spec, sweep_config, sweep_config.instances[i], res, rows)
    return results.concat([blocks[i] for i in range(len(sweep_config.instances))])


def _checkpoint(sweep_config: SweepConfig, label: str, group: tuple[int, ...]) -> str:
    """``checkpoints/<label>.npz``; with several groups, one file per family and K."""
    name = label
    if len(instance_groups(sweep_config.instances)) > 1:
        first = sweep_config.instances[group[0]]
        name = f"{label}.{first.family}-K{first.num_arms}"
    return os.path.join(sweep_config.out, "checkpoints", f"{name}.npz")


def run_algorithm(
    spec: AlgorithmSpec, sweep_config: SweepConfig, args: argparse.Namespace
) -> list[GridResult]:
    """One engine grid per group of instances (same family and K), each with its checkpoint;
    stops after a group that did not finish (``--max-chunks``)."""
    from jaxbai import engine

    alg = spec.build(sweep_config.threshold)
    eps = sweep_config.epsilons_for(spec)
    grid_results = []
    for group in instance_groups(sweep_config.instances):
        instances = [sweep_config.instances[i].build() for i in group]
        jobs = engine.grid_jobs(instances, eps, sweep_config.deltas, sweep_config.runs)
        if not args.quiet:
            print(f"[{spec.label}] {len(jobs)} runs", file=sys.stderr)
        res = engine.run_grid(
            alg,
            jobs,
            seed=sweep_config.seed,
            max_samples=sweep_config.max_samples,
            draws=sweep_config.draws,
            share_deltas=sweep_config.share_deltas,
            device=sweep_config.device,
            checkpoint=_checkpoint(sweep_config, spec.label, group),
            resume=args.resume,
            progress=not args.quiet,
            chunk_steps=args.chunk_steps,
            max_chunks=args.max_chunks,
        )
        grid_results.append(res)
        if unfinished(res):
            break
    return grid_results


def engine_stats(grid_results: Sequence[GridResult]) -> dict:
    """Wall time and throughput of one algorithm's engine calls, together."""
    samples = sum(r.samples for r in grid_results)
    wall = sum(r.wall_time for r in grid_results)
    lane_steps = sum(r.lane_steps for r in grid_results)
    return {
        "jobs": sum(len(r.jobs) for r in grid_results),
        "censored": int(sum(r.censored.sum() for r in grid_results)),
        "wall_time_s": wall,
        "samples": samples,
        "lane_steps": lane_steps,
        "efficiency": samples / max(lane_steps, 1),
        "samples_per_s": samples / max(wall, 1e-9),
        "shared_deltas": any(r.shared_deltas for r in grid_results),
    }


def unfinished(res: GridResult) -> bool:
    """Did the engine stop (``--max-chunks``) before every job finished? (τ = 0 marks them.)"""
    return bool((res.censored & (res.tau == 0)).any())


def write_outputs(
    sweep_config: SweepConfig, table: results.Table, sidecar: dict
) -> dict[str, object]:
    """CSV, summary, JSON, figures and report; returns the paths written."""
    from experiments import plot, report, stats

    out = sweep_config.out
    paths: dict[str, object] = {
        "runs": os.path.join(out, "runs.csv"),
        "summary": os.path.join(out, "summary.csv"),
        "sidecar": os.path.join(out, "sweep.json"),
        "report": os.path.join(out, "report.md"),
    }
    results.write_csv(table, paths["runs"], results.RUN_COLUMNS)
    targets = stats.allocation_targets(table, stats.algorithms_of(sweep_config))
    summary = stats.summarize(table, targets)
    results.write_csv(summary, paths["summary"], stats.SUMMARY_COLUMNS)
    paths["figures"] = plot.draw_all(summary, os.path.join(out, "figures"), sweep_config)
    text, _ = report.report_from_csv(paths["runs"], sweep_config)
    with open(paths["report"], "w") as f:
        f.write(text + "\n")
    sidecar["files"] = {k: v for k, v in paths.items() if k != "sidecar"}
    results.write_json(sidecar, paths["sidecar"])
    return paths


def prepare_out(out: str) -> None:
    """Create ``out/checkpoints`` and check that both directories take files, before anything
    compiles.

    Raises:
        ValueError: naming the path that cannot be created or written (``out`` is a file, a
            read-only directory, …).
    """
    checkpoints = os.path.join(out, "checkpoints")
    try:
        os.makedirs(checkpoints, exist_ok=True)
        for directory in (out, checkpoints):
            fd, probe = tempfile.mkstemp(dir=directory, prefix=".write-test-")
            os.close(fd)
            os.remove(probe)
    except OSError as err:
        path = err.filename if err.filename is not None else out
        raise ValueError(f"output directory {out}: {path}: {err.strerror}") from None


def sweep(sweep_config: SweepConfig, args: argparse.Namespace, argv: Sequence[str]) -> int:
    """Run every algorithm, then write the outputs; returns the exit code."""
    started = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
    clock = time.perf_counter()
    tables, per_algorithm = [], {}
    for spec in sweep_config.algorithms:
        grid_results = run_algorithm(spec, sweep_config, args)
        if unfinished(grid_results[-1]):
            print(f"sweep: interrupted during {spec.label}; rerun with --resume", file=sys.stderr)
            return EXIT_INTERRUPTED
        tables.append(run_table(spec, sweep_config, grid_results))
        per_algorithm[spec.label] = engine_stats(grid_results)
    if not distributed.is_writer():  # every process holds the results; process 0 writes them
        return 0
    engine_wall = sum(s["wall_time_s"] for s in per_algorithm.values())
    samples = sum(s["samples"] for s in per_algorithm.values())
    sidecar = {
        "started_utc": started,
        "command": ["python", "-m", "experiments.sweep", *argv],
        "config": sweep_config.to_dict(),
        "out": sweep_config.out,
        "versions": results.package_versions(),
        "jax": results.jax_environment(),
        "processes": distributed.environment(),
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
    paths = write_outputs(sweep_config, table, sidecar)
    print(
        f"{len(table['tau'])} runs in {sidecar['wall_time_s']:.0f}s "
        f"({sidecar['samples_per_s']:.3g} samples/s on {sidecar['jax']['backend']})"
    )
    for key in ("runs", "summary", "sidecar", "report"):
        print(f"{key:>8}: {paths[key]}")
    print(f" figures: {os.path.join(sweep_config.out, 'figures')}/")
    return 0


def main(argv: Sequence[str] | None = None, *, supervised: bool = False) -> int:
    """CLI entry point; returns the exit code (2: bad arguments or a process of a
    jax.distributed run that died or never joined, 3: interrupted).

    ``supervised``: run a jax.distributed sweep in a child process that
    `experiments.distributed.supervise` watches (the command line does; the Python API runs
    in this process, with the algorithms registered in it).
    """
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser()
    args = parser.parse_args(argv)
    if (args.max_chunks is not None and args.max_chunks < 1) or args.chunk_steps < 1:
        parser.error("--max-chunks and --chunk-steps must be positive")
    try:
        sweep_config = config_from_args(args)
        if supervised and distributed.needs_supervisor(args):
            return distributed.supervise("experiments.sweep", argv, args)
        distributed.initialize(args)
    except ValueError as err:
        parser.error(str(err))
    from jaxbai import engine

    try:
        if sweep_config.device is not None:
            engine.select_devices(sweep_config.device)
        if args.plan:
            return plan.print_plan(sweep_config, args.num_processes or 1)
        prepare_out(sweep_config.out)  # after every check that writes nothing
        return sweep(sweep_config, args, argv)
    except ValueError as err:  # e.g. a checkpoint written for another grid, or damaged
        parser.error(str(err))
    except OSError as err:  # e.g. a full disk while writing a checkpoint or the outputs
        parser.error(f"{err.filename}: {err.strerror}" if err.filename else str(err))
    return EXIT_USAGE


if __name__ == "__main__":
    sys.exit(main(supervised=True))
