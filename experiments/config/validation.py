"""Parsing and validation of experiment files, and overrides of a configuration.

`parse` turns the mapping of an experiment file (TOML or the ``config`` of a ``sweep.json``)
into a `SweepConfig`, checking every key's value (`experiments.config.values`); `validate`
checks a configuration against the algorithm registry as it is now (options, threshold
families, instances an algorithm can take, names, the grid's size in memory);
`with_overrides` replaces fields (command-line flags) and validates again. Errors are
`ConfigError` naming the key; `experiments.config.files` locates them in a file.

Examples:
    >>> cfg = parse({"instances": ["mu1"], "algorithms": ["ttucb"], "runs": 10}, "demo")
    >>> cfg.name, cfg.out, grid_runs(cfg)
    ('demo', 'results/demo', 10)
    >>> with_overrides(cfg, runs=20, seed=None).runs
    20
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

from experiments.config.errors import ConfigError
from experiments.config.schema import (
    FIGURE_KINDS,
    FORMATS,
    GLOBAL_EPSILONS,
    LOCAL_EPSILONS,
    PLOT_KEYS,
    RUN_BYTES,
    TOP_KEYS,
    PlotOptions,
    SweepConfig,
)
from experiments.config.specs import (
    AlgorithmSpec,
    InstanceSpec,
    algorithm_from_entry,
    check_algorithm,
    check_file_name,
    instance_from_entry,
    paper_instance,
    registry,
)
from experiments.config.values import boolean, check_keys, choice, grid, integer, string
from jaxbai import PAPER_INSTANCES
from jaxbai import plugins as jaxbai_plugins
from jaxbai.checks import COUNT_MAX, SMALLEST_EPSILON, memory_bytes
from jaxbai.engine import DRAWS, KERNELS

__all__ = [
    "grid_runs",
    "memory_bytes",
    "parse",
    "select_algorithms",
    "select_instances",
    "validate",
    "with_overrides",
]


_SEED_MAX = 2**32 - 1
_DEVICES = ("cpu", "gpu")


# ----------------------------------------------------------------------------- entries
def _epsilons(value: object, key: str) -> tuple[float, ...]:
    """An ε grid: distinct finite numbers ≥ `jaxbai.checks.SMALLEST_EPSILON`."""
    return grid(value, (key,), f">= {SMALLEST_EPSILON:g} (finite)", lambda v: v >= SMALLEST_EPSILON)


def _deltas(value: object) -> tuple[float, ...]:
    """The δ grid: distinct numbers in (0, 1)."""
    return grid(value, ("deltas",), "in (0, 1)", lambda v: 0 < v < 1)


def _entries(data: Mapping, key: str) -> list:
    """The non-empty ``instances`` or ``algorithms`` list of a file."""
    value = data.get(key)
    if not isinstance(value, list) or not value:
        raise ConfigError((key,), f"must be a non-empty list of names or tables, got {value!r}")
    return value


def _plot_options(data: object) -> PlotOptions:
    """The ``[plot]`` table."""
    if not isinstance(data, Mapping):
        raise ConfigError(("plot",), f"must be a table, got {data!r}")
    check_keys(data, PLOT_KEYS, ("plot",))
    figures = data.get("figures", [])
    formats = data.get("formats", list(PlotOptions.formats))
    for key, values, choices in (
        ("figures", figures, FIGURE_KINDS),
        ("formats", formats, FORMATS),
    ):
        if not isinstance(values, list) or any(v not in choices for v in values):
            raise ConfigError(("plot", key), f"must be a list of {list(choices)}, got {values!r}")
    if not formats:
        raise ConfigError(("plot", "formats"), "must name at least one format")
    dpi = integer(data.get("dpi", PlotOptions.dpi), ("plot", "dpi"), 30, 1200)
    return PlotOptions(tuple(figures), tuple(formats), dpi)


def _epsilon_grids(data: Mapping) -> tuple[tuple[float, ...], tuple[float, ...]]:
    """The local and global ε grids (``epsilons`` sets both)."""
    if "epsilons" in data:
        clash = [k for k in ("local_epsilons", "global_epsilons") if k in data]
        if clash:
            raise ConfigError(("epsilons",), f"sets both ε grids; do not also give {clash[0]}")
        epsilons = _epsilons(data["epsilons"], "epsilons")
        return epsilons, epsilons
    local = data.get("local_epsilons", LOCAL_EPSILONS)
    glob = data.get("global_epsilons", GLOBAL_EPSILONS)
    return _epsilons(local, "local_epsilons"), _epsilons(glob, "global_epsilons")


# ----------------------------------------------------------------------------- parse, validate
def parse(data: Mapping, name: str = "config", *, check: bool = True) -> SweepConfig:
    """The configuration of a parsed experiment file (a TOML or JSON mapping).

    Args:
        data: the file's mapping.
        name: the name used when the file has no ``name`` key (e.g. the file's stem).
        check: also `validate` it against the algorithm registry.

    Raises:
        ConfigError: naming the offending key (not yet located in a file: see
            `experiments.config.loads`).
    """
    if not isinstance(data, Mapping):
        raise ConfigError((), f"an experiment file is a table of keys, got {type(data).__name__}")
    check_keys(data, TOP_KEYS, ())
    plugins = _plugins(data.get("plugins", []), check=check)
    instances = tuple(
        instance_from_entry(e, ("instances", i)) for i, e in enumerate(_entries(data, "instances"))
    )
    algorithms = tuple(
        algorithm_from_entry(e, ("algorithms", i))
        for i, e in enumerate(_entries(data, "algorithms"))
    )
    local, glob = _epsilon_grids(data)
    device = data.get("device")
    config = SweepConfig(
        name=check_file_name(string(data.get("name", name), ("name",)), ("name",)),
        description=string(data.get("description", ""), ("description",)),
        instances=instances,
        algorithms=algorithms,
        local_epsilons=local,
        global_epsilons=glob,
        deltas=_deltas(data.get("deltas", [0.01])),
        runs=integer(data.get("runs", 1000), ("runs",), 1, COUNT_MAX),
        threshold=string(data.get("threshold", "heuristic"), ("threshold",)),
        max_samples=integer(data.get("max_samples", 10**9), ("max_samples",), 1, COUNT_MAX),
        draws=string(data.get("draws", "auto"), ("draws",)),
        share_deltas=boolean(data.get("share_deltas", False), ("share_deltas",)),
        kernel=string(data.get("kernel", "auto"), ("kernel",)),
        seed=integer(data.get("seed", 0), ("seed",), 0, _SEED_MAX),
        device=None if device is None else choice(device, ("device",), _DEVICES),
        out=string(data.get("out") or f"results/{data.get('name', name)}", ("out",)),
        plot=_plot_options(data.get("plot", {})),
        plugins=plugins,
    )
    return validate(config) if check else config


def _plugins(value: object, *, check: bool) -> tuple[str, ...]:
    """The ``plugins`` list of module names; with ``check``, each must have been loaded by the
    command line (`jaxbai.plugins.require_loaded`): a file never imports code."""
    if not isinstance(value, list) or not all(isinstance(m, str) and m for m in value):
        raise ConfigError(("plugins",), f"must be a list of module names, got {value!r}")
    if check:
        try:
            jaxbai_plugins.require_loaded(value)
        except ValueError as err:
            raise ConfigError(("plugins",), str(err)) from None
    return tuple(value)


def _check_names(values: Sequence[str], key: str) -> None:
    """Names that are file names (`experiments.config.specs.NAME_PATTERN`), unique ignoring case (a
    label names checkpoint files, which a case-insensitive file system would mix up)."""
    seen: dict[str, str] = {}
    for i, value in enumerate(values):
        path = (key, i, "name")
        check_file_name(value, path)
        first = seen.get(value.casefold())
        if first is not None:
            clash = "appears twice" if first == value else f"differs from {first!r} only in case"
            raise ConfigError(path, f"{value!r} {clash}; names must be unique")
        seen[value.casefold()] = value


def grid_runs(config: SweepConfig) -> int:
    """The runs of a sweep: instances × ε × δ × runs of every algorithm."""
    cells = sum(len(config.epsilons_for(spec)) for spec in config.algorithms)
    return cells * len(config.instances) * len(config.deltas) * config.runs


def _check_size(config: SweepConfig) -> None:
    """Refuse a grid whose runs would not fit in memory (`RUN_BYTES` each), before it starts."""
    runs, memory = grid_runs(config), memory_bytes()
    if memory is not None and runs * RUN_BYTES > memory:
        raise ConfigError(
            ("runs",),
            f"the grid has {runs:,} runs, whose results need about "
            f"{runs * RUN_BYTES / 2**30:,.1f} GiB ({RUN_BYTES} bytes a run), more than this "
            f"machine's {memory / 2**30:,.1f} GiB of memory; lower runs or the number of "
            "instances, algorithms, ε or δ",
        )


def _check_pair(alg, index: int, spec: AlgorithmSpec, instance: InstanceSpec) -> None:
    """Can ``alg`` run on ``instance``? (rewards in [0, 1]; sub-Gaussian σ for Gaussian)."""
    path = ("algorithms", index)
    if alg.info.unit_interval and not instance.unit_interval:
        raise ConfigError(
            path,
            f"{spec.label} needs rewards in [0, 1] for its privacy, but instance "
            f"{instance.name!r} is {instance.describe()} (unbounded); it takes bernoulli and "
            "beta instances (run Gaussian ones with non-private algorithms)",
        )
    sigma = getattr(alg, "sigma", None)
    if instance.family == "gaussian" and sigma is not None and sigma < instance.sigma:
        takes_sigma = "sigma" in registry()[spec.algorithm].options
        raise ConfigError(
            (*path, "sigma") if takes_sigma else path,
            f"{spec.label} assumes {sigma:g}-sub-Gaussian rewards, below σ = "
            f"{instance.sigma:g} of instance {instance.name!r}: δ-correctness would not hold;"
            f" valid: sigma >= {instance.sigma:g}"
            + ("" if takes_sigma else f" ({spec.algorithm} has no sigma option)"),
        )


def _check_values(config: SweepConfig) -> None:
    """The numeric fields (set by a file or overridden on the command line)."""
    _epsilons(config.local_epsilons, "local_epsilons")
    _epsilons(config.global_epsilons, "global_epsilons")
    _deltas(config.deltas)
    integer(config.runs, ("runs",), 1, COUNT_MAX)
    integer(config.max_samples, ("max_samples",), 1, COUNT_MAX)
    integer(config.seed, ("seed",), 0, _SEED_MAX)
    choice(config.draws, ("draws",), DRAWS)
    boolean(config.share_deltas, ("share_deltas",))
    choice(config.kernel, ("kernel",), KERNELS)
    if config.device is not None:
        choice(config.device, ("device",), _DEVICES)


def validate(config: SweepConfig) -> SweepConfig:
    """Check a configuration against the algorithm registry as it is now (nothing compiles).

    Returns the configuration with algorithm options coerced to their factories' types.

    Raises:
        ConfigError: a value out of its range (an integer given as a float, an ε or δ given
            twice); an unknown algorithm, option or threshold family; an option value the
            factory rejects; an instance an algorithm cannot take; a name that is not a file
            name (`experiments.config.specs.NAME_PATTERN`) or is used twice; a grid whose runs would
            not fit in memory (`RUN_BYTES` each).
    """
    from jaxbai.thresholds import THRESHOLD_FAMILIES

    _check_values(config)
    choice(config.threshold, ("threshold",), THRESHOLD_FAMILIES)
    for key, values in (("instances", config.instances), ("algorithms", config.algorithms)):
        if not values:
            raise ConfigError((key,), "must not be empty")
    _check_names(config.instance_names, "instances")
    _check_names(config.algorithm_labels, "algorithms")
    algorithms = tuple(
        check_algorithm(spec, i, config.threshold) for i, spec in enumerate(config.algorithms)
    )
    for i, spec in enumerate(algorithms):
        alg = spec.build(config.threshold)
        for instance in config.instances:
            _check_pair(alg, i, spec, instance)
    config = dataclasses.replace(config, algorithms=algorithms)
    _check_size(config)
    return config


# ----------------------------------------------------------------------------- overrides
def select_instances(config: SweepConfig, names: Sequence[str]) -> tuple[InstanceSpec, ...]:
    """Instances by name: the configuration's own first, then the paper's (Appendix I)."""
    own = {i.name: i for i in config.instances}
    for name in names:
        if name not in own and name not in PAPER_INSTANCES:
            raise ConfigError(
                ("instances",),
                f"unknown instance {name!r}; this grid defines {list(own)}, the paper's are "
                f"{list(PAPER_INSTANCES)}",
            )
    return tuple(own[n] if n in own else paper_instance(n) for n in names)


def select_algorithms(config: SweepConfig, names: Sequence[str]) -> tuple[AlgorithmSpec, ...]:
    """Algorithms by label: the configuration's own first, then registry names."""
    own = {a.label: a for a in config.algorithms}
    return tuple(own.get(n, AlgorithmSpec(n, n)) for n in names)


def with_overrides(config: SweepConfig, **overrides: Any) -> SweepConfig:
    """``config`` with fields replaced (None values are ignored), then validated.

    ``instances`` and ``algorithms`` may be given as names (`select_instances`,
    `select_algorithms`) or specs; ``threshold`` replaces the threshold options of every
    algorithm too (a command-line flag overrides the file).

    Raises:
        ConfigError: as `validate`.
    """
    fields = {k: v for k, v in overrides.items() if v is not None}
    for key, select in (("instances", select_instances), ("algorithms", select_algorithms)):
        if key in fields:
            specs = [v for v in fields[key] if not isinstance(v, str)]
            names = [v for v in fields[key] if isinstance(v, str)]
            fields[key] = select(config, names) + tuple(specs)
    if "threshold" in fields:
        algorithms = fields.get("algorithms", config.algorithms)
        fields["algorithms"] = tuple(
            dataclasses.replace(a, options=tuple(o for o in a.options if o[0] != "threshold"))
            for a in algorithms
        )
    for key in ("local_epsilons", "global_epsilons", "deltas"):
        if key in fields:
            fields[key] = tuple(fields[key])
    return validate(dataclasses.replace(config, **fields))
