"""The trial's constants and plain records: configuration, status, and one saved snapshot.

Kept apart from `jaxbai.trial._trial` so that the store (`jaxbai.trial._store`) and the trial
itself both depend on them without depending on each other.
"""

from __future__ import annotations

import dataclasses
from fractions import Fraction
from typing import Any

import jax

SCHEMA_VERSION = 4
"""Version of the store layout. `Trial.open` migrates versions 1 (the JSON state file), 2 (a
flat Top Two state, `jaxbai.trial._schema2`) and 3 (no integrity digest, no session mark) and
refuses any other."""

PUBLICATION_VERSION = 4
"""Version of the publication layout (`Trial.publish`). Version 4 added ``privacy_measure``,
version 3 ``plugin``; version 2 was unchanged since store schema 2."""

PLUGIN_PRIVACY_CLAIM = "claimed by the plugin; jaxbai does not check a plugin's privacy"
"""The ``privacy_claim`` of a plugin's algorithm in a publication (`Trial.publish`)."""

NOISE_MODES = ("secure", "prng")
"""``"secure"``: the declared discrete noise (Laplace or Gaussian) from the operating system's
CSPRNG via OpenDP (real trials). ``"prng"``: the same exact noise from a generator seeded by the
stored JAX key (rehearsals only: reproducible, not secret)."""

OUTCOMES = ("unit", "binary")
"""``"unit"``: rewards in [0, 1] (where privacy needs it), released on a grid of at most 1 % of
the noise scale. ``"binary"``: rewards 0 or 1, released exactly (integer phase sums)."""

PUBLISHED_FIELDS = frozenset(
    {
        "format", "schema_version", "algorithm", "plugin", "options", "privacy",
        "privacy_measure", "num_arms",
        "epsilon", "delta", "gamma", "clip", "noise", "outcomes", "resolution", "release_epsilon",
        "actions", "stopped", "stopping_time", "recommendation",
    }
)  # fmt: skip
"""Every field of `Trial.publish`; the only data-dependent ones are ``actions``, ``stopped``,
``stopping_time`` and ``recommendation``, the outputs Definition 8 protects."""

STATE_FORMAT = "jaxbai-trial"
"""The ``format`` of a trial store (its ``meta`` table; schema 1: the JSON state file's field)."""

OTHER_THREAD = (
    "this Trial was opened in another thread and its SQLite connection serves only that "
    "thread: use it there (or hand the work to it)"
)
"""The RuntimeError of a `Trial` used from a thread other than the one that opened it."""

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
      outcomes: one of `OUTCOMES`.
      plugin: the module that registers the algorithm (`jaxbai.registry.AlgorithmEntry.plugin`),
        None for jaxbai's own; reopening the trial without it names it.
      plugin_source: `jaxbai.registry.AlgorithmEntry.plugin_source` of the algorithm (the
        SHA-256 of the source of the module defining its factory; None for jaxbai's own and in
        stores written before it was recorded). The trial runs only under an entry with the
        same one (`jaxbai.trial._algorithm.other_code`).

    Examples:
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
    outcomes: str = "unit"
    plugin: str | None = None
    plugin_source: str | None = None


@dataclasses.dataclass(frozen=True)
class TrialStatus:
    """What the curator sees of a running trial (`Trial.status`).

    Attributes:
      algorithm: registry name.
      plugin: where the algorithm comes from (`code_origin`: a plugin module, ``"__main__"``),
        None for jaxbai's own; then ``privacy`` is that code's own claim, which jaxbai does not
        check.
      privacy: ``"none"``, ``"local"`` or ``"global"``.
      privacy_measure: what ε guarantees, in words (`jaxbai.base.AlgorithmInfo.claim`), e.g.
        ``"ε-DP (global, pure)"``.
      num_arms: K.
      epsilon: ε (``None`` when not private).
      delta: δ.
      gamma: γ of the participants' mechanism if it has one (``gauss_ldp_tt``), else ``None``.
      samples: observations recorded so far.
      stopped: whether the stopping rule has fired.
      recommendation: the recommended arm once stopped, else ``None``.
      pending_arm: the arm of the only open assignment (e.g. issued by `Trial.next_arm`),
        else ``None``.
      clip: whether rewards are clipped into [0, 1].
      noise: how the curator's noise is drawn (see `NOISE_MODES`).
      outcomes: one of `OUTCOMES`.
      open_assignments: (participant, arm) pairs issued and awaiting their outcome, in plan
        order.
      held: outcomes received ahead of an earlier participant's, held until it arrives.
    """

    algorithm: str
    plugin: str | None
    privacy: str
    privacy_measure: str
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
    outcomes: str
    open_assignments: tuple[tuple[int, int], ...]
    held: int


Windows = tuple[tuple[int, Fraction], ...]
"""Per arm, (count, exact sum) of the observations not yet released (global DP)."""


@dataclasses.dataclass(frozen=True)
class Snapshot:
    """The algorithm's side of a trial after ``samples`` applied outcomes (one store row)."""

    key: jax.Array
    state: Any
    samples: int
    windows: Windows


def code_origin(config: TrialConfig) -> str | None:
    """Where a trial's algorithm comes from: the module that registers it, ``"__main__"`` for a
    registration in a script or notebook, None for jaxbai's own (and for a store older than the
    record of its code)."""
    if config.plugin is None and config.plugin_source is not None:
        return "__main__"
    return config.plugin


def published_plugin(config: TrialConfig) -> dict[str, str | None] | None:
    """A publication's ``plugin`` (`Trial.publish`): None for jaxbai's own algorithm, else where
    it comes from (`code_origin`), the `jaxbai.registry.AlgorithmEntry.plugin_source` of its
    code and `PLUGIN_PRIVACY_CLAIM`."""
    if code_origin(config) is None:
        return None
    return {
        "module": code_origin(config),
        "source": config.plugin_source,
        "privacy_claim": PLUGIN_PRIVACY_CLAIM,
    }
