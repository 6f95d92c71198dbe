"""Tests for jaxbai.trial: equivalence with ask/tell, crash safety, validation, publication, CLI."""

from __future__ import annotations

import contextlib
import json
import math
import os
import random
import signal
import sqlite3
import stat
import subprocess
import sys
import time
from fractions import Fraction
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxbai import trial
from jaxbai.mechanisms import GaussianNoise, RandomisedResponse, discrete, secure
from jaxbai.trial import Trial, _algorithm

MEANS = (0.9, 0.4, 0.2)


def uniform_stream(seed: int):
    """Deterministic doubles in (0, 1), for the participants' mechanisms."""
    rng = np.random.default_rng(seed)
    return lambda: int(rng.integers(1, 2**53)) / 2**53


def bernoulli_rewards(seed: int, means=MEANS):
    rng = np.random.default_rng(seed)
    return lambda arm: float(rng.random() < means[arm])


def key_bits(key_update: jax.Array):
    """The documented rehearsal bit source: a generator seeded by fold_in(k_update, 1)."""
    words = np.asarray(jax.random.key_data(jax.random.fold_in(key_update, 1)))
    return random.Random(int.from_bytes(words.tobytes(), "little")).getrandbits


def reference_run(alg, params, num_arms, seed, observe, max_samples, epsilon=None, **release):
    """The algorithm's ask/tell API driven directly, with the trial's documented key stream.

    For global DP, releases are computed from `pending_release` counts and exact per-arm sums
    of the unreleased observations by `discrete.noisy_mean` at ``resolution``,
    with bits from ``randbits`` or, if None, from the update's key (rehearsals).
    """
    select, stopping, pending, update, _ = _algorithm.compiled(alg)  # the same jitted API
    key_init, key = jax.random.split(jax.random.key(seed))
    state = alg.init(key_init, params, num_arms)
    window = [[] for _ in range(num_arms)]
    actions = []
    while len(actions) < max_samples:
        stop, recommendation = stopping(state, params)
        if bool(stop):
            return actions, int(recommendation), state
        arm = int(select(state, params))
        z = observe(arm)
        key, key_update = jax.random.split(key)
        value = None
        if alg.info.privacy == "global":
            window[arm].append(z)
            due, _, counts = pending(state, jnp.int32(arm), jnp.float32(z), params)
            value = np.full(num_arms, np.nan)
            bits = release["randbits"] or key_bits(key_update)
            m = release["resolution"]
            for a, count in enumerate(np.asarray(counts).tolist()):
                if bool(due) and count:
                    assert len(window[a]) == count
                    total = sum((Fraction(x) for x in window[a]), Fraction(0))
                    noise = discrete.exact_laplace(epsilon, m, bits)
                    value[a] = float(discrete.noisy_mean(total, count, m, noise))
                    window[a] = []
            value = jnp.asarray(value, jnp.float32)
        state = update(key_update, state, jnp.int32(arm), jnp.float32(z), params, value)
        actions.append(arm)
    return actions, None, state


def stored(path: Path) -> tuple[tuple, list]:
    """The store's snapshot row and applied assignments, read with sqlite3 directly."""
    with contextlib.closing(sqlite3.connect(path)) as db:
        snapshot = db.execute("SELECT samples, data, windows FROM snapshot").fetchone()
        applied = db.execute(
            "SELECT participant, arm, outcome FROM assignments WHERE participant < ? "
            "ORDER BY participant",
            (snapshot[0],),
        ).fetchall()
    return snapshot, applied


def drive(t: Trial, observe, max_samples):
    while t.status().samples < max_samples and not t.status().stopped:
        arm = t.next_arm()
        t.record(arm, observe(arm))


@pytest.mark.parametrize(
    ("algorithm", "epsilon", "noise", "outcomes"),
    [
        ("adap_tt_star", 1.0, "prng", "unit"),
        ("adap_tt", 0.5, "secure", "unit"),
        ("adap_tt_global", 0.5, "secure", "binary"),
        ("ttucb", None, "secure", "unit"),
        ("ctb_tt", 2.0, "secure", "unit"),
        ("dp_tt", 1.0, "secure", "unit"),
        ("eb_tci", None, "secure", "unit"),
    ],
)
def test_trial_matches_ask_tell(tmp_path, no_fsync, algorithm, epsilon, noise, outcomes):
    seed, max_samples = 11, 400
    observations = []
    if algorithm == "ctb_tt":  # the participant privatises; both sides receive the same bits
        raw, stream = bernoulli_rewards(5), uniform_stream(9)

        def observe_trial(arm):
            z = secure.privatize_locally(RandomisedResponse(), raw(arm), epsilon, uniform=stream)
            observations.append(z)
            return observations[-1]

    else:
        observe_trial = bernoulli_rewards(5)
    bits = random.Random(21).getrandbits if noise == "secure" else None
    t = Trial.create(
        tmp_path / "t.trial", algorithm, len(MEANS), epsilon, 0.05, seed,
        noise=noise, outcomes=outcomes, randbits=bits,
    )  # fmt: skip
    drive(t, observe_trial, max_samples)
    published = t.publish()
    t.close()

    alg, params = _algorithm.build(t.config)
    if algorithm == "ctb_tt":
        replay = iter(observations)
        observe_ref = lambda arm: next(replay)  # noqa: E731
    else:
        observe_ref = bernoulli_rewards(5)
    m = {0.5: 64, 1.0: 128}.get(epsilon)  # the grid 1/m: 1/m ≤ 1 % of 1/ε
    actions, recommendation, state = reference_run(
        alg, params, len(MEANS), seed, observe_ref, max_samples, epsilon=epsilon,
        resolution=m, randbits=random.Random(21).getrandbits if noise == "secure" else None,
    )  # fmt: skip
    assert published["actions"] == actions
    assert published["recommendation"] == recommendation
    assert published["resolution"] == (m if alg.info.privacy == "global" else None)
    with Trial.open(tmp_path / "t.trial", randbits=bits) as reopened:
        for ours, theirs in zip(
            jax.tree_util.tree_leaves(reopened._snap.state),
            jax.tree_util.tree_leaves(state),
            strict=True,
        ):
            np.testing.assert_array_equal(np.asarray(ours), np.asarray(theirs))


def test_dp_se_secure_release_matches_ask_tell(tmp_path, no_fsync):
    """DP-SE releases a whole epoch's means at once (K = 2, δ = 0.5: 888 samples/epoch)."""
    max_samples = 900
    with Trial.create(
        tmp_path / "t.trial", "dp_se", 2, 1.0, 0.5, 4, randbits=random.Random(8).getrandbits
    ) as t:
        drive(t, bernoulli_rewards(2), max_samples)
        published = t.publish()
        epoch = int(t._snap.state.epoch)
    assert epoch == 2, "the run must cross an epoch boundary to test the release"
    alg, params = _algorithm.build(t.config)
    actions, _, _ = reference_run(
        alg, params, 2, 4, bernoulli_rewards(2), max_samples, epsilon=1.0, resolution=128,
        randbits=random.Random(8).getrandbits,
    )  # fmt: skip
    assert published["actions"] == actions


# ------------------------------------------------------------------------------ durability
CHILD = """
import sys
from jaxbai.trial import Trial
path, = sys.argv[1:]
t = Trial.open(path)
while True:
    n = t.status().samples
    arm = t.next_arm()
    t.record(arm, ((7 * n) % 11) / 10)
    print(n + 1, flush=True)
"""


def reward_for(n: int) -> float:
    return ((7 * n) % 11) / 10


@pytest.mark.integration
@pytest.mark.parametrize(
    "kills",
    [10, pytest.param(30, marks=pytest.mark.slow), pytest.param(300, marks=pytest.mark.slow)],
    ids=["10kills", "30kills", "300kills"],
)
def test_killed_during_record_never_corrupts(tmp_path, kills):
    path = tmp_path / "t.trial"
    Trial.create(path, "adap_tt", 3, 1.0, 0.05, 1, noise="prng").close()
    rng = np.random.default_rng(kills)
    env = {
        **os.environ,
        "PYTHONPATH": str(Path(__file__).resolve().parents[1]),
        # Children share compiled programs, so each kill costs little more than an import.
        "JAX_COMPILATION_CACHE_DIR": str(tmp_path / "compiled"),
        "JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS": "0",
        "JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES": "-1",
    }
    actions: list[int] = []
    for _ in range(kills):
        child = subprocess.Popen(
            [sys.executable, "-c", CHILD, str(path)], stdout=subprocess.PIPE, env=env, text=True
        )
        acknowledged = len(actions)
        for _ in range(int(rng.integers(1, 3))):
            line = child.stdout.readline()
            assert line, "child died unexpectedly"
            acknowledged = int(line)
        time.sleep(float(rng.uniform(0, 0.03)))
        child.send_signal(signal.SIGKILL)
        child.wait()
        for line in child.stdout:  # acks the child printed before dying
            acknowledged = int(line)
        child.stdout.close()
        with Trial.open(path) as t:
            published = t.publish()
            samples = t.status().samples
            assert int(t._snap.state.n) == samples == len(published["actions"])
        assert acknowledged <= samples <= acknowledged + 1
        assert published["actions"][: len(actions)] == actions
        actions = published["actions"]
    assert len(actions) >= kills
    # Resuming after every crash gives exactly the uninterrupted trial, bit for bit.
    replay = tmp_path / "replay.trial"
    with Trial.create(replay, "adap_tt", 3, 1.0, 0.05, 1, noise="prng") as t:
        for n in range(len(actions)):
            arm = t.next_arm()
            t.record(arm, reward_for(n))
    assert stored(path) == stored(replay)


def deny(table: str, action: int):
    """An SQLite authorizer that makes one kind of statement on ``table`` fail."""
    return lambda code, name, *rest: sqlite3.SQLITE_DENY if (code, name) == (action, table) else 0


@pytest.mark.parametrize(
    ("stage", "table", "action"),
    [
        ("issue", "assignments", sqlite3.SQLITE_INSERT),
        ("apply", "snapshot", sqlite3.SQLITE_UPDATE),
        ("hold", "assignments", sqlite3.SQLITE_UPDATE),
    ],
)
def test_failed_write_leaves_store_and_trial_unchanged(tmp_path, stage, table, action):
    path = tmp_path / "t.trial"
    t = Trial.create(path, "adap_tt_global", 3, 1.0, 0.05, 2, noise="prng")
    for _ in range(3):  # each arm's first pull closes its phase 0: cohorts of one
        t.record(t.next_arm(), 1.0)
    if stage == "hold":
        (p0, a0), (p1, a1), *_ = t.next_batch()
    elif stage == "apply":
        arm = t.next_arm()
    before, status = stored(path), t.status()
    t._store._db.set_authorizer(deny(table, action))
    with pytest.raises(sqlite3.DatabaseError):
        {
            "issue": lambda: t.next_arm(),
            "apply": lambda: t.record(arm, 1.0),
            "hold": lambda: t.record(a1, 1.0, participant=p1),
        }[stage]()
    t._store._db.set_authorizer(None)
    assert stored(path) == before
    assert t.status() == status
    if stage == "issue":
        t.record(t.next_arm(), 1.0)
    elif stage == "apply":
        t.record(arm, 1.0)
    else:
        t.record(a1, 1.0, participant=p1)
        t.record(a0, 0.0, participant=p0)
    assert t.status().samples == (5 if stage == "hold" else 4)
    t.close()


def test_reopen_continues_with_pending_request(tmp_path, no_fsync):
    path = tmp_path / "t.trial"
    with Trial.create(path, "adap_tt_star", 3, 1.0, 0.05, 3, threshold="theory") as t:
        for _ in range(5):
            arm = t.next_arm()
            t.record(arm, 0.5)
        issued = t.next_arm()
        with pytest.raises(RuntimeError, match="another process"):
            Trial.open(path)
    with Trial.open(path) as t:
        assert t.config.options == {"threshold": "theory"}
        assert t.status().pending_arm == issued
        assert t.next_arm() == issued
        t.record(issued, 0.25)
        assert t.status().samples == 6


def test_unknown_schema_version_is_refused(tmp_path):
    path = tmp_path / "t.trial"
    Trial.create(path, "ttucb", 3, None, 0.05, 0).close()
    with contextlib.closing(sqlite3.connect(path)) as db, db:
        db.execute("UPDATE meta SET value = ? WHERE name = 'schema_version'", ("5",))
    with pytest.raises(ValueError, match="schema version 5, written by a newer jaxbai"):
        Trial.open(path)
    path.write_text(json.dumps({"format": "jaxbai-trial", "schema_version": 3}))
    with pytest.raises(ValueError, match="schema version 3"):
        Trial.open(path)
    path.write_text("hello")
    with pytest.raises(ValueError, match="not a jaxbai trial"):
        Trial.open(path)


# ------------------------------------------------------------------------------ validation
def dump(path: Path) -> dict[str, list]:
    """Every row of every table of the store."""
    with contextlib.closing(sqlite3.connect(path)) as db:
        tables = [
            name for (name,) in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
        ]
        return {table: db.execute(f"SELECT * FROM {table}").fetchall() for table in tables}


def assert_rejected(path: Path, call, match: str) -> None:
    """``call`` raises ValueError and writes nothing: same rows, no new log frame."""
    log = Path(f"{path}-wal")
    before, size = dump(path), log.stat().st_size
    with pytest.raises(ValueError, match=match):
        call()
    assert dump(path) == before
    assert log.stat().st_size == size


def test_invalid_records_are_rejected_without_state_change(tmp_path):
    path = tmp_path / "t.trial"
    with Trial.create(path, "adap_tt", 3, 1.0, 0.05, 0) as t:
        assert_rejected(path, lambda: t.record(0, 0.5), "no open request")
        arm = t.next_arm()
        other = (arm + 1) % 3
        assert_rejected(path, lambda: t.record(other, 0.5), "not the arm")
        assert_rejected(path, lambda: t.record(True, 0.5), "not the arm")
        assert_rejected(path, lambda: t.record(float(arm), 0.5), "not the arm")
        for bad in (math.nan, math.inf, -math.inf, "0.5", None):
            assert_rejected(path, lambda bad=bad: t.record(arm, bad), "real number|finite")
        for outside in (1.5, -0.1):
            assert_rejected(path, lambda outside=outside: t.record(arm, outside), r"\[0, 1\]")
        t.record(arm, 0.5)
        assert_rejected(path, lambda: t.record(arm, 0.5), "no open request")
    with Trial.create(tmp_path / "ctb.trial", "ctb_tt", 3, 1.0, 0.05, 0) as t:
        arm = t.next_arm()
        assert_rejected(t.path, lambda: t.record(arm, 0.5), "randomised response.*: 0 or 1")
        t.record(arm, 1.0)
    with Trial.create(tmp_path / "b.trial", "adap_tt", 3, 1.0, 0.05, 0, outcomes="binary") as t:
        arm = t.next_arm()
        for bad in (0.5, 2.0, -1.0):
            assert_rejected(t.path, lambda bad=bad: t.record(arm, bad), "binary outcomes")
        t.record(arm, True)
        assert t.status().samples == 1


def test_invalid_configurations_are_rejected(tmp_path):
    path = tmp_path / "t.trial"
    for kwargs, match in [
        ({"algorithm": "nope", "epsilon": 1.0}, "algorithm must be"),
        ({"algorithm": "ttucb", "epsilon": 1.0}, "not private"),
        ({"algorithm": "adap_tt", "epsilon": math.inf}, "epsilon must be finite"),
        (
            {"algorithm": "adap_tt", "epsilon": 1e300},
            r"epsilon must be finite, in \[1e-12, 30\]",
        ),
        ({"algorithm": "adap_tt", "epsilon": None}, "needs epsilon"),
        ({"algorithm": "ctb_tt", "epsilon": 1.0, "clip": True}, "participants clip"),
        ({"algorithm": "adap_tt", "epsilon": 1.0, "noise": "fast"}, "noise must be"),
        ({"algorithm": "adap_tt", "epsilon": 1.0, "outcomes": "counts"}, "outcomes must be"),
        ({"algorithm": "adap_tt", "epsilon": 1.0, "outcomes": "binary", "clip": True}, "clip"),
        ({"algorithm": "ctb_tt", "epsilon": 1.0, "outcomes": "binary"}, "participants clip"),
    ]:
        with pytest.raises(ValueError, match=match):
            Trial.create(path, num_arms=3, delta=0.05, **kwargs)
    assert not path.exists()
    Trial.create(path, "ttucb", 3, None, 0.05).close()
    with pytest.raises(FileExistsError):
        Trial.create(path, "ttucb", 3, None, 0.05)


def test_clip_opt_in_clips_and_is_published(tmp_path, no_fsync):
    clipped, exact = tmp_path / "clipped.trial", tmp_path / "exact.trial"
    with Trial.create(clipped, "adap_tt", 3, 1.0, 0.05, 6, clip=True, noise="prng") as t:
        for reward in (7.0, -3.0, 1.0):
            t.record(t.next_arm(), reward)
        assert t.publish()["clip"] is True
    with Trial.create(exact, "adap_tt", 3, 1.0, 0.05, 6, noise="prng") as t:
        for reward in (1.0, 0.0, 1.0):
            t.record(t.next_arm(), reward)
        assert t.publish()["clip"] is False
    assert stored(clipped) == stored(exact)


def test_stopped_trial_issues_no_more_arms(tmp_path, no_fsync):
    with Trial.create(tmp_path / "t.trial", "ttucb", 2, None, 0.1, 0) as t:
        drive(t, lambda arm: float(arm == 0), 500)
        status = t.status()
        assert status.stopped and status.recommendation == 0
        with pytest.raises(RuntimeError, match="stopped"):
            t.next_arm()
        published = t.publish()
        assert published["stopping_time"] == status.samples == len(published["actions"])


# ------------------------------------------------------------------------------ publication
def floats_in(value):
    if isinstance(value, float):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from floats_in(item)
    elif isinstance(value, list):
        for item in value:
            yield from floats_in(item)


def test_publication_holds_only_protected_outputs(tmp_path, no_fsync):
    path = tmp_path / "t.trial"
    marker = 0.123456789  # a distinctive reward that must never surface
    with Trial.create(path, "adap_tt_star", 3, 2.0, 0.05, 1, threshold="heuristic") as t:
        running = t.publish()
        assert running["stopped"] is False
        assert running["stopping_time"] is None and running["recommendation"] is None
        drive(t, lambda arm: marker if arm else 1.0, 400)
        published = t.publish()
        for name in (path, f"{path}-wal", f"{path}-shm"):
            assert stat.S_IMODE(os.stat(name).st_mode) == 0o600, name
    assert set(published) == trial.PUBLISHED_FIELDS
    assert published["stopped"] and published["stopping_time"] == len(published["actions"])
    assert published["epsilon"] == 2.0 and published["delta"] == 0.05
    assert published["algorithm"] == "adap_tt_star" and published["privacy"] == "global"
    assert published["gamma"] is None and published["outcomes"] == "unit"
    assert published["resolution"] == 256 and published["release_epsilon"] <= 2.0
    assert all(isinstance(a, int) and 0 <= a < 3 for a in published["actions"])
    # Every float in the record is configuration (ε, δ, the releases' ε); none derives from the
    # rewards.
    assert set(floats_in(published)) <= {2.0, 0.05}
    assert "0.1234" not in json.dumps(published, allow_nan=False)
    assert dict(dump(path)["meta"])["sensitive"] == "true"


def test_local_trial_receives_only_privatised_values(tmp_path):
    with Trial.create(tmp_path / "g.trial", "gauss_ldp_tt", 3, 1.0, 0.05, 0, gamma=0.01) as t:
        assert t.mechanism == GaussianNoise(0.01) and t.publish()["gamma"] == 0.01
        arm = t.next_arm()
        z = secure.privatize_locally(t.mechanism, 0.8, 1.0)
        t.record(arm, z)  # any finite real: the Gaussian output is unbounded
        assert t.status().noise == "participant-side Gaussian mechanism"
        assert dict(dump(t.path)["meta"])["sensitive"] == "false"


# ------------------------------------------------------------------------------ CLI
def test_command_line_round_trip(tmp_path, no_fsync, capsys):
    path = str(tmp_path / "cli.trial")
    create = ["create", path, "--algorithm", "adap_tt_star", "--arms", "3", "--epsilon", "1",
              "--delta", "0.05", "--seed", "0", "--option", "threshold=heuristic"]  # fmt: skip
    assert trial.main(create) == 0
    assert json.loads(capsys.readouterr().out)["samples"] == 0
    for p in range(4):
        assert trial.main(["next", path]) == 0
        participant, arm = map(int, capsys.readouterr().out.split())
        assert participant == p
        assert trial.main(["record", path, str(arm), "1", "--participant", str(p)]) == 0
        capsys.readouterr()
    assert trial.main(["record", path, "0", "1", "--participant", "4"]) == 2
    assert "participant 4 has no open assignment" in capsys.readouterr().err
    assert trial.main(["status", path]) == 0
    assert json.loads(capsys.readouterr().out)["samples"] == 4
    assert trial.main(["publish", path]) == 0
    published = json.loads(capsys.readouterr().out)
    assert set(published) == trial.PUBLISHED_FIELDS
    assert len(published["actions"]) == 4 and published["actions"][:3] == [0, 1, 2]
    assert trial.main(["privatize", "0.7", "--algorithm", "ctb_tt", "--epsilon", "1"]) == 0
    assert float(capsys.readouterr().out) in (0.0, 1.0)
    gaussian = ["--algorithm", "gauss_ldp_tt", "--option", "gamma=0.01", "--epsilon", "1"]
    assert trial.main(["privatize", "0.7", *gaussian]) == 0
    assert float(capsys.readouterr().out) not in (0.0, 1.0)
    assert trial.main(["privatize", "1.7", "--algorithm", "ctb_tt", "--epsilon", "1"]) == 2
    assert "outside [0, 1]" in capsys.readouterr().err


def test_a_name_too_long_for_the_files_beside_it_is_refused_before_any_file(tmp_path):
    """The temporary of an atomic creation and SQLite's journal add 22 bytes to a trial's name;
    a name the file system would refuse for one of them is refused first, saying the limit."""
    limit = os.pathconf(tmp_path, "PC_NAME_MAX")
    longest = "a" * (limit - 22 - len(".trial")) + ".trial"
    refused = "b" + longest
    with pytest.raises(ValueError, match=f"use at most {limit - 22} bytes"):
        trial.Trial.create(tmp_path / refused, "ttucb", 3, epsilon=None, delta=0.1, noise="prng")
    assert not list(tmp_path.iterdir())
    with trial.Trial.create(
        tmp_path / longest, "ttucb", 3, epsilon=None, delta=0.1, noise="prng"
    ) as t:
        t.record(t.next_arm(), 1.0)
    assert [p.name for p in tmp_path.iterdir()] == [longest]


def test_a_trial_used_from_another_thread_says_so(tmp_path):
    import threading

    errors: list[BaseException] = []
    with trial.Trial.create(
        tmp_path / "t.trial", "ttucb", 3, epsilon=None, delta=0.1, noise="prng"
    ) as t:

        def use() -> None:
            for call in (t.next_arm, t.publish, t.close):
                try:
                    call()
                except RuntimeError as err:
                    errors.append(err)

        worker = threading.Thread(target=use)
        worker.start()
        worker.join()
        t.record(t.next_arm(), 1.0)  # still usable in its own thread
    assert len(errors) == 3
    assert all("opened in another thread" in str(err) for err in errors)
