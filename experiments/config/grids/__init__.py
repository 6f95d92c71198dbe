"""The paper's experiment grids (Section 5, Appendix I), shipped as experiment files.

Every preset is a TOML file of this directory, ``experiments/config/grids/<name>.toml``, read by
`experiments.config.load` exactly like a user's file: ``--preset fig2`` and
``--config experiments/config/grids/fig2.toml`` are the same sweep. Every algorithm runs on the ε
grid
of its trust model (local or global DP, from the registry `jaxbai.ALGORITHMS`); non-private
algorithms run once per (instance, δ) at ε = ∞.

Example:
    >>> cfg = config_from_preset("fig2")
    >>> cfg.epsilons_for("adap_tt")[:3], cfg.epsilons_for("ttucb")
    ((0.001, 0.005, 0.01), (inf,))
    >>> import dataclasses, jaxbai
    >>> def adap_tt_b3(**options):
    ...     return dataclasses.replace(jaxbai.adap_tt(beta=0.3, **options), name="adap_tt_b3")
    >>> _ = jaxbai.register("adap_tt_b3", adap_tt_b3, "AdaP-TT (β = 0.3)")
    >>> jaxbai.ALGORITHMS["adap_tt_b3"].info().privacy, jaxbai.ALGORITHMS["adap_tt_b3"].display_name
    ('global', 'AdaP-TT (β = 0.3)')
    >>> cfg.epsilons_for("adap_tt_b3") == cfg.global_epsilons
    True
    >>> jaxbai.unregister("adap_tt_b3")
"""

from __future__ import annotations

import os
from typing import Any, NamedTuple

from experiments.config import (
    GLOBAL_EPSILONS,
    LOCAL_EPSILONS,
    ConfigError,
    SweepConfig,
    load,
    validate,
    with_overrides,
)
from experiments.config.files import tomllib

__all__ = [
    "GLOBAL_EPSILONS",
    "GRID_DIR",
    "LOCAL_EPSILONS",
    "PRESETS",
    "Preset",
    "SweepConfig",
    "config_from_preset",
    "validate",
]

GRID_DIR = os.path.dirname(os.path.abspath(__file__))
"""The directory of the preset files."""


class Preset(NamedTuple):
    """A shipped experiment file."""

    name: str
    path: str
    description: str


def _presets() -> dict[str, Preset]:
    presets = {}
    for file in sorted(os.listdir(GRID_DIR)):
        if file.endswith(".toml"):
            path = os.path.join(GRID_DIR, file)
            with open(path, "rb") as f:
                description = tomllib.load(f).get("description", "")
            presets[file[: -len(".toml")]] = Preset(file[: -len(".toml")], path, description)
    return presets


PRESETS: dict[str, Preset] = _presets()
"""The shipped presets by name (the files of `GRID_DIR`)."""


def config_from_preset(name: str, **overrides: Any) -> SweepConfig:
    """The configuration of preset ``name`` with ``overrides`` (None values are ignored; see
    `experiments.config.with_overrides`).

    Raises:
        ValueError: unknown preset, or an invalid override (`experiments.config.ConfigError`).
    """
    if name not in PRESETS:
        raise ConfigError((), f"unknown preset {name!r}; expected one of {sorted(PRESETS)}")
    config = load(PRESETS[name].path)
    return with_overrides(config, **overrides) if overrides else config
