"""The paper's experiment grids (Section 5, Appendix I) as presets, and sweep configurations.

A preset fixes instances, algorithms, the ε grid of each trust model, δ, runs and the sample
budget. Every algorithm runs on the ε grid of its trust model (local or global DP); non-private
algorithms (TTUCB) run once per (instance, δ) at ε = ∞ and are drawn as a horizontal reference.

Example:
    >>> cfg = config_from_preset("fig2")
    >>> cfg.epsilons_for("adap_tt")[:3]
    (0.001, 0.005, 0.01)
    >>> cfg.epsilons_for("ttucb")
    (inf,)
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence

ALGORITHM_PRIVACY: dict[str, str] = {
    "ttucb": "none",
    "ctb_tt": "local",
    "gauss_ldp_tt": "local",
    "adap_tt": "global",
    "adap_tt_star": "global",
    "dp_se": "global",
}
"""Trust model of each algorithm of ``jaxbai.ALGORITHMS`` (mirrors ``alg.privacy``)."""

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
GLOBAL_ALGORITHMS = ("adap_tt", "adap_tt_star", "dp_se", "ttucb")
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
        """The ε grid of ``algorithm`` (``(inf,)`` for non-private algorithms)."""
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
    """Check a configuration before any work (no JAX needed).

    Raises:
        ValueError: with a one-line message naming the offending option.
    """
    _check_all(
        "--instances", config.instances, lambda v: v in INSTANCE_NAMES, f"in {INSTANCE_NAMES}"
    )
    _check_all(
        "--algorithms",
        config.algorithms,
        lambda v: v in ALGORITHM_PRIVACY,
        f"in {tuple(ALGORITHM_PRIVACY)}",
    )
    for values in (config.local_epsilons, config.global_epsilons):
        _check_all("--epsilons", values, lambda v: v > 0, "> 0")
    _check_all("--deltas", config.deltas, lambda v: 0 < v < 1, "in (0, 1)")
    if config.threshold not in ("heuristic", "theory"):
        raise ValueError(f"--threshold must be 'heuristic' or 'theory', got {config.threshold!r}")
    if not 1 <= config.runs:
        raise ValueError(f"--runs must be a positive integer, got {config.runs}")
    if not 1 <= config.max_samples <= MAX_COUNT:
        raise ValueError(f"--max-samples must be in [1, {MAX_COUNT}], got {config.max_samples}")
    if config.device not in (None, "cpu", "gpu"):
        raise ValueError(f"--device must be 'cpu' or 'gpu', got {config.device!r}")
    if len(set(config.algorithms)) != len(config.algorithms):
        raise ValueError(f"--algorithms lists an algorithm twice: {list(config.algorithms)}")


DISPLAY_NAMES: dict[str, str] = {
    "ttucb": "TTUCB",
    "ctb_tt": "CTB-TT",
    "gauss_ldp_tt": "Gauss-LDP-TT",
    "adap_tt": "AdaP-TT",
    "adap_tt_star": "AdaP-TT*",
    "dp_se": "DP-SE",
}
"""Names used in figures and reports."""
