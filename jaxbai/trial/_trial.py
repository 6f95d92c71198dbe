"""`Trial`: a durable, validated ask/tell trial around one registered algorithm.

The package docstring (`jaxbai.trial`) describes durability, cohorts, validation and
publication; the store's layout is in `jaxbai.trial._store`, its lock and files in `_files`,
the releases in `_release`, the checks of a record in `_records`.

Examples:
  >>> import os, tempfile
  >>> path = os.path.join(tempfile.mkdtemp(), "dose.trial")
  >>> with Trial.create(path, "ttucb", num_arms=2, epsilon=None, delta=0.1, seed=0) as trial:
  ...     trial.record(trial.next_arm(), 0.25)
  ...     trial.status().pending_arm is None, trial.mechanism
  (True, None)
"""

from __future__ import annotations

import functools
import math
import os
import threading
import weakref
from fractions import Fraction
from pathlib import Path
from typing import Any

import jax
import numpy as np

import jaxbai.trial._store as _store
from jaxbai import checks
from jaxbai.base import Algorithm, Episodic, Mechanism
from jaxbai.mechanisms.discrete import RandBits
from jaxbai.registry import ALGORITHMS
from jaxbai.trial._algorithm import build, check_config, check_releases, compiled, initial_key
from jaxbai.trial._config import (
    OTHER_THREAD,
    PUBLICATION_FORMAT,
    PUBLICATION_VERSION,
    Snapshot,
    TrialConfig,
    TrialStatus,
    code_origin,
    published_plugin,
)
from jaxbai.trial._records import (
    check_finite_state,
    check_observation,
    check_participant,
    is_index,
)
from jaxbai.trial._release import Releaser, add_to_window
from jaxbai.trial._session import close_left_open

__all__ = ["Trial"]

_PLAN_LENGTHS = (256, 4096, 65536, 1 << 20)
"""Lengths `Trial.next_batch` plans with, shortest first (each compiles once per process); a
cohort holds at most the last one."""

_split = jax.jit(jax.random.split)
"""`jax.random.split`, dispatched as one compiled call (the same keys, a quarter of the cost)."""


# ------------------------------------------------------------------------------ the trial
class Trial:
    """A durable, validated ask/tell trial around one algorithm; see `jaxbai.trial`.

    Build one with `Trial.create` or `Trial.open`, not the constructor. A trial holds an
    exclusive lock on its store (the file itself, whatever path reaches it) until `close` (or
    the end of a ``with`` block); ``Trial.open(path, read_only=True)`` takes none and only
    reads.

    Participants are numbered by sample index: participant p is the (p+1)-th sample, whose arm
    is ``publish()["actions"][p]``. Outcomes are applied in participant order, whatever order
    they arrive in (`record`).

    Randomness: the JAX key ``k0 = jax.random.key(seed)`` is split once into
    ``(k_init, k)`` for ``init``; every applied outcome then splits ``k, k_update = split(k)``
    and passes ``k_update`` to ``update``. Releases (global DP) use the CSPRNG (``"secure"``)
    or a generator seeded by ``fold_in(k_update, 1)`` (``"prng"``).
    """

    def __init__(self, store: _store.Store, randbits: RandBits | None) -> None:
        self._store: _store.Store | None = store
        self._thread = threading.get_ident()
        self._path = store.path
        self._config = store.config
        self._alg, self._params = build(self._config)
        self._releaser = Releaser(self._config, self._alg, randbits)
        self._fns = compiled(self._alg)
        template = self._alg.init(jax.random.key(0), self._params, self._config.num_arms)
        self._snap = store.snapshot(template)
        self._issued, self._held = store.issued()
        self._issued_here: set[int] = set()
        """Open assignments this object issued (`record` may then omit the participant)."""
        # Last, once nothing here can fail (open/create close the store themselves if it does):
        # a trial dropped or left open at exit is closed then (one file, the lock released).
        self._closer = weakref.finalize(self, close_left_open, store)

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
        outcomes: str = "unit",
        randbits: RandBits | None = None,
        **options: Any,
    ) -> Trial:
        """Creates a new trial store (mode 0600) and opens it.

        Args:
          path: the store to create; it must not exist.
          algorithm: registry name, a key of `jaxbai.registry.ALGORITHMS`.
          num_arms: K ≥ 2.
          epsilon: ε in [1e-12, 30] (``None`` for an algorithm that takes none:
            ``ttucb``).
          delta: δ in (0, 1).
          seed: seed of the JAX key, in [0, 2³²) (tie-breaking priorities; all noise in
            ``"prng"`` mode); ``None`` draws one from the CSPRNG.
          clip: clip raw rewards into [0, 1] instead of rejecting them (``outcomes="unit"``,
            global DP and non-private algorithms; local-DP participants clip on their device).
          noise: ``"secure"`` (real trials) or ``"prng"`` (rehearsals); see `NOISE_MODES`.
          outcomes: ``"unit"`` (rewards in [0, 1]) or ``"binary"`` (0 or 1: exact releases);
            see `OUTCOMES`.
          randbits: source of fair bits for the releases in ``"secure"`` mode; tests only.
          **options: factory options, e.g. ``threshold="heuristic"``.

        Returns:
          The open trial.

        Raises:
          ValueError: an invalid configuration, or an unknown algorithm or option.
          RuntimeError: a real global-DP trial without OpenDP installed.
          FileExistsError: ``path`` exists.
        """
        entry = ALGORITHMS.get_entry(algorithm)
        config = check_config(
            TrialConfig(
                algorithm=algorithm,
                options=dict(options),
                num_arms=num_arms,
                epsilon=epsilon,
                delta=delta,
                clip=clip,
                noise=noise,
                outcomes=outcomes,
                plugin=entry.plugin,
                plugin_source=entry.plugin_source,
            )
        )
        first_key = initial_key(seed)
        alg, params = build(config)
        check_releases(config.algorithm, alg)  # fails now, not at the first release
        Releaser(config, alg, randbits)
        key_init, key = jax.random.split(first_key)
        state = alg.init(key_init, params, config.num_arms)
        windows = ((0, Fraction(0)),) * config.num_arms if alg.info.privacy == "global" else ()
        sensitive = alg.info.privacy != "local"
        snap = Snapshot(key, state, 0, windows)
        store = _store.Store.create(Path(path), config, sensitive, snap)
        try:
            return cls(store, randbits)
        except BaseException:
            store.close()
            raise

    @classmethod
    def open(
        cls,
        path: str | os.PathLike[str],
        *,
        read_only: bool = False,
        randbits: RandBits | None = None,
    ) -> Trial:
        """Opens an existing trial where it stopped (migrating an older store).

        The store is verified first (`jaxbai.trial._store`: its digest, and that its log is
        present and its own); a store that fails is refused, never continued.

        Args:
          path: the store.
          read_only: open it only to read (`status`, `publish`): no lock and no write, so it
            works beside the process running the trial and on read-only media.
          randbits: source of fair bits for the releases in ``"secure"`` mode; tests only.

        Raises:
          FileNotFoundError: no such file.
          ValueError: not a trial store, an unsupported schema version, a schema-1 file that
            cannot be migrated, a corrupted store, or a missing or foreign log.
          RuntimeError: another process has the trial open (not with ``read_only``).
        """
        path = Path(path)
        if not path.is_file():
            raise FileNotFoundError(f"no trial at {path}")
        store = _store.Store.open(path, writable=not checks.check_flag("read_only", read_only))
        try:
            return cls(store, randbits)
        except BaseException:
            store.close()
            raise

    def close(self) -> None:
        """Releases the lock, leaving the store one self-contained file (`jaxbai.trial._store`);
        every record is already durable. RuntimeError (once closed) if a full disk or a reader
        kept it from becoming one file: it stays two, ``x.trial`` and ``x.trial-wal``."""
        if self._store is not None:
            self._check_thread()
        store, self._store = self._store, None
        self._closer.detach()
        if store is not None:
            store.close()

    def __enter__(self) -> Trial:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- properties ---------------------------------------------------------------------------
    @property
    def path(self) -> Path:
        """The store."""
        return self._path

    def _open_store(self) -> _store.Store:
        if self._store is None:
            raise RuntimeError("the trial is closed")
        self._check_thread()
        return self._store

    def _check_thread(self) -> None:
        """RuntimeError in a thread other than the one that opened the trial."""
        if threading.get_ident() != self._thread:
            raise RuntimeError(OTHER_THREAD)

    @property
    def config(self) -> TrialConfig:
        """The trial's static configuration."""
        return self._config

    @property
    def algorithm(self) -> Algorithm:
        """The algorithm object (ask/tell API)."""
        return self._alg

    @property
    def mechanism(self) -> Mechanism | None:
        """The participants' mechanism (local DP; they run it with
        `jaxbai.mechanisms.secure.privatize_locally`), else None; its measure's δ_p is γ."""
        return self._alg.info.participant_mechanism

    # --- assignments --------------------------------------------------------------------------
    def _stopping(self) -> tuple[bool, int]:
        stop, recommendation = self._fns.stopping(self._snap.state, self._params)
        return bool(stop), int(recommendation)

    def _open_assignments(self) -> list[tuple[int, int]]:
        return [(p, arm) for p, arm in self._issued.items() if p not in self._held]

    def _check_running(self) -> None:
        self._open_store().check_writer()  # before any computation: a fork's would hang
        if self._stopping()[0]:
            raise RuntimeError("the trial has stopped: see status() and publish()")

    def _write(self, *args: Any, **changes: Any) -> None:
        self._open_store().write(*args, **changes)

    def _issue(self, assignments: list[tuple[int, int]]) -> None:
        self._write(issue=assignments, fsync=False)  # reissued identically if lost
        self._issued.update(assignments)
        self._issued_here.update(p for p, _ in assignments)

    def next_assignment(self) -> tuple[int, int]:
        """(participant, arm) for the next participant; the same again until it is recorded.

        Record its outcome with ``record(arm, reward, participant=participant)``.

        Raises:
          RuntimeError: the trial has stopped (see `status` and `publish`), or a cohort of
            several assignments is open (record those first).
        """
        if len(self._issued) == 1:
            assignment = next(iter(self._issued.items()))
            self._issued_here.add(assignment[0])  # handed out by this object, again
            return assignment
        if self._issued:
            raise RuntimeError(
                f"{len(self._open_assignments())} assignments of a cohort are open: record their "
                "outcomes with record(..., participant=p) first (next_batch() lists them)"
            )
        self._check_running()
        assignment = (self._snap.samples, int(self._fns.select(self._snap.state, self._params)))
        self._issue([assignment])
        return assignment

    def next_arm(self) -> int:
        """The arm of `next_assignment` (for one operator recording through this object)."""
        return self.next_assignment()[1]

    def next_batch(self, max_size: int | None = None) -> list[tuple[int, int]]:
        """A cohort: (participant, arm) pairs up to the next episode end (Appendix H).

        The arms up to the next episode end of an episodic algorithm do not depend on any
        outcome in between (``alg.plan``, docs/semantics.md §19), so a cohort can be enrolled at
        once and its outcomes recorded in any order (`record` with ``participant=``), with
        exactly the state, releases and publication of recording them one by one. While a
        cohort is open this returns its assignments still awaiting an outcome, never new ones.

        Args:
          max_size: at most this many assignments (``None``: up to the episode end; a cohort
            never exceeds 2^20).

        Returns:
          (participant, arm) pairs in plan order.

        Raises:
          ValueError: a fully sequential algorithm (use `next_arm`), or a bad ``max_size``.
          RuntimeError: the trial has stopped.
        """
        if not isinstance(self._alg, Episodic):
            raise ValueError(
                f"{self._config.algorithm} is fully sequential: each assignment needs the "
                "previous outcome, so it has no cohorts; use next_arm()"
            )
        if max_size is not None and (not is_index(max_size) or max_size < 1):
            raise ValueError(f"max_size must be a positive integer or None, got {max_size!r}")
        if self._issued:
            return self._open_assignments()
        self._check_running()
        limit = math.inf if max_size is None else int(max_size)
        for length in _PLAN_LENGTHS:
            arms, planned = self._fns.plan(self._snap.state, self._params, length)
            planned = int(planned)
            if planned < length or length >= limit:
                break
        arms = np.asarray(arms)[: min(planned, limit)].tolist()
        batch = [(self._snap.samples + i, arm) for i, arm in enumerate(arms)]
        self._issue(batch)
        return batch

    # --- outcomes -----------------------------------------------------------------------------
    def record(self, arm: int, reward: float, participant: int | None = None) -> None:
        """Records a participant's outcome, and saves the trial.

        Outcomes are applied in participant order: one that arrives before an earlier
        participant's is held durably until that one arrives. For local-DP algorithms
        ``reward`` is the participant's privatised value
        (`jaxbai.mechanisms.secure.privatize_locally`); otherwise it is the raw reward.
        Invalid input raises before anything changes, in memory or on disk.

        Args:
          arm: the arm the participant was assigned.
          reward: the (privatised, for local DP) observation.
          participant: the participant's id (from `next_assignment` or `next_batch`). It
            may be omitted only for the one open assignment and only if this object handed
            it out (`next_arm`, `next_assignment`): the store's lock keeps anyone else from
            recording in between, so the outcome cannot be another participant's. An
            assignment this object did not hand out (issued before it was opened, by another
            operator perhaps) needs its id.

        Raises:
          ValueError: no such open assignment (nothing issued, or already recorded), several
            open and no ``participant``, a different arm, a non-finite reward, a reward outside
            [0, 1] when the algorithm's privacy needs [0, 1] (and ``clip`` is off), not 0 or 1
            for binary outcomes, or not an output of the participants' mechanism (0 or 1 for
            randomised response; `jaxbai.base.Mechanism.outputs`).
          RuntimeError: open read-only, a fork of the process that opened it, or the path no
            longer names the file it opened (`jaxbai.trial._store.Store.check_writer`).
        """
        self._open_store().check_writer()
        p = check_participant(
            participant, self._issued, self._issued_here, self._held, self._snap.samples
        )
        assigned = self._issued[p]
        if not is_index(arm) or arm != assigned:
            raise ValueError(f"arm {arm!r} is not the arm issued to participant {p} ({assigned})")
        z = check_observation(reward, self._alg.info, self._config)
        if p != self._snap.samples:
            self._write(hold=[(p, z)])
            self._held[p] = z
            return
        snap, applied = self._snap, []
        while True:
            snap = self._advance(snap, self._issued[p], z)
            applied.append(p)
            if p + 1 not in self._held:
                break
            p += 1
            z = self._held[p]
        check_finite_state(snap.state, applied)
        self._write(snap, release=applied[1:])
        self._snap = snap
        for q in applied:
            del self._issued[q]
            self._held.pop(q, None)
            self._issued_here.discard(q)

    def _advance(self, snap: Snapshot, arm: int, z: float) -> Snapshot:
        """The snapshot after applying ``z`` for ``arm`` (pure but for the release's noise)."""
        key, key_update = _split(snap.key)
        args = (key_update, snap.state, np.int32(arm), np.float32(z), self._params)
        windows = snap.windows
        if not windows:
            return Snapshot(key, self._fns.update(*args), snap.samples + 1, windows)
        windows = add_to_window(windows, arm, z)
        pending = functools.partial(self._fns.pending_release, params=self._params)
        release, windows = self._releaser.release(pending, snap.state, arm, z, windows, key_update)
        state = self._fns.update(*args, release)
        return Snapshot(key, state, snap.samples + 1, windows)

    # --- reporting ----------------------------------------------------------------------------
    def _gamma(self) -> float | None:  # γ of an (ε, γ) participant mechanism
        return None if self.mechanism is None else self.mechanism.measure.delta

    def _noise(self) -> str:
        if self.mechanism is not None:
            return f"participant-side {self.mechanism.name}"
        if self._alg.info.privacy == "none":
            return "none"
        text = self._releaser.describe()
        migrated_at = self._open_store().migrated_at
        if migrated_at is not None:
            text += f" (before sample {migrated_at}: snapped laplace, schema 1)"
        return text

    def status(self) -> TrialStatus:
        """Where the trial stands (for the curator; not for publication).

        It lists every open assignment, so its cost grows with the open cohort: poll it per
        cohort rather than per record.
        """
        stopped, recommendation = self._stopping()
        return TrialStatus(
            algorithm=self._config.algorithm,
            plugin=code_origin(self._config),
            privacy=self._alg.info.privacy,
            privacy_measure=self._alg.info.claim,
            num_arms=self._config.num_arms,
            epsilon=self._config.epsilon,
            delta=self._config.delta,
            gamma=self._gamma(),
            samples=self._snap.samples,
            stopped=stopped,
            recommendation=recommendation if stopped else None,
            pending_arm=next(iter(self._issued.values())) if len(self._issued) == 1 else None,
            clip=self._config.clip,
            noise=self._noise(),
            outcomes=self._config.outcomes,
            open_assignments=tuple(self._open_assignments()),
            held=len(self._held),
        )

    def publish(self) -> dict[str, Any]:
        """The public record: only the outputs Definition 8 protects, plus the configuration.

        ``actions`` is the arm sequence a_1, …, a_n of the recorded outcomes; once stopped,
        ``stopping_time`` is τ = n and ``recommendation`` is â (both ``None`` before).
        ``resolution`` (m, the grid 1/m of released sums) and ``release_epsilon`` (the
        effective ε of each release, at most ε) describe the releases of global-DP trials
        (``None`` otherwise). No reward, mean, count or other statistic of the data is
        included (the keys are exactly `PUBLISHED_FIELDS`). ``plugin`` is None for jaxbai's
        own algorithms; for a plugin's it names the module and its source's SHA-256, and says
        that ``privacy`` is the plugin's own claim, which jaxbai does not check.

        Returns:
          A JSON-serialisable dict.
        """
        stopped, recommendation = self._stopping()
        samples = self._snap.samples
        return {
            "format": PUBLICATION_FORMAT,
            "schema_version": PUBLICATION_VERSION,
            "algorithm": self._config.algorithm,
            "plugin": published_plugin(self._config),
            "options": self._config.options,
            "privacy": self._alg.info.privacy,
            "privacy_measure": self._alg.info.claim,
            "num_arms": self._config.num_arms,
            "epsilon": self._config.epsilon,
            "delta": self._config.delta,
            "gamma": self._gamma(),
            "clip": self._config.clip,
            "noise": self._noise(),
            "outcomes": self._config.outcomes,
            "resolution": self._releaser.resolution,
            "release_epsilon": self._releaser.epsilon,
            "actions": self._open_store().actions(samples),
            "stopped": stopped,
            "stopping_time": samples if stopped else None,
            "recommendation": recommendation if stopped else None,
        }
