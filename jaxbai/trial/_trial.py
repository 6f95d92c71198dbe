"""`Trial`: a durable, validated ask/tell trial around one registered algorithm.

The package docstring (`jaxbai.trial`) describes durability, validation and publication; the
state file's layout and the lock live in `jaxbai.trial._store`.

Example:
  >>> import os, tempfile
  >>> path = os.path.join(tempfile.mkdtemp(), "dose.trial")
  >>> with Trial.create(path, "ttucb", num_arms=2, epsilon=None, delta=0.1, seed=0) as trial:
  ...     trial.record(trial.next_arm(), 0.25)
  ...     trial.status().pending_arm is None, trial.gamma
  (True, None)
"""

from __future__ import annotations

import dataclasses
import functools
import json
import math
import os
import secrets
from collections.abc import Callable
from fractions import Fraction
from pathlib import Path
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from jaxbai.base import Algorithm
from jaxbai.registry import ALGORITHMS
from jaxbai.trial import _store, secure_noise
from jaxbai.trial._config import (
    NOISE_MODES,
    PUBLICATION_FORMAT,
    SCHEMA_VERSION,
    Snapshot,
    TrialConfig,
    TrialStatus,
)

__all__ = ["Trial"]


# ------------------------------------------------------------------------------ algorithm glue
class _Functions(NamedTuple):
    select: Callable[..., Any]
    stopping: Callable[..., Any]
    pending_release: Callable[..., Any]
    update: Callable[..., Any]


@functools.cache
def _compiled(alg: Algorithm) -> _Functions:
    """Jitted ask/tell functions of ``alg``, shared by every trial of this process."""
    return _Functions(
        jax.jit(alg.select),
        jax.jit(alg.stopping),
        jax.jit(alg.pending_release),
        jax.jit(alg.update),
    )


def _build(config: TrialConfig) -> tuple[Algorithm, Any]:
    """The algorithm (built by its registry entry) and its numeric parameters."""
    alg = ALGORITHMS.get_entry(config.algorithm)(**config.options)
    if not alg.private_epsilon:
        return alg, alg.params(delta=config.delta)
    return alg, alg.params(epsilon=config.epsilon, delta=config.delta)


def _check_config(config: TrialConfig) -> None:
    entry = ALGORITHMS.get_entry(config.algorithm)
    if config.noise not in NOISE_MODES:
        raise ValueError(f"noise must be one of {NOISE_MODES}, got {config.noise!r}")
    try:
        json.dumps(config.options, allow_nan=False)
    except (TypeError, ValueError) as err:
        raise ValueError(f"algorithm options must be plain JSON values: {err}") from err
    if not entry.takes_epsilon:
        if config.epsilon is not None:
            raise ValueError(f"{config.algorithm} is not private: pass epsilon=None")
    elif config.epsilon is None or not (math.isfinite(config.epsilon) and config.epsilon > 0):
        raise ValueError(f"a real trial needs a finite epsilon > 0, got {config.epsilon!r}")
    if config.clip and entry.participant_mechanism is not None:
        raise ValueError(
            "a local-DP trial never sees raw rewards: participants clip on their device "
            "(privatize_locally(..., clip=True))"
        )


def _first_key(seed: int | None) -> jax.Array:
    return jax.random.key(secrets.randbits(32) if seed is None else seed)


# ------------------------------------------------------------------------------ the trial
class Trial:
    """A durable, validated ask/tell trial around one algorithm; see `jaxbai.trial`.

    Build one with `Trial.create` or `Trial.open`, not the constructor. A trial holds an
    exclusive lock on its file until `close` (or the end of a ``with`` block).

    Randomness: the JAX key ``k0 = jax.random.key(seed)`` is split once into
    ``(k_init, k)`` for ``init``; every `record` then splits ``k, k_update = split(k)`` and
    passes ``k_update`` to ``update``. In ``"secure"`` mode the curator's Laplace noise does
    not come from these keys but from the ``uniform`` source (the CSPRNG unless a test injects
    another).
    """

    def __init__(
        self,
        path: Path,
        lock_fd: int,
        config: TrialConfig,
        snap: Snapshot,
        uniform: secure_noise.Uniform | None,
    ) -> None:
        self._path = path
        self._lock_fd: int | None = lock_fd
        self._config = config
        self._snap = snap
        self._alg, self._params = _build(config)
        self._uniform = secure_noise.secure_uniform if uniform is None else uniform
        self._injected = uniform is not None
        self._fns = _compiled(self._alg)

    # --- construction ------------------------------------------------------------------------
    @classmethod
    def create(
        cls,
        path: str | os.PathLike[str],
        algorithm: str,
        num_arms: int,
        epsilon: float | None,
        delta: float,
        seed: int | None = None,
        *,
        clip: bool = False,
        noise: str = "secure",
        uniform: secure_noise.Uniform | None = None,
        **options: Any,
    ) -> Trial:
        """Creates a new trial file (mode 0600) and opens it.

        Args:
          path: the state file to create; it must not exist.
          algorithm: registry name, a key of `jaxbai.registry.ALGORITHMS`.
          num_arms: K ≥ 2.
          epsilon: ε, finite and > 0 (``None`` for an algorithm that takes none: ``ttucb``).
          delta: δ in (0, 1).
          seed: seed of the JAX key (tie-breaking priorities; all noise in ``"prng"`` mode);
            ``None`` draws one from the CSPRNG.
          clip: clip raw rewards into [0, 1] instead of rejecting them (global DP and
            ``ttucb``; local-DP participants clip on their device).
          noise: ``"secure"`` (real trials) or ``"prng"`` (rehearsals); see `NOISE_MODES`.
          uniform: source of doubles in (0, 1) for the secure samplers; tests only.
          **options: factory options, e.g. ``threshold="heuristic"``.

        Returns:
          The open trial.

        Raises:
          ValueError: an invalid configuration, or an unknown algorithm or option.
          FileExistsError: ``path`` exists.
        """
        config = TrialConfig(
            algorithm=algorithm,
            options=dict(options),
            num_arms=int(num_arms),
            epsilon=None if epsilon is None else float(epsilon),
            delta=float(delta),
            clip=bool(clip),
            noise=noise,
        )
        _check_config(config)
        alg, params = _build(config)
        key_init, key = jax.random.split(_first_key(seed))
        state = alg.init(key_init, params, config.num_arms)
        secure_release = alg.privacy == "global" and config.noise == "secure"
        windows = ((0, Fraction(0)),) * config.num_arms if secure_release else ()
        snap = Snapshot(key, state, (), None, windows)
        path = Path(path)
        lock_fd = _store.lock(path)
        try:
            sensitive = alg.privacy != "local"
            _store.atomic_write(path, _store.encode(config, snap, sensitive), exclusive=True)
            return cls(path, lock_fd, config, snap, uniform)
        except BaseException:
            os.close(lock_fd)
            raise

    @classmethod
    def open(
        cls,
        path: str | os.PathLike[str],
        *,
        uniform: secure_noise.Uniform | None = None,
    ) -> Trial:
        """Opens an existing trial where it stopped.

        Args:
          path: the state file.
          uniform: source of doubles in (0, 1) for the secure samplers; tests only.

        Raises:
          FileNotFoundError: no such file.
          ValueError: not a trial file, or an unsupported schema version.
          RuntimeError: another process has the trial open.
        """
        path = Path(path)
        if not path.exists():
            raise FileNotFoundError(f"no trial at {path}")
        lock_fd = _store.lock(path)
        try:
            _store.remove_stale_temporaries(path)
            document = json.loads(path.read_bytes())
            config = _store.decode_config(document)
            alg, params = _build(config)
            template = alg.init(jax.random.key(0), params, config.num_arms)
            snap = _store.decode_snapshot(document, template)
            return cls(path, lock_fd, config, snap, uniform)
        except BaseException:
            os.close(lock_fd)
            raise

    def close(self) -> None:
        """Releases the lock; the file is always up to date, so nothing else is needed."""
        if self._lock_fd is not None:
            os.close(self._lock_fd)
            self._lock_fd = None

    def __enter__(self) -> Trial:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- properties ---------------------------------------------------------------------------
    @property
    def path(self) -> Path:
        """The state file."""
        return self._path

    @property
    def config(self) -> TrialConfig:
        """The trial's static configuration."""
        return self._config

    @property
    def algorithm(self) -> Algorithm:
        """The algorithm object (ask/tell API)."""
        return self._alg

    @property
    def gamma(self) -> float | None:
        """γ of the participants' mechanism (``alg.mechanism_gamma``; ``gauss_ldp_tt``) or None."""
        return self._alg.mechanism_gamma

    # --- ask/tell -----------------------------------------------------------------------------
    def _stopping(self) -> tuple[bool, int]:
        stop, recommendation = self._fns.stopping(self._snap.state, self._params)
        return bool(stop), int(recommendation)

    def next_arm(self) -> int:
        """The arm for the next participant; the same arm again until it is recorded.

        Raises:
          RuntimeError: the trial has stopped (see `status` and `publish`).
        """
        if self._snap.pending is not None:
            return self._snap.pending
        if self._stopping()[0]:
            raise RuntimeError("the trial has stopped: see status() and publish()")
        arm = int(self._fns.select(self._snap.state, self._params))
        self._commit(dataclasses.replace(self._snap, pending=arm))
        return arm

    def record(self, arm: int, reward: float) -> None:
        """Records the observation for the arm `next_arm` issued, and saves the trial.

        For local-DP algorithms ``reward`` is the participant's privatised value
        (`jaxbai.trial.secure_noise.privatize_locally`); otherwise it is the raw reward.
        Invalid input raises before anything changes, in memory or on disk.

        Args:
          arm: the arm `next_arm` returned.
          reward: the (privatised, for local DP) observation.

        Raises:
          ValueError: no open request (nothing issued, or already recorded), a different arm,
            a non-finite reward, a reward outside [0, 1] when the algorithm's privacy needs
            [0, 1] (and ``clip`` is off), or a non-bit for randomised response.
        """
        pending = self._snap.pending
        if pending is None:
            raise ValueError(
                "no open request: call next_arm() first; each request takes exactly one record"
            )
        if isinstance(arm, bool) or not isinstance(arm, (int, np.integer)) or arm != pending:
            raise ValueError(f"arm {arm!r} is not the arm next_arm() issued ({pending})")
        z = self._observation(reward)
        self._commit(self._advance(pending, z))

    def _observation(self, reward: float) -> float:
        mechanism = self._alg.local_mechanism
        if mechanism == "randomised_response":
            z = secure_noise.finite_reward(reward)
            if z not in (0.0, 1.0):
                raise ValueError(
                    f"{self._config.algorithm} records randomised-response bits (0 or 1) made on "
                    f"the participant's device by privatize_locally, got {z!r}"
                )
            return z
        # Another participant-side mechanism (Gaussian) outputs any real: only finiteness holds.
        if mechanism is not None or not (self._alg.unit_interval or self._config.clip):
            return secure_noise.finite_reward(reward)
        return secure_noise.unit_reward(reward, self._config.clip)

    def _advance(self, arm: int, z: float) -> Snapshot:
        """The snapshot after recording ``z`` for ``arm`` (pure: nothing is saved)."""
        snap = self._snap
        key, key_update = jax.random.split(snap.key)
        release = None
        windows = snap.windows
        if windows:
            windows = _add_to_window(windows, arm, z)
            release, windows = self._release(arm, z, windows)
        state = self._fns.update(
            key_update, snap.state, jnp.int32(arm), jnp.float32(z), self._params, release
        )
        return Snapshot(key, state, (*snap.actions, arm), None, windows)

    def _release(
        self, arm: int, z: float, windows: tuple[tuple[int, Fraction], ...]
    ) -> tuple[jax.Array, tuple[tuple[int, Fraction], ...]]:
        """Snapped noisy means for the arms this update releases (NaN elsewhere: unused)."""
        due, _, counts = self._fns.pending_release(
            self._snap.state, jnp.int32(arm), jnp.float32(z), self._params
        )
        release = np.full(self._config.num_arms, np.nan)
        if not bool(due):
            return jnp.asarray(release, jnp.float32), windows
        updated = list(windows)
        for a, count in enumerate(np.asarray(counts).tolist()):
            if count == 0:
                continue
            held, total = windows[a]
            if held != count:
                raise RuntimeError(
                    f"the algorithm would release a mean of {count} samples of arm {a}, but the "
                    f"trial holds {held} unreleased ones: refusing an unaccounted release"
                )
            release[a] = secure_noise.release_mean(
                total, count, self._config.epsilon, self._uniform
            )
            updated[a] = (0, Fraction(0))
        return jnp.asarray(release, jnp.float32), tuple(updated)

    def _commit(self, snap: Snapshot) -> None:
        if self._lock_fd is None:
            raise RuntimeError("the trial is closed")
        sensitive = self._alg.privacy != "local"
        _store.atomic_write(self._path, _store.encode(self._config, snap, sensitive))
        self._snap = snap

    # --- reporting ----------------------------------------------------------------------------
    def _noise(self) -> str:
        privacy = self._alg.privacy
        if privacy == "local":
            return f"participant-side {self._alg.local_mechanism}"
        if privacy == "none":
            return "none"
        if self._config.noise == "prng":
            return "laplace from the JAX PRNG (rehearsal only: not secret, not snapped)"
        if self._injected:
            return "snapped laplace from an injected uniform source (testing only)"
        return "snapped laplace (Mironov 2012) from the operating system CSPRNG"

    def status(self) -> TrialStatus:
        """Where the trial stands (for the curator; not for publication)."""
        stopped, recommendation = self._stopping()
        return TrialStatus(
            algorithm=self._config.algorithm,
            privacy=self._alg.privacy,
            num_arms=self._config.num_arms,
            epsilon=self._config.epsilon,
            delta=self._config.delta,
            gamma=self.gamma,
            samples=len(self._snap.actions),
            stopped=stopped,
            recommendation=recommendation if stopped else None,
            pending_arm=self._snap.pending,
            clip=self._config.clip,
            noise=self._noise(),
        )

    def publish(self) -> dict[str, Any]:
        """The public record: only the outputs Definition 8 protects, plus the configuration.

        ``actions`` is the arm sequence a_1, …, a_n; once stopped, ``stopping_time`` is τ = n
        and ``recommendation`` is â (both ``None`` before). No reward, mean, count or other
        statistic of the data is included (the keys are exactly `PUBLISHED_FIELDS`).

        Returns:
          A JSON-serialisable dict.
        """
        stopped, recommendation = self._stopping()
        return {
            "format": PUBLICATION_FORMAT,
            "schema_version": SCHEMA_VERSION,
            "algorithm": self._config.algorithm,
            "options": self._config.options,
            "privacy": self._alg.privacy,
            "num_arms": self._config.num_arms,
            "epsilon": self._config.epsilon,
            "delta": self._config.delta,
            "gamma": self.gamma,
            "clip": self._config.clip,
            "noise": self._noise(),
            "actions": list(self._snap.actions),
            "stopped": stopped,
            "stopping_time": len(self._snap.actions) if stopped else None,
            "recommendation": recommendation if stopped else None,
        }


def _add_to_window(
    windows: tuple[tuple[int, Fraction], ...], arm: int, z: float
) -> tuple[tuple[int, Fraction], ...]:
    count, total = windows[arm]
    return (*windows[:arm], (count + 1, total + Fraction(z)), *windows[arm + 1 :])
