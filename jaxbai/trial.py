"""Running a real adaptive trial: ask/tell around any algorithm, durable, validated, published.

A `Trial` wraps an algorithm's ask/tell API (``select`` / ``update`` / ``stopping``) for the
sequential interaction of Algorithm 3: `Trial.next_arm` issues the arm for the next participant,
`Trial.record` takes her reward, and the trial stops by the algorithm's GLR (or elimination) rule.

Durability. The whole trial lives in one state file, rewritten atomically after every change
(temporary file, fsync, rename, fsync of the directory), so a process killed at any instant
loses at most the observation being written and never leaves a corrupt file; `Trial.open`
continues exactly where it stopped (algorithm state arrays bit for bit, JAX key, open request).
An advisory lock (``<path>.lock``) keeps two processes from driving one trial at once.

What is kept and what is published (Section 2.3).

* Global DP (``adap_tt``, ``adap_tt_star``, ``dp_se``): the curator's state file holds
  raw-reward statistics. It is sensitive: it is created with mode 0600 and must never be
  shared. `Trial.publish` emits only what Definition 8 protects: the action sequence, the
  recommendation and the stopping time, with ε, δ and the algorithm. Noisy means are released
  by Mironov's snapping mechanism from the CSPRNG (`jaxbai.secure_noise`): the trial asks
  `pending_release` which means an update would release, computes them exactly from its own
  record of the current phase/epoch, snaps them, and passes them to ``update(release=...)``.
* Local DP (``ctb_tt``, ``gauss_ldp_tt``): participants privatise their reward on their own
  device with `jaxbai.secure_noise.privatize_locally`; the trial only ever receives
  privatised values (Definition 7).
* ``ttucb`` is not private; its state file holds raw rewards.

Rewards outside [0, 1] are rejected for algorithms whose privacy proof needs [0, 1]
(``alg.unit_interval``), unless the trial was created with ``clip=True``, which the
publication then states.

Example:
  >>> import os, tempfile
  >>> path = os.path.join(tempfile.mkdtemp(), "dose.trial")
  >>> with Trial.create(path, "adap_tt_star", num_arms=3, epsilon=1.0, delta=0.05) as trial:
  ...     arm = trial.next_arm()
  ...     trial.record(arm, 1.0)
  ...     trial.status().samples
  1
"""

from __future__ import annotations

import argparse
import base64
import dataclasses
import fcntl
import functools
import json
import math
import os
import secrets
import sys
import tempfile
from collections.abc import Callable, Sequence
from fractions import Fraction
from pathlib import Path
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from jaxbai import dpse, secure_noise, toptwo

SCHEMA_VERSION = 1
"""Version of the state-file and publication layouts; `Trial.open` refuses any other."""

FACTORIES: dict[str, Callable[..., Any]] = {
    "ttucb": toptwo.ttucb,
    "ctb_tt": toptwo.ctb_tt,
    "gauss_ldp_tt": toptwo.gauss_ldp_tt,
    "adap_tt": toptwo.adap_tt,
    "adap_tt_star": toptwo.adap_tt_star,
    "dp_se": dpse.dp_se,
}
"""Algorithms a trial can run, by factory name."""

LOCAL_MECHANISMS = {"ctb_tt": "randomised_response", "gauss_ldp_tt": "gaussian"}
"""The participant-side mechanism of each local-DP algorithm."""

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

_FORMAT = "jaxbai-trial"
_PUBLICATION_FORMAT = "jaxbai-trial-publication"


@dataclasses.dataclass(frozen=True)
class TrialConfig:
    """Static description of a trial, fixed at creation.

    Attributes:
      algorithm: factory name, a key of `FACTORIES`.
      options: keyword arguments of the factory (e.g. ``{"threshold": "heuristic"}``).
      num_arms: K.
      epsilon: privacy budget ε (``None`` for the non-private ``ttucb``).
      delta: risk δ.
      clip: whether rewards are clipped into [0, 1] instead of rejected.
      noise: one of `NOISE_MODES`.
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
      algorithm: factory name.
      privacy: ``"none"``, ``"local"`` or ``"global"``.
      num_arms: K.
      epsilon: ε (``None`` when not private).
      delta: δ.
      gamma: γ of the Gaussian mechanism (``gauss_ldp_tt`` only).
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
class _Snapshot:
    """Everything that changes during a trial; one snapshot is one version of the state file."""

    key: jax.Array
    state: Any
    actions: tuple[int, ...]
    pending: int | None
    windows: tuple[tuple[int, Fraction], ...]
    """Per arm, (count, exact sum) of the observations not yet released (global DP, secure)."""


# ------------------------------------------------------------------------------ file helpers
def _fsync_directory(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _temporary_pattern(path: Path) -> tuple[str, str]:
    return f".{path.name}.", ".tmp"


def atomic_write(path: Path, data: bytes, *, exclusive: bool = False) -> None:
    """Replaces (or, if ``exclusive``, creates) ``path`` with ``data``, atomically and durably.

    The bytes go to a mode-0600 temporary file in the same directory, which is fsynced and then
    renamed over ``path`` (or hard-linked to it when ``exclusive``); finally the directory is
    fsynced. A crash at any point leaves either the old file or the new one, never a mix.

    Args:
      path: the destination.
      data: the full new contents.
      exclusive: fail with FileExistsError if ``path`` exists.
    """
    prefix, suffix = _temporary_pattern(path)
    fd, temporary = tempfile.mkstemp(prefix=prefix, suffix=suffix, dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        if exclusive:
            os.link(temporary, path)
            os.unlink(temporary)
        else:
            os.replace(temporary, path)
    except BaseException:
        if os.path.exists(temporary):
            os.unlink(temporary)
        raise
    _fsync_directory(path.parent)


def _remove_stale_temporaries(path: Path) -> None:
    prefix, suffix = _temporary_pattern(path)
    for stale in path.parent.glob(f"{prefix}*{suffix}"):
        stale.unlink(missing_ok=True)


def _lock(path: Path) -> int:
    fd = os.open(f"{path}.lock", os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError as err:
        os.close(fd)
        raise RuntimeError(f"trial {path} is open in another process") from err
    return fd


# ------------------------------------------------------------------------------ encoding
def _encode_array(array: Any) -> dict[str, Any]:
    arr = np.asarray(array)
    return {
        "dtype": arr.dtype.str,
        "shape": list(arr.shape),
        "data": base64.b64encode(arr.tobytes()).decode("ascii"),
    }


def _decode_array(entry: dict[str, Any]) -> np.ndarray:
    raw = base64.b64decode(entry["data"])
    return np.frombuffer(raw, dtype=np.dtype(entry["dtype"])).reshape(entry["shape"]).copy()


def _encode_float(x: float | None) -> str | None:
    return None if x is None else float(x).hex()


def _decode_float(x: str | None) -> float | None:
    return None if x is None else float.fromhex(x)


def _encode_state(state: Any) -> list[dict[str, Any]]:
    return [_encode_array(leaf) for leaf in jax.tree_util.tree_leaves(state)]


def _decode_state(entries: list[dict[str, Any]], template: Any) -> Any:
    leaves, treedef = jax.tree_util.tree_flatten(template)
    if len(entries) != len(leaves):
        raise ValueError("state file does not match the algorithm's state layout")
    decoded = []
    for entry, leaf in zip(entries, leaves, strict=True):
        arr = _decode_array(entry)
        if arr.shape != leaf.shape or arr.dtype != leaf.dtype:
            raise ValueError("state file does not match the algorithm's state layout")
        decoded.append(jnp.asarray(arr))
    return jax.tree_util.tree_unflatten(treedef, decoded)


def _encode(config: TrialConfig, snap: _Snapshot, sensitive: bool) -> bytes:
    document = {
        "format": _FORMAT,
        "schema_version": SCHEMA_VERSION,
        "sensitive": sensitive,
        "config": {
            "algorithm": config.algorithm,
            "options": config.options,
            "num_arms": config.num_arms,
            "epsilon": _encode_float(config.epsilon),
            "delta": _encode_float(config.delta),
            "clip": config.clip,
            "noise": config.noise,
        },
        "key": _encode_array(jax.random.key_data(snap.key)),
        "state": _encode_state(snap.state),
        "actions": _encode_array(np.asarray(snap.actions, np.int32)),
        "pending_arm": snap.pending,
        "windows": [[count, str(total)] for count, total in snap.windows],
    }
    return (json.dumps(document, sort_keys=True, indent=1) + "\n").encode()


def _decode_config(document: dict[str, Any]) -> TrialConfig:
    if document.get("format") != _FORMAT:
        raise ValueError("not a jaxbai trial state file")
    if document.get("schema_version") != SCHEMA_VERSION:
        raise ValueError(
            f"unsupported trial schema version {document.get('schema_version')!r} "
            f"(this jaxbai reads version {SCHEMA_VERSION})"
        )
    raw = document["config"]
    return TrialConfig(
        algorithm=raw["algorithm"],
        options=raw["options"],
        num_arms=raw["num_arms"],
        epsilon=_decode_float(raw["epsilon"]),
        delta=_decode_float(raw["delta"]),
        clip=raw["clip"],
        noise=raw["noise"],
    )


# ------------------------------------------------------------------------------ algorithm glue
class _Functions(NamedTuple):
    select: Callable[..., Any]
    stopping: Callable[..., Any]
    pending_release: Callable[..., Any]
    update: Callable[..., Any]


@functools.cache
def _compiled(alg: Any) -> _Functions:
    """Jitted ask/tell functions of ``alg``, shared by every trial of this process."""
    return _Functions(
        jax.jit(alg.select),
        jax.jit(alg.stopping),
        jax.jit(alg.pending_release),
        jax.jit(alg.update),
    )


def _build(config: TrialConfig) -> tuple[Any, Any]:
    """The algorithm and its numeric parameters."""
    alg = FACTORIES[config.algorithm](**config.options)
    if alg.privacy == "none":
        return alg, alg.params(delta=config.delta)
    return alg, alg.params(epsilon=config.epsilon, delta=config.delta)


def _check_config(config: TrialConfig) -> None:
    if config.algorithm not in FACTORIES:
        raise ValueError(f"algorithm must be one of {sorted(FACTORIES)}, got {config.algorithm!r}")
    if config.noise not in NOISE_MODES:
        raise ValueError(f"noise must be one of {NOISE_MODES}, got {config.noise!r}")
    try:
        json.dumps(config.options, allow_nan=False)
    except (TypeError, ValueError) as err:
        raise ValueError(f"algorithm options must be plain JSON values: {err}") from err
    if config.algorithm == "ttucb":
        if config.epsilon is not None:
            raise ValueError("ttucb is not private: pass epsilon=None")
    elif config.epsilon is None or not (math.isfinite(config.epsilon) and config.epsilon > 0):
        raise ValueError(f"a real trial needs a finite epsilon > 0, got {config.epsilon!r}")
    if config.clip and config.algorithm in LOCAL_MECHANISMS:
        raise ValueError(
            "a local-DP trial never sees raw rewards: participants clip on their device "
            "(privatize_locally(..., clip=True))"
        )


def _first_key(seed: int | None) -> jax.Array:
    return jax.random.key(secrets.randbits(32) if seed is None else seed)


# ------------------------------------------------------------------------------ the trial
class Trial:
    """A durable, validated ask/tell trial around one algorithm; see the module docstring.

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
        snap: _Snapshot,
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
          algorithm: factory name, one of `FACTORIES`.
          num_arms: K ≥ 2.
          epsilon: ε, finite and > 0 (``None`` for ``ttucb``).
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
          ValueError: an invalid configuration.
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
        snap = _Snapshot(key, state, (), None, windows)
        path = Path(path)
        lock_fd = _lock(path)
        try:
            atomic_write(path, _encode(config, snap, alg.privacy != "local"), exclusive=True)
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
        lock_fd = _lock(path)
        try:
            _remove_stale_temporaries(path)
            document = json.loads(path.read_bytes())
            config = _decode_config(document)
            alg, params = _build(config)
            template = alg.init(jax.random.key(0), params, config.num_arms)
            snap = _Snapshot(
                key=jax.random.wrap_key_data(jnp.asarray(_decode_array(document["key"]))),
                state=_decode_state(document["state"], template),
                actions=tuple(int(a) for a in _decode_array(document["actions"])),
                pending=document["pending_arm"],
                windows=tuple((int(c), Fraction(s)) for c, s in document["windows"]),
            )
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
    def algorithm(self) -> Any:
        """The algorithm object (ask/tell API)."""
        return self._alg

    @property
    def gamma(self) -> float | None:
        """γ of the Gaussian mechanism participants must use (``gauss_ldp_tt``), else ``None``."""
        return self._alg.gamma if self._config.algorithm == "gauss_ldp_tt" else None

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
        (`jaxbai.secure_noise.privatize_locally`); otherwise it is the raw reward.
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
        mechanism = LOCAL_MECHANISMS.get(self._config.algorithm)
        if mechanism == "randomised_response":
            z = secure_noise.finite_reward(reward)
            if z not in (0.0, 1.0):
                raise ValueError(
                    f"ctb_tt records randomised-response bits (0 or 1) made on the participant's "
                    f"device by privatize_locally, got {z!r}"
                )
            return z
        if mechanism == "gaussian" or not (self._alg.unit_interval or self._config.clip):
            return secure_noise.finite_reward(reward)
        return secure_noise.unit_reward(reward, self._config.clip)

    def _advance(self, arm: int, z: float) -> _Snapshot:
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
        return _Snapshot(key, state, (*snap.actions, arm), None, windows)

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

    def _commit(self, snap: _Snapshot) -> None:
        if self._lock_fd is None:
            raise RuntimeError("the trial is closed")
        atomic_write(self._path, _encode(self._config, snap, self._alg.privacy != "local"))
        self._snap = snap

    # --- reporting ----------------------------------------------------------------------------
    def _noise(self) -> str:
        privacy = self._alg.privacy
        if privacy == "local":
            return "participant-side " + LOCAL_MECHANISMS[self._config.algorithm]
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
            "format": _PUBLICATION_FORMAT,
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


# ------------------------------------------------------------------------------ command line
def _option(text: str) -> tuple[str, Any]:
    name, sep, value = text.partition("=")
    if not sep:
        raise argparse.ArgumentTypeError(f"expected KEY=VALUE, got {text!r}")
    try:
        return name, json.loads(value)
    except json.JSONDecodeError:
        return name, value


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m jaxbai.trial", description="Run a differentially private BAI trial."
    )
    commands = parser.add_subparsers(dest="command", required=True)
    create = commands.add_parser("create", help="create a trial file")
    create.add_argument("path")
    create.add_argument("--algorithm", required=True, choices=sorted(FACTORIES))
    create.add_argument("--arms", type=int, required=True, help="number of arms K")
    create.add_argument("--epsilon", type=float, help="privacy budget (omit for ttucb)")
    create.add_argument("--delta", type=float, required=True, help="risk")
    create.add_argument("--seed", type=int, help="JAX key seed (default: random)")
    create.add_argument("--clip", action="store_true", help="clip rewards into [0, 1]")
    create.add_argument("--noise", choices=NOISE_MODES, default="secure")
    create.add_argument(
        "--option", type=_option, action="append", default=[], metavar="KEY=VALUE",
        help="algorithm factory option, e.g. threshold=heuristic",
    )  # fmt: skip
    for name, text in (
        ("next", "print the arm for the next participant"),
        ("status", "print the curator's status (JSON)"),
        ("publish", "print the public record (JSON)"),
    ):
        commands.add_parser(name, help=text).add_argument("path")
    record = commands.add_parser("record", help="record the observation for the issued arm")
    record.add_argument("path")
    record.add_argument("arm", type=int)
    record.add_argument("reward", type=float)
    privatize = commands.add_parser("privatize", help="participant side: privatise a reward")
    privatize.add_argument("reward", type=float)
    privatize.add_argument("--epsilon", type=float, required=True)
    privatize.add_argument("--gamma", type=float, help="Gaussian mechanism (gauss_ldp_tt)")
    privatize.add_argument("--clip", action="store_true")
    return parser


def _run(args: argparse.Namespace) -> str:
    if args.command == "privatize":
        z = secure_noise.privatize_locally(
            args.reward, args.epsilon, gamma=args.gamma, clip=args.clip
        )
        return repr(z)
    if args.command == "create":
        with Trial.create(
            args.path, args.algorithm, args.arms, args.epsilon, args.delta, args.seed,
            clip=args.clip, noise=args.noise, **dict(args.option),
        ) as trial:  # fmt: skip
            return json.dumps(dataclasses.asdict(trial.status()), indent=1)
    with Trial.open(args.path) as trial:
        if args.command == "next":
            return str(trial.next_arm())
        if args.command == "record":
            trial.record(args.arm, args.reward)
            return json.dumps(dataclasses.asdict(trial.status()), indent=1)
        if args.command == "status":
            return json.dumps(dataclasses.asdict(trial.status()), indent=1)
        return json.dumps(trial.publish(), indent=1)


def main(argv: Sequence[str] | None = None) -> int:
    """Command-line entry point: ``python -m jaxbai.trial {create,next,record,status,publish}``.

    Returns:
      The exit status: 0, or 1 after printing the error.
    """
    args = _parser().parse_args(argv)
    try:
        print(_run(args))
    except (ValueError, RuntimeError, OSError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
