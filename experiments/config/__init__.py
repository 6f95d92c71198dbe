"""Sweep configurations: experiment files (TOML), their schema, validation and the resolved form.

An experiment file names instances (the paper's by name, or your own: family, means, …, any
K ≥ 2), algorithms (registry names, or tables with a label and factory options), the ε grid of
each trust model, δ, runs, the sample budget, seed, device and plot options::

    description = "my arms, Bernoulli and Gaussian"
    instances = [
      "mu1",                                              # a paper instance (Appendix I)
      {name = "doses", means = [0.31, 0.30, 0.12]},       # Bernoulli by default
      {name = "noisy", family = "gaussian", means = [1.0, 0.8, 0.5], sigma = 0.3},
    ]
    algorithms = [
      "ttucb",
      {name = "adap_tt_b03", algorithm = "adap_tt", beta = 0.3},
      {name = "adap_tt_star", threshold = "theory"},
    ]
    global_epsilons = [0.1, 1.0, 10.0]
    runs = 100

Keys left out take the paper's values (Appendix I: the ε grids `LOCAL_EPSILONS` and
`GLOBAL_EPSILONS`, δ = 0.01, 1000 runs, 10⁹ samples, the heuristic thresholds, seed 0).
Everything is checked before anything runs (`validate`); an error names the file, the line
(`tomllib` gives none for values, so it is found from the key), the key and the valid range.
``SweepConfig.to_dict`` is the resolved configuration in the same schema: the sweep records it
in ``sweep.json``, and ``--config results/…/sweep.json`` reads it back to rerun exactly.
Importing it imports `jaxbai` (whose constants it uses) but starts no JAX backend.

Example:
    >>> cfg = loads('instances = ["mu1"]\\nalgorithms = ["ttucb"]\\nruns = 10', name="demo")
    >>> cfg.runs, cfg.instance_names, cfg.epsilons_for("ttucb")
    (10, ('mu1',), (inf,))
    >>> try:
    ...     loads('instances = ["mu1"]\\nalgorithms = ["ttucb"]\\nruns = 0', source="my.toml")
    ... except ConfigError as err:
    ...     print(err)
    my.toml:3: runs: must be an integer in [1, 2147483647], got 0
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import sys
from collections.abc import Mapping, Sequence
from typing import Any

from experiments.config import lines
from experiments.config.specs import (
    AlgorithmSpec,
    ConfigError,
    InstanceSpec,
    algorithm_from_entry,
    check_algorithm,
    check_file_name,
    instance_from_entry,
    paper_instance,
    registry,
)
from jaxbai import PAPER_INSTANCES
from jaxbai._validate import COUNT_MAX
from jaxbai.engine import DRAWS, KERNELS

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

__all__ = [
    "FIGURE_KINDS",
    "GLOBAL_EPSILONS",
    "LOCAL_EPSILONS",
    "RUN_BYTES",
    "TOP_KEYS",
    "PlotOptions",
    "SweepConfig",
    "grid_runs",
    "load",
    "load_sidecar",
    "loads",
    "locate",
    "memory_bytes",
    "parse",
    "select_algorithms",
    "select_instances",
    "validate",
    "with_overrides",
]

GLOBAL_EPSILONS: tuple[float, ...] = (
    0.001, 0.005, 0.01, 0.05, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0, 10.0, 100.0, 1000.0,
)  # fmt: skip
"""ε grid of the global-DP experiments (Appendix I)."""

LOCAL_EPSILONS: tuple[float, ...] = (
    0.01, 0.05, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0, 10.0, 100.0,
)  # fmt: skip
"""ε grid of the local-DP experiments (Appendix I)."""

RUN_BYTES = 2048
"""Memory a sweep holds per run, at its peak (measured: the engine's per-job arrays, the run
table, and its CSV read back by the report); `validate` refuses a grid whose runs would need
more than the machine's memory (`memory_bytes`)."""

FIGURE_KINDS = (
    "local",
    "global",
    "global_linear",
    "nonprivate",
    "rounds_local",
    "rounds_global",
    "rounds_nonprivate",
    "allocations",
    "log_delta",
)
"""Figures `experiments.analysis.plot` can draw (``[plot] figures`` selects among them;
``allocations``
is one PNG per instance of the empirical proportions against ω*; ``log_delta``, τ against
log(1/δ) with both bounds, for curves with at least 3 δ)."""

_FORMATS = ("png", "pdf", "svg")
_PLOT_KEYS = ("figures", "formats", "dpi")
TOP_KEYS = (
    "name",
    "description",
    "instances",
    "algorithms",
    "epsilons",
    "local_epsilons",
    "global_epsilons",
    "deltas",
    "runs",
    "threshold",
    "max_samples",
    "draws",
    "share_deltas",
    "kernel",
    "seed",
    "device",
    "out",
    "plot",
)
"""Keys of an experiment file (``epsilons`` sets both ε grids; ``out`` is not recorded)."""


@dataclasses.dataclass(frozen=True)
class PlotOptions:
    """What `experiments.analysis.plot` draws.

    Attributes:
        figures: figure kinds (`FIGURE_KINDS`) to draw; empty: every one the data support.
        formats: file formats.
        dpi: resolution of raster formats.
    """

    figures: tuple[str, ...] = ()
    formats: tuple[str, ...] = ("png", "pdf")
    dpi: int = 110


@dataclasses.dataclass(frozen=True)
class SweepConfig:
    """Everything that determines a sweep's results, plus where they go.

    Attributes:
        name: the preset's or file's name (default output ``results/<name>``).
        instances: the instances, in table order (any families and K).
        algorithms: the algorithms, run in this order.
        local_epsilons: ε grid of local-DP algorithms.
        global_epsilons: ε grid of global-DP algorithms.
        deltas: risks δ.
        runs: runs per (instance, ε, δ) cell.
        threshold: stopping-threshold family of algorithms whose options do not set one.
        max_samples: per-run sample budget; runs reaching it are censored.
        draws: how rewards are drawn (`jaxbai.engine.DRAWS`; ``"auto"``: per episode for
            episodic algorithms on Bernoulli or Gaussian instances, docs/semantics.md §25).
        share_deltas: one trajectory per (instance, ε, run) tested against every δ, for the
            algorithms whose sampling ignores δ (`jaxbai.engine.shares_deltas`; the others,
            DP-SE, run each δ separately), docs/semantics.md §31.
        kernel: the engine's lane program (`jaxbai.engine.KERNELS`: ``"xla"``, ``"fused"``
            or ``"auto"``, which is ``"xla"``), docs/semantics.md §32; the same numbers.
        seed: master seed of the engine.
        device: ``"cpu"``, ``"gpu"`` or None (JAX's default).
        out: output directory.
        description: one line on what the grid is for.
        plot: figure options.
    """

    name: str
    instances: tuple[InstanceSpec, ...]
    algorithms: tuple[AlgorithmSpec, ...]
    local_epsilons: tuple[float, ...] = LOCAL_EPSILONS
    global_epsilons: tuple[float, ...] = GLOBAL_EPSILONS
    deltas: tuple[float, ...] = (0.01,)
    runs: int = 1000
    threshold: str = "heuristic"
    max_samples: int = 10**9
    draws: str = "auto"
    share_deltas: bool = False
    kernel: str = "auto"
    seed: int = 0
    device: str | None = None
    out: str = ""
    description: str = ""
    plot: PlotOptions = PlotOptions()

    @property
    def instance_names(self) -> tuple[str, ...]:
        """Names of the instances."""
        return tuple(i.name for i in self.instances)

    @property
    def algorithm_labels(self) -> tuple[str, ...]:
        """Labels of the algorithms (the ``algorithm`` column of the results)."""
        return tuple(a.label for a in self.algorithms)

    def algorithm(self, label: str) -> AlgorithmSpec:
        """The algorithm labelled ``label`` (KeyError if none)."""
        for spec in self.algorithms:
            if spec.label == label:
                return spec
        raise KeyError(f"no algorithm labelled {label!r} in {list(self.algorithm_labels)}")

    def epsilons_for(self, algorithm: str | AlgorithmSpec) -> tuple[float, ...]:
        """The ε grid of an algorithm's trust model (``(inf,)`` if it has none).

        ``algorithm`` is a label of this configuration, a spec, or a registry name.
        """
        if isinstance(algorithm, str):
            labels = self.algorithm_labels
            algorithm = self.algorithm(algorithm) if algorithm in labels else algorithm
        name = algorithm.algorithm if isinstance(algorithm, AlgorithmSpec) else algorithm
        privacy = registry()[name].privacy
        if privacy == "none":
            return (math.inf,)
        return self.local_epsilons if privacy == "local" else self.global_epsilons

    def to_dict(self) -> dict[str, Any]:
        """The resolved configuration in the experiment-file schema (without ``out``)."""
        return {
            "name": self.name,
            "description": self.description,
            "instances": [i.to_dict() for i in self.instances],
            "algorithms": [a.to_dict() for a in self.algorithms],
            "local_epsilons": list(self.local_epsilons),
            "global_epsilons": list(self.global_epsilons),
            "deltas": list(self.deltas),
            "runs": self.runs,
            "threshold": self.threshold,
            "max_samples": self.max_samples,
            "draws": self.draws,
            "share_deltas": self.share_deltas,
            "kernel": self.kernel,
            "seed": self.seed,
            "device": self.device,
            "plot": {k: list(v) if isinstance(v, tuple) else v for k, v in _asdict(self.plot)},
        }


def _asdict(obj) -> list[tuple[str, Any]]:
    return [(f.name, getattr(obj, f.name)) for f in dataclasses.fields(obj)]


# ----------------------------------------------------------------------------- values
def _integer(value: object, path: tuple, low: int, high: int) -> int:
    """An integer (not a bool, not a float such as ``5.0``) in [low, high]."""
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise ConfigError(path, f"must be an integer in [{low}, {high}], got {value!r}")
    return value


def _grid(value: object, path: tuple, what: str, ok) -> tuple[float, ...]:
    """A non-empty list of distinct numbers satisfying ``ok`` (a value given twice would run
    its cells twice, as if they held twice the runs: refused, not merged)."""
    values = value if isinstance(value, (list, tuple)) else None
    if not values:
        raise ConfigError(path, f"must be a non-empty list of numbers {what}, got {value!r}")
    seen = set()
    for v in values:
        number = not isinstance(v, bool) and isinstance(v, (int, float))
        if not number or not math.isfinite(v) or not ok(float(v)):
            raise ConfigError(path, f"must be numbers {what}; {v!r} is not")
        if float(v) in seen:
            raise ConfigError(path, f"{v!r} appears twice; values must be distinct")
        seen.add(float(v))
    return tuple(float(v) for v in values)


def _bool(value: object, path: tuple) -> bool:
    """A TOML boolean (not 0/1, not a string)."""
    if not isinstance(value, bool):
        raise ConfigError(path, f"must be true or false, got {value!r}")
    return value


def _choice(value: object, path: tuple, choices: Sequence) -> Any:
    if value not in choices:
        raise ConfigError(path, f"must be one of {list(choices)}, got {value!r}")
    return value


def _string(value: object, path: tuple) -> str:
    if not isinstance(value, str):
        raise ConfigError(path, f"must be a string, got {value!r}")
    return value


def _check_keys(data: Mapping, valid: Sequence[str], path: tuple) -> None:
    for key in data:
        if key not in valid:
            raise ConfigError((*path, key), f"unknown key; valid: {sorted(valid)}")


def _entries(data: Mapping, key: str) -> list:
    value = data.get(key)
    if not isinstance(value, list) or not value:
        raise ConfigError((key,), f"must be a non-empty list of names or tables, got {value!r}")
    return value


def _plot_options(data: object) -> PlotOptions:
    if not isinstance(data, Mapping):
        raise ConfigError(("plot",), f"must be a table, got {data!r}")
    _check_keys(data, _PLOT_KEYS, ("plot",))
    figures = data.get("figures", [])
    formats = data.get("formats", list(PlotOptions.formats))
    for key, values, choices in (
        ("figures", figures, FIGURE_KINDS),
        ("formats", formats, _FORMATS),
    ):
        if not isinstance(values, list) or any(v not in choices for v in values):
            raise ConfigError(("plot", key), f"must be a list of {list(choices)}, got {values!r}")
    if not formats:
        raise ConfigError(("plot", "formats"), "must name at least one format")
    dpi = _integer(data.get("dpi", PlotOptions.dpi), ("plot", "dpi"), 30, 1200)
    return PlotOptions(tuple(figures), tuple(formats), dpi)


def _epsilon_grids(data: Mapping) -> tuple[tuple[float, ...], tuple[float, ...]]:
    positive = "> 0 (finite)"
    if "epsilons" in data:
        clash = [k for k in ("local_epsilons", "global_epsilons") if k in data]
        if clash:
            raise ConfigError(("epsilons",), f"sets both ε grids; do not also give {clash[0]}")
        grid = _grid(data["epsilons"], ("epsilons",), positive, lambda v: v > 0)
        return grid, grid
    local = data.get("local_epsilons", LOCAL_EPSILONS)
    glob = data.get("global_epsilons", GLOBAL_EPSILONS)
    return (
        _grid(local, ("local_epsilons",), positive, lambda v: v > 0),
        _grid(glob, ("global_epsilons",), positive, lambda v: v > 0),
    )


# ----------------------------------------------------------------------------- parse, validate
def parse(data: Mapping, name: str = "config", *, check: bool = True) -> SweepConfig:
    """The configuration of a parsed experiment file (a TOML or JSON mapping).

    Args:
        data: the file's mapping.
        name: the name used when the file has no ``name`` key (e.g. the file's stem).
        check: also `validate` it against the algorithm registry.

    Raises:
        ConfigError: naming the offending key (not yet located in a file: see `loads`).
    """
    if not isinstance(data, Mapping):
        raise ConfigError((), f"an experiment file is a table of keys, got {type(data).__name__}")
    _check_keys(data, TOP_KEYS, ())
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
        name=_string(data.get("name", name), ("name",)),
        description=_string(data.get("description", ""), ("description",)),
        instances=instances,
        algorithms=algorithms,
        local_epsilons=local,
        global_epsilons=glob,
        deltas=_grid(data.get("deltas", [0.01]), ("deltas",), "in (0, 1)", lambda v: 0 < v < 1),
        runs=_integer(data.get("runs", 1000), ("runs",), 1, COUNT_MAX),
        threshold=_string(data.get("threshold", "heuristic"), ("threshold",)),
        max_samples=_integer(data.get("max_samples", 10**9), ("max_samples",), 1, COUNT_MAX),
        draws=_string(data.get("draws", "auto"), ("draws",)),
        share_deltas=_bool(data.get("share_deltas", False), ("share_deltas",)),
        kernel=_string(data.get("kernel", "auto"), ("kernel",)),
        seed=_integer(data.get("seed", 0), ("seed",), 0, 2**32 - 1),
        device=None if device is None else _choice(device, ("device",), ("cpu", "gpu")),
        out=_string(data.get("out") or f"results/{data.get('name', name)}", ("out",)),
        plot=_plot_options(data.get("plot", {})),
    )
    return validate(config) if check else config


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


def memory_bytes() -> int | None:
    """The machine's physical memory (None where the system does not say)."""
    try:
        return os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (AttributeError, ValueError, OSError):
        return None


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
    positive = "> 0 (finite)"
    _grid(config.local_epsilons, ("local_epsilons",), positive, lambda v: v > 0)
    _grid(config.global_epsilons, ("global_epsilons",), positive, lambda v: v > 0)
    _grid(config.deltas, ("deltas",), "in (0, 1)", lambda v: 0 < v < 1)
    _integer(config.runs, ("runs",), 1, COUNT_MAX)
    _integer(config.max_samples, ("max_samples",), 1, COUNT_MAX)
    _integer(config.seed, ("seed",), 0, 2**32 - 1)
    _choice(config.draws, ("draws",), DRAWS)
    _bool(config.share_deltas, ("share_deltas",))
    _choice(config.kernel, ("kernel",), KERNELS)
    if config.device is not None:
        _choice(config.device, ("device",), ("cpu", "gpu"))


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
    _choice(config.threshold, ("threshold",), THRESHOLD_FAMILIES)
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


# ----------------------------------------------------------------------------- files
def locate(err: ConfigError, source: str, text: str | None = None) -> ConfigError:
    """``err`` located in the TOML file ``source`` (its text read if not given)."""
    if text is None:
        text = _read(source)
    return err.located(source, lines.line_of(text, err.path))


def loads(text: str, name: str = "config", source: str = "<string>") -> SweepConfig:
    """The validated configuration of a TOML text; errors are located in ``source``.

    Raises:
        ConfigError: invalid TOML (with tomllib's line and column) or an invalid value.
    """
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as err:
        raise ConfigError((), f"invalid TOML: {err}", source) from None
    try:
        return parse(data, name)
    except ConfigError as err:
        raise locate(err, source, text) from None


def _read(path: str) -> str:
    try:
        with open(path, encoding="utf-8") as f:
            return f.read()
    except OSError as err:
        raise ConfigError((), f"cannot read the experiment file: {err.strerror}", path) from None


def load(path: str) -> SweepConfig:
    """The validated configuration of an experiment file.

    A ``.toml`` file is an experiment file; a ``.json`` file is a sweep's ``sweep.json``, whose
    ``config`` holds the resolved configuration of the run that wrote it. The name defaults to
    the file's stem.

    Raises:
        ConfigError: located in ``path``.
    """
    text = _read(path)
    stem = os.path.splitext(os.path.basename(path))[0]
    if not path.endswith(".json"):
        return loads(text, stem, path)
    try:
        data = json.loads(text)
    except json.JSONDecodeError as err:
        raise ConfigError((), f"invalid JSON: {err}", path) from None
    if not isinstance(data, dict) or not isinstance(data.get("config"), dict):
        raise ConfigError((), "a sweep.json holds the resolved configuration under 'config'", path)
    try:
        return parse(data["config"], stem)
    except ConfigError as err:
        raise ConfigError(("config", *err.path), err.message, path) from None


def load_sidecar(csv_path: str) -> SweepConfig | None:
    """The configuration recorded in the ``sweep.json`` next to a run CSV, if it has one.

    It is read without checking algorithms against the registry (a result can outlive an
    algorithm registered in another session). None if there is no readable one (e.g. written
    before experiment files existed).
    """
    path = os.path.join(os.path.dirname(os.path.abspath(csv_path)), "sweep.json")
    try:
        with open(path, encoding="utf-8") as f:
            return parse(json.load(f)["config"], check=False)
    except (OSError, ValueError, KeyError, TypeError):
        return None
