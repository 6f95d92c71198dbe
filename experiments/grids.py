"""The paper's experiment grids (Section 5, Appendix I) as presets, and sweep configurations.

A preset fixes instances, algorithms, the ε grid of each trust model, δ, runs and the sample
budget. Every algorithm runs on the ε grid of its trust model (local or global DP); non-private
algorithms (TTUCB) run once per (instance, δ) at ε = ∞ and are drawn as a horizontal reference.

Trust models and display names come from the algorithm registry, `jaxbai.ALGORITHMS`, read
when needed (`ALGORITHM_PRIVACY` and `DISPLAY_NAMES` are views of it), so an algorithm
registered with ``jaxbai.register`` runs on the ε grid of its trust model. Importing this module
does not import JAX.

Example:
    >>> cfg = config_from_preset("fig2")
    >>> cfg.epsilons_for("adap_tt")[:3]
    (0.001, 0.005, 0.01)
    >>> cfg.epsilons_for("ttucb")
    (inf,)
    >>> import dataclasses, jaxbai
    >>> def adap_tt_b3(**options):
    ...     return dataclasses.replace(jaxbai.adap_tt(beta=0.3, **options), name="adap_tt_b3")
    >>> _ = jaxbai.register("adap_tt_b3", adap_tt_b3, "AdaP-TT (β = 0.3)")
    >>> ALGORITHM_PRIVACY["adap_tt_b3"], DISPLAY_NAMES["adap_tt_b3"]
    ('global', 'AdaP-TT (β = 0.3)')
    >>> cfg.epsilons_for("adap_tt_b3") == cfg.global_epsilons
    True
    >>> jaxbai.unregister("adap_tt_b3")
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterator, Mapping, Sequence

__all__ = [
    "ALGORITHM_PRIVACY",
    "DISPLAY_NAMES",
    "GLOBAL_ALGORITHMS",
    "GLOBAL_EPSILONS",
    "INSTANCE_NAMES",
    "LOCAL_ALGORITHMS",
    "LOCAL_EPSILONS",
    "MAX_COUNT",
    "PRESETS",
    "Preset",
    "RegistryView",
    "SweepConfig",
    "config_from_preset",
    "validate",
]


class RegistryView(Mapping[str, str]):
    """A read-only name → attribute view of `jaxbai.ALGORITHMS`, read at every access.

    An algorithm registered after this module was imported (``jaxbai.register``) is seen; the
    registry is imported on first use only, so importing this module does not import JAX.

    Attributes:
        attribute: the `jaxbai.AlgorithmEntry` field this view reads.
    """

    def __init__(self, attribute: str) -> None:
        self.attribute = attribute

    @staticmethod
    def _registry():
        from jaxbai import ALGORITHMS

        return ALGORITHMS

    def __getitem__(self, name: str) -> str:
        registry = self._registry()
        if name not in registry:
            raise KeyError(f"unknown algorithm {name!r}; registered: {list(registry)}")
        return getattr(registry[name], self.attribute)

    def __iter__(self) -> Iterator[str]:
        return iter(list(self._registry()))

    def __len__(self) -> int:
        return len(self._registry())

    def __repr__(self) -> str:
        return f"RegistryView({self.attribute!r}: {dict(self)!r})"


ALGORITHM_PRIVACY: Mapping[str, str] = RegistryView("privacy")
"""Trust model of each registered algorithm (``jaxbai.ALGORITHMS[name].privacy``)."""

DISPLAY_NAMES: Mapping[str, str] = RegistryView("display_name")
"""Name of each registered algorithm in figures and reports
(``jaxbai.ALGORITHMS[name].display_name``)."""

INSTANCE_NAMES: tuple[str, ...] = ("mu1", "mu2", "mu3", "mu4", "mu5", "mu6")
"""The six Bernoulli instances of Appendix I (``jaxbai.PAPER_INSTANCES``)."""

GLOBAL_EPSILONS: tuple[float, ...] = (
    0.001,
    0.005,
    0.01,
    0.05,
    0.1,
    0.2,
    0.3,
    0.4,
    0.5,
    0.6,
    0.7,
    0.8,
    0.9,
    1.0,
    10.0,
    100.0,
    1000.0,
)
"""ε grid of the global-DP experiments (Appendix I)."""

LOCAL_EPSILONS: tuple[float, ...] = (
    0.01,
    0.05,
    0.1,
    0.2,
    0.3,
    0.4,
    0.5,
    0.6,
    0.7,
    0.8,
    0.9,
    1.0,
    10.0,
    100.0,
)
"""ε grid of the local-DP experiments (Appendix I)."""

LOCAL_ALGORITHMS = ("ctb_tt", "ttucb")
"""Algorithms of the paper's local-DP figures (1 and 3)."""

GLOBAL_ALGORITHMS = ("adap_tt", "adap_tt_star", "dp_se", "ttucb")
"""Algorithms of the paper's global-DP figures (2, 4 and 5)."""

MAX_COUNT = 2**31 - 1  # the engine counts samples in int32


@dataclasses.dataclass(frozen=True)
class SweepConfig:
    """Everything that determines a sweep's results (plus where they go).

    Attributes:
        preset: name of the preset the configuration started from.
        instances: instance names (keys of ``jaxbai.PAPER_INSTANCES``).
        algorithms: algorithm names (keys of ``jaxbai.ALGORITHMS``), run in this order.
        local_epsilons: ε grid of local-DP algorithms.
        global_epsilons: ε grid of global-DP algorithms.
        deltas: risks δ.
        runs: runs per (instance, ε, δ) cell.
        threshold: stopping-threshold family, ``"heuristic"`` or ``"theory"``.
        max_samples: per-run sample budget; runs reaching it are censored.
        seed: master seed of the engine.
        device: ``"cpu"``, ``"gpu"`` or None (JAX's default).
        out: output directory.
    """

    preset: str
    instances: tuple[str, ...]
    algorithms: tuple[str, ...]
    local_epsilons: tuple[float, ...]
    global_epsilons: tuple[float, ...]
    deltas: tuple[float, ...] = (0.01,)
    runs: int = 1000
    threshold: str = "heuristic"
    max_samples: int = 10**9
    seed: int = 0
    device: str | None = None
    out: str = ""

    def epsilons_for(self, algorithm: str) -> tuple[float, ...]:
        """The ε grid of ``algorithm``'s trust model in the registry (``(inf,)`` if none).

        Raises:
            KeyError: ``algorithm`` is not registered.
        """
        privacy = ALGORITHM_PRIVACY[algorithm]
        if privacy == "none":
            return (math.inf,)
        return self.local_epsilons if privacy == "local" else self.global_epsilons

    def to_dict(self) -> dict:
        """JSON-ready dictionary (∞ written as the string ``"inf"``)."""
        data = dataclasses.asdict(self)
        return {k: list(v) if isinstance(v, tuple) else v for k, v in data.items()}


@dataclasses.dataclass(frozen=True)
class Preset:
    """A named grid; see `PRESETS`."""

    description: str
    instances: tuple[str, ...]
    algorithms: tuple[str, ...]
    local_epsilons: tuple[float, ...] = LOCAL_EPSILONS
    global_epsilons: tuple[float, ...] = GLOBAL_EPSILONS
    runs: int = 1000
    max_samples: int = 10**9


PRESETS: dict[str, Preset] = {
    "quick": Preset(
        "CPU-friendly default: global DP on mu1 and mu2 at a few ε, 100 runs",
        ("mu1", "mu2"),
        ("ttucb", "adap_tt", "adap_tt_star", "dp_se"),
        global_epsilons=(0.05, 0.1, 0.2, 0.5, 1.0, 10.0, 100.0),
        runs=100,
        max_samples=10**7,
    ),
    "fig1": Preset("Figure 1: local DP on mu1 and mu2", ("mu1", "mu2"), LOCAL_ALGORITHMS),
    "fig2": Preset("Figure 2: global DP on mu1 and mu2", ("mu1", "mu2"), GLOBAL_ALGORITHMS),
    "fig3": Preset("Figure 3: local DP on mu1..mu6", INSTANCE_NAMES, LOCAL_ALGORITHMS),
    "fig4": Preset("Figure 4: global DP on mu1..mu6 (log-log)", INSTANCE_NAMES, GLOBAL_ALGORITHMS),
    "fig5": Preset(
        "Figure 5: the Figure 4 grid, AdaP-TT vs AdaP-TT* on a linear y axis",
        INSTANCE_NAMES,
        GLOBAL_ALGORITHMS,
    ),
    "paper": Preset(
        "Figures 1-5: local and global DP on mu1..mu6",
        INSTANCE_NAMES,
        ("ttucb", "ctb_tt", "adap_tt", "adap_tt_star", "dp_se"),
    ),
    "local-high-privacy": Preset(
        "local DP below ε = 0.1 with a sample cap (censoring reported)",
        INSTANCE_NAMES,
        LOCAL_ALGORITHMS,
        local_epsilons=(0.005, 0.01, 0.02, 0.05),
        runs=100,
        max_samples=2 * 10**7,
    ),
}
"""Presets by name. Grids, δ = 0.01 and 1000 runs follow Appendix I unless stated."""


def config_from_preset(name: str, **overrides) -> SweepConfig:
    """The configuration of preset ``name`` with ``overrides`` (None values are ignored).

    Raises:
        ValueError: unknown preset.
    """
    if name not in PRESETS:
        raise ValueError(f"unknown preset {name!r}; expected one of {sorted(PRESETS)}")
    preset = PRESETS[name]
    fields = {
        "preset": name,
        "instances": preset.instances,
        "algorithms": preset.algorithms,
        "local_epsilons": preset.local_epsilons,
        "global_epsilons": preset.global_epsilons,
        "runs": preset.runs,
        "max_samples": preset.max_samples,
        "out": f"results/{name}",
    }
    fields.update({k: v for k, v in overrides.items() if v is not None})
    config = SweepConfig(**fields)
    validate(config)
    return config


def _check_all(name: str, values: Sequence, ok, what: str) -> None:
    bad = [v for v in values if not ok(v)]
    if bad or not values:
        raise ValueError(f"{name} must be {what}, got {list(values) if not bad else bad}")


def validate(config: SweepConfig) -> None:
    """Check a configuration before any work (nothing compiles; algorithm names are checked
    against the registry, `jaxbai.ALGORITHMS`, as it is now).

    Raises:
        ValueError: with a one-line message naming the offending option.
    """
    _check_all(
        "--instances", config.instances, lambda v: v in INSTANCE_NAMES, f"in {INSTANCE_NAMES}"
    )
    registered = tuple(ALGORITHM_PRIVACY)
    _check_all("--algorithms", config.algorithms, lambda v: v in registered, f"in {registered}")
    for values in (config.local_epsilons, config.global_epsilons):
        _check_all("--epsilons", values, lambda v: v > 0, "> 0")
    _check_all("--deltas", config.deltas, lambda v: 0 < v < 1, "in (0, 1)")
    if config.threshold not in ("heuristic", "theory"):
        raise ValueError(f"--threshold must be 'heuristic' or 'theory', got {config.threshold!r}")
    from jaxbai import ALGORITHMS

    for name in config.algorithms:
        families = ALGORITHMS[name].thresholds
        if families and config.threshold not in families:
            raise ValueError(
                f"--threshold of {name} must be in {families}, got {config.threshold!r}"
            )
    if not 1 <= config.runs:
        raise ValueError(f"--runs must be a positive integer, got {config.runs}")
    if not 1 <= config.max_samples <= MAX_COUNT:
        raise ValueError(f"--max-samples must be in [1, {MAX_COUNT}], got {config.max_samples}")
    if config.device not in (None, "cpu", "gpu"):
        raise ValueError(f"--device must be 'cpu' or 'gpu', got {config.device!r}")
    if len(set(config.algorithms)) != len(config.algorithms):
        raise ValueError(f"--algorithms lists an algorithm twice: {list(config.algorithms)}")
