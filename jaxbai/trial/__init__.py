"""Running a real adaptive trial: ask/tell around any algorithm, durable, validated, published.

A `Trial` wraps an algorithm's ask/tell API (``select`` / ``update`` / ``stopping``) for the
sequential interaction of Algorithm 3: `Trial.next_arm` issues the arm for the next participant,
`Trial.record` takes her reward, and the trial stops by the algorithm's GLR (or elimination) rule.
Any algorithm of the registry (`jaxbai.registry.ALGORITHMS`) can be run; what the trial needs to
know about it (privacy model, participant-side mechanism, whether it takes ε, whether privacy
needs rewards in [0, 1], whether it plans episodes) it reads from the algorithm and its
registry entry.

Cohorts (Appendix H). For an episodic algorithm (DAF, DPA: ``adap_tt``, ``adap_tt_star``,
``ttucb_dpa`` and their ``_global`` variants), `Trial.next_batch` assigns a whole cohort up to
the next episode end at once (``alg.plan``), and `Trial.record` (``participant=``) accepts its
outcomes in any order: they are applied in participant order, early arrivals held durably, so
the state, the releases and the publication are exactly those of recording one by one.

Durability. The trial lives in one SQLite store (`jaxbai.trial._store`: WAL, synchronous=FULL):
every record is one transaction whose I/O does not grow with the trial, a process killed at any
instant loses at most the record being written, and `Trial.open` continues exactly where it
stopped (state arrays bit for bit, JAX key, open assignments, held outcomes). Assignments are
committed without waiting for the disk: they are a function of the stored state, so one lost to
a power failure is issued again identically. A schema-1 JSON state file, and stores of schemas
2 and 3, are migrated on open. Rehearsals and simulations whose trials can be thrown away may
skip the fsyncs (`synchronous`).

Integrity and ownership. Every open verifies a SHA-256 digest of the state, the configuration
and the assignment log, and refuses a store that fails it. The writer locks the database file
itself, so no second path (a link, a copy of the path) opens a second writer; readers
(``Trial.open(path, read_only=True)``, the CLI's ``status`` and ``publish``) take no lock and
write nothing. A closed trial is one file; an open or interrupted one is two (``x.trial`` and
its log ``x.trial-wal``), and opening one without the other, or with another trial's log, is
refused. `backup` copies a trial, open or not, into one self-contained file.

What is kept and what is published (Section 2.3).

* Global DP (``adap_tt``, ``adap_tt_star``, ``dp_se``): the curator's store holds raw-reward
  statistics. It is sensitive: it is created with mode 0600 and must never be shared.
  `Trial.publish` emits only what Definition 8 protects: the action sequence, the
  recommendation and the stopping time, with ε, δ, the algorithm and its privacy claim. Noisy
  means are released with the exact discrete noise the algorithm declares, discrete Laplace
  (pure ε-DP) or discrete Gaussian (ρ-zCDP), on integer phase sums
  (`jaxbai.mechanisms.discrete`; from the CSPRNG through OpenDP): the trial asks
  `pending_release` which means an update would release, computes them from its own exact sums
  of the current phase/epoch, and passes them to ``update(release=...)``. ``outcomes="binary"``
  releases the sums exactly; rewards in [0, 1] are put on a grid of at most 1 % of the noise
  scale first.
* Local DP (``ctb_tt``, ``gauss_ldp_tt``, or any algorithm whose estimator has a participant
  mechanism): participants privatise their reward on their own device with the trial's
  `jaxbai.base.Mechanism` (``trial.mechanism``, ``alg.info.participant_mechanism``) through
  `jaxbai.mechanisms.secure.privatize_locally`; the trial only ever receives privatised values
  (Definition 7), and only values the mechanism outputs (``Mechanism.outputs``).
* ``ttucb`` is not private; its store holds raw rewards.

Rewards outside [0, 1] are rejected for algorithms whose privacy proof needs [0, 1]
(``alg.info.unit_interval``), unless the trial was created with ``clip=True``, which the
publication then states; with ``outcomes="binary"`` only 0 and 1 are accepted.

The noise comes from `jaxbai.mechanisms.discrete` (exact discrete Laplace and Gaussian releases) and
`jaxbai.mechanisms.secure` (CSPRNG noise and the participant-side mechanisms).

Modules: `jaxbai.trial.cli` (``python -m jaxbai.trial``); the private ``_config`` (constants and
records), ``_algorithm`` (the algorithm glue), ``_store`` (the store), ``_files`` (its files:
the lock, the log, atomic creation), ``_codec`` (its encodings), ``_integrity`` (its digest),
``_session`` (a writer's session: its mark, checkpoints and close), ``_migration``,
``_schema1`` and ``_schema2`` (older schemas and the check of a store's tables), ``_backup``
(backups), ``_release`` (the releases), ``_records`` (the checks of a record) and ``_trial``
(`Trial`).

Examples:
  >>> import os, tempfile
  >>> path = os.path.join(tempfile.mkdtemp(), "dose.trial")
  >>> with Trial.create(path, "adap_tt_star", num_arms=3, epsilon=1.0, delta=0.05) as trial:
  ...     arm = trial.next_arm()
  ...     trial.record(arm, 1.0)
  ...     trial.status().samples
  1
"""

from jaxbai.mechanisms.secure import privatize_locally
from jaxbai.trial._algorithm import check_releases
from jaxbai.trial._backup import backup
from jaxbai.trial._config import (
    NOISE_MODES,
    OUTCOMES,
    PLUGIN_PRIVACY_CLAIM,
    PUBLICATION_VERSION,
    PUBLISHED_FIELDS,
    SCHEMA_VERSION,
    TrialConfig,
    TrialStatus,
)
from jaxbai.trial._files import synchronous
from jaxbai.trial._integrity import CorruptStoreError
from jaxbai.trial._trial import Trial
from jaxbai.trial.cli import main

__all__ = [
    "NOISE_MODES",
    "OUTCOMES",
    "PLUGIN_PRIVACY_CLAIM",
    "PUBLICATION_VERSION",
    "PUBLISHED_FIELDS",
    "SCHEMA_VERSION",
    "CorruptStoreError",
    "Trial",
    "TrialConfig",
    "TrialStatus",
    "backup",
    "check_releases",
    "main",
    "privatize_locally",
    "synchronous",
]
