"""The schema of a sweep: `SweepConfig`, its `PlotOptions`, and the paper's defaults.

A `SweepConfig` is everything that determines a sweep's results (instances, algorithms, the ε
grid of each trust model, δ, runs, budget, seed, …) plus where they go; fields left out take
the paper's values (Appendix I: `LOCAL_EPSILONS`, `GLOBAL_EPSILONS`, δ = 0.01, 1000 runs, 10⁹
samples). `TOP_KEYS` are the keys of an experiment file, `FIGURE_KINDS`, `FORMATS` and
`PLOT_KEYS` those of its ``[plot]`` table. ``SweepConfig.to_dict`` is the resolved
configuration in the experiment-file schema (what ``sweep.json`` records).

Examples:
    >>> from experiments.config.specs import AlgorithmSpec, paper_instance
    >>> cfg = SweepConfig("demo", (paper_instance("mu1"),), (AlgorithmSpec("ttucb", "ttucb"),))
    >>> cfg.instance_names, cfg.algorithm_labels, cfg.to_dict()["runs"]
    (('mu1',), ('ttucb',), 1000)
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

from experiments.config.specs import AlgorithmSpec, InstanceSpec

__all__ = [
    "FIGURE_KINDS",
    "FORMATS",
    "GLOBAL_EPSILONS",
    "LOCAL_EPSILONS",
    "PLOT_KEYS",
    "RUN_BYTES",
    "TOP_KEYS",
    "PlotOptions",
    "SweepConfig",
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
table, and its CSV read back by the report); `experiments.config.validate` refuses a grid whose
runs would need more than the machine's memory (`jaxbai.checks.memory_bytes`)."""

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
"""Figures `experiments.analysis.drawing` can draw (``[plot] figures`` selects among them;
``allocations``
is one PNG per instance of the empirical proportions against ω*; ``log_delta``, τ against
log(1/δ) with both bounds, for curves with at least 3 δ)."""

FORMATS = ("png", "pdf", "svg")
"""File formats of the figures (``[plot] formats``)."""

PLOT_KEYS = ("figures", "formats", "dpi")
"""Keys of the ``[plot]`` table."""

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
    "plugins",
)
"""Keys of an experiment file (``epsilons`` sets both ε grids; ``out`` is not recorded)."""


@dataclasses.dataclass(frozen=True)
class PlotOptions:
    """What `experiments.analysis.drawing` draws.

    Attributes:
        figures: figure kinds (`FIGURE_KINDS`) to draw; empty: every one the data support.
        formats: file formats.
        dpi: resolution of raster formats.
    """

    figures: tuple[str, ...] = ()
    formats: tuple[str, ...] = ("png", "pdf")
    dpi: int = 200


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
        plugins: the plugin modules that register algorithms the grid names
            (`jaxbai.plugins`); recorded, never imported from a file: the command line loads
            them (``--plugin``).
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
    plugins: tuple[str, ...] = ()

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
        """The ε grid of an algorithm's trust model (``(inf,)`` if it has none), as built with
        its options.

        ``algorithm`` is a label of this configuration, a spec, or a registry name.
        """
        if isinstance(algorithm, str):
            labels = self.algorithm_labels
            known = algorithm in labels
            algorithm = self.algorithm(algorithm) if known else AlgorithmSpec(algorithm, algorithm)
        return self.epsilons_of(algorithm.build(self.threshold).info.privacy)

    def epsilons_of(self, privacy: str) -> tuple[float, ...]:
        """The ε grid of a trust model (``"local"``, ``"global"``; ``(inf,)`` for ``"none"``)."""
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
            "plugins": list(self.plugins),
        }


def _asdict(obj: Any) -> list[tuple[str, Any]]:
    """The (field, value) pairs of a dataclass instance, values as they are (not copied)."""
    return [(f.name, getattr(obj, f.name)) for f in dataclasses.fields(obj)]
