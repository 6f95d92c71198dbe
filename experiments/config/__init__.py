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

The package re-exports its modules: `experiments.config.schema` (`SweepConfig`, `PlotOptions`,
the defaults), `experiments.config.validation` (`parse`, `validate`, overrides),
`experiments.config.files` (`load`, `loads`, `locate`, `load_sidecar`),
`experiments.config.specs` (instances and algorithms) and `experiments.config.errors`
(`ConfigError`); `experiments.config.values` holds the validators of values and
`experiments.config.lines` finds the line of a key.

Examples:
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

from experiments.config.errors import ConfigError
from experiments.config.files import load, load_sidecar, loads, locate
from experiments.config.schema import (
    FIGURE_KINDS,
    GLOBAL_EPSILONS,
    LOCAL_EPSILONS,
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
from experiments.config.validation import (
    grid_runs,
    memory_bytes,
    parse,
    select_algorithms,
    select_instances,
    validate,
    with_overrides,
)

__all__ = [
    "FIGURE_KINDS",
    "GLOBAL_EPSILONS",
    "LOCAL_EPSILONS",
    "RUN_BYTES",
    "TOP_KEYS",
    "AlgorithmSpec",
    "ConfigError",
    "InstanceSpec",
    "PlotOptions",
    "SweepConfig",
    "algorithm_from_entry",
    "check_algorithm",
    "check_file_name",
    "grid_runs",
    "instance_from_entry",
    "load",
    "load_sidecar",
    "loads",
    "locate",
    "memory_bytes",
    "paper_instance",
    "parse",
    "registry",
    "select_algorithms",
    "select_instances",
    "validate",
    "with_overrides",
]
