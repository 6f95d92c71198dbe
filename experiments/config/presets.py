"""The shipped presets: the TOML files of `experiments.config.grids`, by name.

The package docstring (`experiments.config.grids`) describes them.
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

GRID_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "grids")
"""The directory of the preset files (the package `experiments.config.grids`)."""


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
