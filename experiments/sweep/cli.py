"""The sweep's command line, ``python -m experiments.sweep``: a thin layer over its API.

Every flag is defined in `build_parser`; `config_from_args` turns the parsed flags into a
`experiments.config.SweepConfig` (the preset or file, then the flags), and `main` runs it with
`experiments.sweep.run`, or prints the cost plan (``--plan``, `experiments.sweep.plan`), or
launches and supervises the processes of a ``jax.distributed`` run
(`experiments.sweep.distributed`).

Algorithm names are keys of the registry `jaxbai.ALGORITHMS`, read when `main` is called after
the plugins (``--plugin MODULE``, installed entry points: `jaxbai.plugins`; a file's
``plugins`` only names them) are loaded, so an algorithm registered by a plugin or with
``jaxbai.register`` beforehand runs like the paper's (on the ε grid
of its trust model, with ``--threshold`` if it has threshold families); ``main(argv)`` takes
the command line as a list and returns the exit code.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import signal
import sys
from collections.abc import Sequence

import experiments.sweep as sweep
from experiments import config
from experiments.config import ConfigError, SweepConfig, grids
from experiments.config.arguments import EXIT_USAGE, OneLineParser
from experiments.config.specs import (
    FAMILIES,
    INSTANCE_KEYS,
    InstanceSpec,
    derived_name,
    instance_from_mapping,
)
from experiments.sweep import distributed, engine_runs, plan
from jaxbai import compilation, plugins
from jaxbai.engine import KERNELS

__all__ = [
    "DESCRIPTION",
    "EXIT_INTERRUPTED",
    "EXIT_USAGE",
    "build_parser",
    "command",
    "config_from_args",
    "inline_instance",
    "main",
    "print_summary",
]

EXIT_INTERRUPTED = 3

DESCRIPTION = """\
Run a grid of algorithms x instances x ε x δ x runs through the engine, then write
under --out (default results/<name>): runs.csv (one row per run), summary.csv (one row
per cell: mean, spread, error rate with its 95% interval, censored runs, rounds of
adaptivity, allocations), sweep.json (the resolved configuration: --config on it reruns
the grid exactly), figures/ (PNG and PDF), report.md (the claims of Section 5 with
verdicts) and checkpoints/ (--resume continues from them).

Without arguments it runs the quick preset: global DP on mu1 and mu2, a few algorithms
at a few ε, 100 runs (about a minute on two CPU cores). The grid comes from a preset
(--preset) or an experiment file (--config FILE.toml; docs/experiments.md has the
schema); the grid options below override its values. --means (with --family) adds an
instance of your own. --plan prints the predicted cost instead of running.
"""
"""The command's description in ``--help`` (plain text; the presets follow it)."""


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
    parser = OneLineParser(
        prog="python -m experiments.sweep",
        description=DESCRIPTION + "\npresets (experiments/config/grids/<name>.toml):\n" + presets,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    source = parser.add_argument_group("grid source").add_mutually_exclusive_group()
    source.add_argument("--preset", help="a shipped grid (default: quick)")
    source.add_argument("--config", help="an experiment file (TOML) or a sweep's sweep.json")
    grid = parser.add_argument_group("grid (overrides the preset or file)")
    add = grid.add_argument
    add(
        "--instances",
        type=_names,
        nargs="+",
        metavar="NAME",
        help="instance names: the file's or mu1..mu6",
    )
    add(
        "--means",
        type=_floats,
        nargs="+",
        metavar="MU",
        help="an instance of your own: its arms' means",
    )
    add("--family", choices=FAMILIES, help="family of the --means instance (default: bernoulli)")
    add("--sigma", type=float, help="σ of a --family gaussian instance")
    add("--concentration", type=float, help="a + b of a --family beta instance given by means")
    add(
        "--beta-a",
        type=_floats,
        nargs="+",
        metavar="A",
        help="shapes a of a --family beta instance",
    )
    add(
        "--beta-b",
        type=_floats,
        nargs="+",
        metavar="B",
        help="shapes b of a --family beta instance",
    )
    add("--runs", type=int, help="runs per (instance, ε, δ) cell")
    add(
        "--epsilons",
        type=_floats,
        nargs="+",
        metavar="EPS",
        help="ε grid for every private algorithm",
    )
    add("--deltas", type=_floats, nargs="+", metavar="DELTA", help="risks δ (default: 0.01)")
    add(
        "--algorithms",
        type=_names,
        nargs="+",
        metavar="NAME",
        help="the file's labels or registry names",
    )
    add("--threshold", choices=("heuristic", "theory"), help="every algorithm's threshold family")
    add("--max-samples", type=int, help="per-run sample budget (runs hitting it are censored)")
    add(
        "--draws",
        help="auto, per_sample or per_episode: rewards one by one, or one sum per arm and "
        "episode for episodic algorithms (default: auto, per episode where the instance allows)",
    )
    add(
        "--share-deltas",
        action=argparse.BooleanOptionalAction,
        help="one trajectory per (instance, ε, run) tested against every δ, for algorithms "
        "whose sampling ignores δ (DP-SE runs each δ; default: the file's, else off)",
    )
    add(
        "--kernel",
        choices=KERNELS,
        help="the engine's lane program: xla, fused (a Pallas kernel running many steps per "
        "launch; interpreted on a CPU) or auto (= xla); the same numbers (default: auto)",
    )
    add("--seed", type=int, help="master seed (default: 0)")
    add("--device", choices=("cpu", "gpu"), help="platform (default: JAX's default)")
    run = parser.add_argument_group("this invocation")
    run.add_argument(
        "--out",
        metavar="DIR",
        help="output directory (default: results/<name>; results/<instance> with --means)",
    )
    run.add_argument(
        "--resume", action="store_true", help="continue from the checkpoints (the same grid)"
    )
    run.add_argument(
        "--overwrite",
        action="store_true",
        help="replace an earlier sweep's results in --out (refused without this or --resume)",
    )
    plugins.add_argument(run)
    compilation.add_argument(run)
    run.add_argument(
        "--no-figures",
        action="store_true",
        help="tables and report only (an exploratory sweep); python -m experiments.plot "
        "OUT/runs.csv draws the figures later",
    )
    run.add_argument("--quiet", action="store_true", help="no progress bar")
    run.add_argument(
        "--plan",
        action="store_true",
        help="print the predicted samples and wall time per cell after a short pilot "
        "(experiments.sweep.plan); run nothing else",
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
    named by `experiments.config.specs.derived_name`.

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
    "kernel": "--kernel",
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
        "kernel": args.kernel,
        "seed": args.seed,
        "device": args.device,
        "out": args.out or (f"results/{inline.name}" if inline is not None else None),
        "plugins": tuple(dict.fromkeys((*base.plugins, *args.plugin))) if args.plugin else None,
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


def main(argv: Sequence[str] | None = None, *, supervised: bool = False) -> int:
    """CLI entry point; returns the exit code (2: bad arguments or a process of a
    jax.distributed run that died or never joined, 3: interrupted).

    ``supervised``: run a jax.distributed sweep in a child process that
    `experiments.sweep.distributed.supervise` watches (the command line does; the Python API runs
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
    compilation.from_arguments(args)
    if args.plan:
        from jaxbai import engine

        try:
            if sweep_config.device is not None:
                engine.select_devices(sweep_config.device)
            return plan.print_plan(sweep_config, args.num_processes or 1)
        except ValueError as err:
            parser.error(str(err))
    try:
        result = sweep.run(
            sweep_config,
            out=sweep_config.out,
            resume=args.resume,
            overwrite=args.overwrite,
            progress=not args.quiet,
            command=["python", "-m", "experiments.sweep", *argv],
            chunk_steps=args.chunk_steps,
            max_chunks=args.max_chunks,
            figures=not args.no_figures,
        )
    except sweep.Interrupted as err:
        resume = distributed.resume_command("experiments.sweep", argv)
        print(f"sweep: {err}; rerun with {resume}", file=sys.stderr)
        return EXIT_INTERRUPTED
    except ValueError as err:  # e.g. a checkpoint written for another grid, or damaged
        parser.error(str(err))
    except OSError as err:  # e.g. a full disk while writing a checkpoint or the outputs
        parser.error(f"{err.filename}: {err.strerror}" if err.filename else str(err))
    if result.paths:
        print_summary(result)
    return 0


def command(argv: Sequence[str] | None = None) -> int:
    """``python -m experiments.sweep`` and the ``jaxbai-sweep`` script: `main`, with a
    jax.distributed run supervised (``supervised=True``); returns the exit code.

    Ctrl-C (SIGINT) and SIGTERM end it with one line on stderr, the command that resumes it,
    and exit status 130 or 143 (the engine writes its checkpoints first, so the resumed sweep
    restores what had finished).
    """
    argv = list(sys.argv[1:] if argv is None else argv)
    previous = signal.signal(signal.SIGTERM, _terminate)
    try:
        return main(argv, supervised=True)
    except KeyboardInterrupt as err:
        resume = distributed.resume_command("experiments.sweep", argv)
        print(f"interrupted: rerun with {resume}", file=sys.stderr)
        return 143 if isinstance(err, Terminated) else 130
    finally:
        signal.signal(signal.SIGTERM, previous)


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised where Ctrl-C's KeyboardInterrupt would be, so that it is handled the
    same way (checkpoints written, one line, the resume command)."""


def _terminate(signum: int, frame: object) -> None:
    raise Terminated


def print_summary(result: sweep.SweepResult) -> None:
    """The lines the command prints after a sweep: runs, time, throughput, files written."""
    import jax

    engine = result.engine.values()
    wall = sum(s["wall_time_s"] for s in engine)
    samples = sum(s["samples"] for s in engine)
    resumed = sum(s["resumed_jobs"] for s in engine)
    rate = engine_runs.rate(samples, wall)
    speed = "none simulated" if rate is None else f"{rate:.3g} samples/s"
    restored = f", {resumed} jobs restored from checkpoints" if resumed else ""
    print(f"{len(result.runs)} runs in {wall:.0f}s ({speed} on {jax.default_backend()}{restored})")
    for key in ("runs", "summary", "sidecar", "report"):
        print(f"{key:>8}: {result.paths[key]}")
    if result.figures:
        print(f" figures: {os.path.join(result.config.out, 'figures')}/")
    else:
        runs = result.paths["runs"]
        print(f" figures: not drawn (python -m experiments.plot {runs} draws them)")
