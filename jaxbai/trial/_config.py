"""The trial's constants and plain records: configuration, status, and one saved snapshot.

Kept apart from `jaxbai.trial._trial` so that the state-file codec (`jaxbai.trial._store`) and the
trial itself both depend on them without depending on each other.
"""

from __future__ import annotations

import dataclasses
from fractions import Fraction
from typing import Any

import jax

SCHEMA_VERSION = 1
"""Version of the state-file and publication layouts; `Trial.open` refuses any other."""

NOISE_MODES = ("secure", "prng")
"""``"secure"``: snapped Laplace from the CSPRNG (real trials). ``"prng"``: the algorithm's own
Laplace draws from the stored JAX key (rehearsals only: reproducible, not secret, not snapped)."""

PUBLISHED_FIELDS = frozenset(
    {
        "format", "schema_version", "algorithm", "options", "privacy", "num_arms", "epsilon",
        "delta", "gamma", "clip", "noise", "actions", "stopped", "stopping_time",
        "recommendation",
    }
)  # fmt: skip
"""Every field of `Trial.publish`; the only data-dependent ones are ``actions``, ``stopped``,
``stopping_time`` and ``recommendation``, the outputs Definition 8 protects."""

STATE_FORMAT = "jaxbai-trial"
"""The ``format`` field of a state file."""

PUBLICATION_FORMAT = "jaxbai-trial-publication"
"""The ``format`` field of a publication (`Trial.publish`)."""


@dataclasses.dataclass(frozen=True)
class TrialConfig:
    """Static description of a trial, fixed at creation.

    Attributes:
      algorithm: registry name, a key of `jaxbai.registry.ALGORITHMS`.
      options: keyword arguments of the factory (e.g. ``{"threshold": "heuristic"}``).
      num_arms: K.
      epsilon: privacy budget ε (``None`` for an algorithm that takes none, e.g. ``ttucb``).
      delta: risk δ.
      clip: whether rewards are clipped into [0, 1] instead of rejected.
      noise: one of `NOISE_MODES`.

    Example:
      >>> config = TrialConfig("adap_tt", {}, 3, 1.0, 0.05, clip=False, noise="secure")
      >>> config.num_arms, config.epsilon
      (3, 1.0)
    """

    algorithm: str
    options: dict[str, Any]
    num_arms: int
    epsilon: float | None
    delta: float
    clip: bool
    noise: str


@dataclasses.dataclass(frozen=True)
class TrialStatus:
    """What the curator sees of a running trial (`Trial.status`).

    Attributes:
      algorithm: registry name.
      privacy: ``"none"``, ``"local"`` or ``"global"``.
      num_arms: K.
      epsilon: ε (``None`` when not private).
      delta: δ.
      gamma: γ of the participants' mechanism if it has one (``gauss_ldp_tt``), else ``None``.
      samples: observations recorded so far.
      stopped: whether the stopping rule has fired.
      recommendation: the recommended arm once stopped, else ``None``.
      pending_arm: the arm issued by `Trial.next_arm` and not yet recorded, else ``None``.
      clip: whether rewards are clipped into [0, 1].
      noise: how the curator's noise is drawn (see `NOISE_MODES`).
    """

    algorithm: str
    privacy: str
    num_arms: int
    epsilon: float | None
    delta: float
    gamma: float | None
    samples: int
    stopped: bool
    recommendation: int | None
    pending_arm: int | None
    clip: bool
    noise: str


@dataclasses.dataclass(frozen=True)
class Snapshot:
    """Everything that changes during a trial; one snapshot is one version of the state file."""

    key: jax.Array
    state: Any
    actions: tuple[int, ...]
    pending: int | None
    windows: tuple[tuple[int, Fraction], ...]
    """Per arm, (count, exact sum) of the observations not yet released (global DP, secure)."""
