"""Running a real adaptive trial: ask/tell around any algorithm, durable, validated, published.

A `Trial` wraps an algorithm's ask/tell API (``select`` / ``update`` / ``stopping``) for the
sequential interaction of Algorithm 3: `Trial.next_arm` issues the arm for the next participant,
`Trial.record` takes her reward, and the trial stops by the algorithm's GLR (or elimination) rule.
Any algorithm of the registry (`jaxbai.registry.ALGORITHMS`) can be run; what the trial needs to
know about it (privacy model, participant-side mechanism, whether it takes ε, whether privacy
needs rewards in [0, 1]) it reads from the algorithm and its registry entry.

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
  by Mironov's snapping mechanism from the CSPRNG (`jaxbai.trial.secure_noise`): the trial asks
  `pending_release` which means an update would release, computes them exactly from its own
  record of the current phase/epoch, snaps them, and passes them to ``update(release=...)``.
* Local DP (``ctb_tt``, ``gauss_ldp_tt``): participants privatise their reward on their own
  device with `jaxbai.trial.secure_noise.privatize_locally`; the trial only ever receives
  privatised values (Definition 7).
* ``ttucb`` is not private; its state file holds raw rewards.

Rewards outside [0, 1] are rejected for algorithms whose privacy proof needs [0, 1]
(``alg.unit_interval``), unless the trial was created with ``clip=True``, which the
publication then states.

Modules: `jaxbai.trial.secure_noise` (CSPRNG noise and the participant-side mechanisms),
`jaxbai.trial.cli` (``python -m jaxbai.trial``); the private ``_config`` (constants and records),
``_store`` (atomic writes, the lock, the state file's codec) and ``_trial`` (`Trial`).

Example:
  >>> import os, tempfile
  >>> path = os.path.join(tempfile.mkdtemp(), "dose.trial")
  >>> with Trial.create(path, "adap_tt_star", num_arms=3, epsilon=1.0, delta=0.05) as trial:
  ...     arm = trial.next_arm()
  ...     trial.record(arm, 1.0)
  ...     trial.status().samples
  1
"""

from jaxbai.registry import ALGORITHMS
from jaxbai.trial import secure_noise
from jaxbai.trial._config import (
    NOISE_MODES,
    PUBLISHED_FIELDS,
    SCHEMA_VERSION,
    TrialConfig,
    TrialStatus,
)
from jaxbai.trial._store import atomic_write
from jaxbai.trial._trial import Trial
from jaxbai.trial.cli import main
from jaxbai.trial.secure_noise import privatize_locally

FACTORIES = ALGORITHMS
"""Former name → factory dictionary of trial algorithms, now the registry itself (entries are
callable like factories); kept for compatibility, use `jaxbai.registry.ALGORITHMS`."""

__all__ = [
    "NOISE_MODES",
    "PUBLISHED_FIELDS",
    "SCHEMA_VERSION",
    "Trial",
    "TrialConfig",
    "TrialStatus",
    "atomic_write",
    "main",
    "privatize_locally",
    "secure_noise",
]
