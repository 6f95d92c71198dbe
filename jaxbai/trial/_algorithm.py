"""The trial's view of an algorithm: its registry entry, parameters and jitted ask/tell.

Examples:
  >>> config = TrialConfig("adap_tt", {}, 3, 1.0, 0.05, clip=False, noise="prng")
  >>> check_config(config) == config
  True
  >>> alg, params = build(config)
  >>> alg.info.privacy, isinstance(alg, Episodic)
  ('global', True)
"""

from __future__ import annotations

import dataclasses
import functools
import json
import secrets
from collections.abc import Callable
from typing import Any, NamedTuple

import jax

from jaxbai import checks, plugins
from jaxbai.base import Algorithm, Episodic, Mechanism, Releasing
from jaxbai.base.privacy import CALIBRATED_RELEASES
from jaxbai.registry import ALGORITHMS, BUILT_IN_NAMES, AlgorithmEntry
from jaxbai.trial._config import NOISE_MODES, OUTCOMES, TrialConfig

__all__ = [
    "algorithm_entry",
    "build",
    "check_config",
    "check_sensitive",
    "compiled",
    "initial_key",
    "other_code",
    "participant_mechanism",
    "stored_config",
]


class _Functions(NamedTuple):
    select: Callable[..., Any]
    stopping: Callable[..., Any]
    pending_release: Callable[..., Any] | None
    """`jaxbai.base.Releasing` algorithms only."""
    update: Callable[..., Any]
    plan: Callable[..., Any] | None
    """`jaxbai.base.Episodic` algorithms only."""


@functools.cache
def compiled(alg: Algorithm) -> _Functions:
    """Jitted ask/tell functions of ``alg``, shared by every trial of this process."""
    return _Functions(
        jax.jit(alg.select),
        jax.jit(alg.stopping),
        jax.jit(alg.pending_release) if isinstance(alg, Releasing) else None,
        jax.jit(alg.update),
        jax.jit(alg.plan, static_argnums=2) if isinstance(alg, Episodic) else None,
    )


def algorithm_entry(config: TrialConfig) -> AlgorithmEntry:
    """The registry entry of the trial's algorithm, registered by the code the trial was
    created with (`TrialConfig.plugin`, `TrialConfig.plugin_source`).

    Raises:
      ValueError: it is not registered in this process, naming the plugin that registers it;
        or other code registers it (`other_code`).
    """
    if config.algorithm not in ALGORITHMS:
        raise ValueError(plugins.missing_algorithm(config.algorithm, config.plugin))
    entry = ALGORITHMS[config.algorithm]
    problem = other_code(config, entry)
    if problem is not None:
        raise ValueError(
            f"algorithm {config.algorithm!r}: {problem}; a trial runs only the code it was "
            "created with"
        )
    return entry


def other_code(config: TrialConfig, entry: AlgorithmEntry) -> str | None:
    """How ``entry`` differs from the code the trial was created with, else None.

    The code is identified by `AlgorithmEntry.plugin_source` (the SHA-256 of the source of
    the module defining the factory, whoever imported it). A trial created with jaxbai's own
    algorithm (or by a store that predates the record, ``plugin_source`` None) refuses only
    an entry that replaced one of jaxbai's own names (`jaxbai.register` with
    ``replace=True``); one created with other code refuses jaxbai's own in its place and a
    changed source."""
    now = entry.plugin_source
    if config.plugin_source is None:  # jaxbai's own, or a store older than the record
        if now is None or config.plugin is not None or config.algorithm not in BUILT_IN_NAMES:
            return None
        return f"the trial was created with jaxbai's own, and here {_code(entry)} replaces it"
    if now == config.plugin_source:
        return None
    if now is None:
        return (
            f"the trial was created with {_code(config)}, and here jaxbai's own has the name "
            f"(load {config.plugin or 'that code'} first)"
        )
    return (
        f"the code of the trial's algorithm changed since it was created (source SHA-256 "
        f"{config.plugin_source[:16]}… then, {now[:16]}… now, {_code(entry)})"
    )


def _code(where: TrialConfig | AlgorithmEntry) -> str:
    """Whose code: the plugin that registered it, else a registration in ``__main__`` (or a
    module imported without ``--plugin``)."""
    return f"the plugin {where.plugin!r}" if where.plugin else "code registered outside a plugin"


def build(config: TrialConfig) -> tuple[Algorithm, Any]:
    """The algorithm (built by its registry entry) and its numeric parameters.

    `Trial.create` checks its releases first (`check_releases`); an existing store opens without
    that check, so that it stays readable.
    """
    alg = algorithm_entry(config)(**config.options)
    if not alg.info.takes_epsilon:
        return alg, alg.params(delta=config.delta)
    return alg, alg.params(epsilon=config.epsilon, delta=config.delta)


def check_releases(name: str, alg: Algorithm) -> None:
    """ValueError unless a trial can supply the releases of ``alg`` (global DP; nothing to
    supply otherwise): it hands them to the caller (`jaxbai.base.Releasing`, its estimator a
    `jaxbai.base.ReleasingEstimator` that states its `jaxbai.base.AlgorithmInfo.release_noise`)
    and their noise has an exact
    sampler here: discrete Laplace under ε-DP, discrete Gaussian under ρ-zCDP
    (`jaxbai.base.privacy.CALIBRATED_RELEASES`)."""
    info = alg.info
    if info.privacy != "global":
        return
    if not isinstance(alg, Releasing) or info.release_noise is None:
        raise ValueError(
            f"{name} is global-DP but states no releases a trial can supply: its estimator "
            "needs pending_release and release_noise (jaxbai.base.ReleasingEstimator)"
        )
    if (info.release_noise, info.measure.kind) not in CALIBRATED_RELEASES:
        raise ValueError(
            f"{name} releases {info.release_noise} noise under {info.claim}, and a trial has no "
            "secure sampler for that pair: trials release exact discrete Laplace noise under "
            "ε-DP and exact discrete Gaussian noise under ρ-zCDP (jaxbai.base.zcdp)"
        )


def check_config(config: TrialConfig) -> TrialConfig:
    """``config`` with its fields as their types (K a Python int, ε and δ floats, ``clip`` a
    bool), or ValueError for a configuration no trial may run. `jaxbai.trial.Trial.create` and
    the migration of every older schema run exactly this, before anything is written."""
    if not isinstance(config.options, dict):
        raise ValueError(f"algorithm options must be a dict, got {config.options!r}")
    config = dataclasses.replace(
        config,
        num_arms=checks.check_num_arms(config.num_arms),
        epsilon=None if config.epsilon is None else checks.real_number("epsilon", config.epsilon),
        delta=checks.real_number("delta", config.delta),
        clip=checks.check_flag("clip", config.clip),
    )
    if config.noise not in NOISE_MODES:
        raise ValueError(f"noise must be one of {NOISE_MODES}, got {config.noise!r}")
    if config.outcomes not in OUTCOMES:
        raise ValueError(f"outcomes must be one of {OUTCOMES}, got {config.outcomes!r}")
    try:
        json.dumps(config.options, allow_nan=False)
    except (TypeError, ValueError) as err:
        raise ValueError(f"algorithm options must be plain JSON values: {err}") from err
    info = algorithm_entry(config).info(**config.options)  # as the trial runs it
    if not info.takes_epsilon:
        if config.epsilon is not None:
            raise ValueError(f"{config.algorithm} is not private: pass epsilon=None")
    elif config.epsilon is None:
        raise ValueError(f"{config.algorithm} is private: a real trial needs epsilon")
    else:
        checks.check_mechanism_epsilon(config.epsilon)
    checks.check_open_unit("delta", config.delta)
    if info.participant_mechanism is not None and (config.clip or config.outcomes != "unit"):
        raise ValueError(
            "a local-DP trial never sees raw rewards: participants clip (and check) them on their "
            "device (privatize_locally(..., clip=True))"
        )
    if config.clip and config.outcomes == "binary":
        raise ValueError("binary outcomes are 0 or 1: clip applies to outcomes='unit' only")
    return config


def check_sensitive(config: TrialConfig, sensitive: object) -> None:
    """ValueError unless a store's ``sensitive`` mark is the one its algorithm gives: every
    store but a local-DP trial's holds raw rewards (or sums of them)."""
    want = algorithm_entry(config).info(**config.options).privacy != "local"
    if checks.check_flag("sensitive", sensitive) != want:
        raise ValueError(
            f"the store marks its data sensitive={sensitive!r}, but a {config.algorithm} trial's "
            f"is sensitive={want}"
        )


def participant_mechanism(algorithm: str, options: dict[str, Any]) -> Mechanism:
    """The mechanism the participants of a trial of ``algorithm`` with ``options`` run on their
    device (the command line's ``privatize``): ``alg.info.participant_mechanism``.

    Raises:
      ValueError: an unknown algorithm or option, or an algorithm that is not local-DP.
    """
    mechanism = ALGORITHMS.get_entry(algorithm).info(**options).participant_mechanism
    if mechanism is None:
        raise ValueError(
            f"{algorithm} is not local-DP: its participants send their raw rewards to the trial"
        )
    return mechanism


def stored_config(where: str, config: TrialConfig, sensitive: object) -> TrialConfig:
    """A stored configuration held to the checks `Trial.create` runs (`check_config`,
    `check_sensitive`), before anything is written: a schema-1 file before its migration, and a
    store of schema 2 or 3 (no digest) on open. A schema-4 store's digest covers a
    configuration that was checked when it was created.

    Raises:
      ValueError: ``where`` (which file), then what no trial may run.
    """
    try:
        config = check_config(config)
        check_sensitive(config, sensitive)
    except ValueError as err:
        raise ValueError(f"{where}: {err}") from err
    return config


def initial_key(seed: int | None) -> jax.Array:
    """The trial's first key, ``jax.random.key(seed)``; a random seed from the CSPRNG if None."""
    return jax.random.key(secrets.randbits(32) if seed is None else checks.check_seed(seed))
