"""Reliability of real trials: ownership, one file at rest, integrity, attribution, input.

Each test below stands for a failure a hostile review found (a second writer through another
path, a trial copied without its log or beside another's, a record attached to the wrong
participant, the participant side accepting ε = ∞, flipped bits continued, a full disk reported
as a rollback error, a read-only medium unreadable, tracebacks for bad input). The property
tests (hypothesis, derandomised, a fixed number of examples each: 150 flipped bits, 60 trial
inputs, 80 command lines) assert that every generated input either works or raises the
project's own error with a message — never another exception. The soak (two processes, two
paths, 10⁴ records) is marked slow: ``python -m pytest -m slow tests/test_reliability_trial.py``.
"""

from __future__ import annotations

import contextlib
import io
import json
import math
import os
import re
import shutil
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from jaxbai.mechanisms import GaussianNoise, LaplaceNoise, RandomisedResponse, secure
from jaxbai.trial import Trial, backup, main
from jaxbai.trial._integrity import CorruptStoreError
from jaxbai.trial._records import MAX_OBSERVATION, check_finite_state

PROPERTY = settings(
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


def drive(t: Trial, records: int) -> None:
    for _ in range(records):
        p, arm = t.next_assignment()
        t.record(arm, ((7 * p + arm) % 11) / 10, participant=p)


def cli(*argv: str) -> tuple[int, str, str]:
    """``python -m jaxbai.trial`` in process: (exit status, stdout, stderr)."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(list(argv))
        except SystemExit as exit_:  # argparse's usage errors
            code = exit_.code
    return code, out.getvalue(), err.getvalue()


def side_files(path: Path) -> list[str]:
    return sorted(p.name for p in path.parent.iterdir() if p.name.startswith(f"{path.name}-"))


# ------------------------------------------------------------------------------ ownership
def test_no_second_writer_through_any_other_path(tmp_path, no_fsync):
    """The lock is the file's: a symlink, a hard link or a relative path all meet it (the
    sibling lock file they bypassed is gone), and readers still read."""
    path = tmp_path / "t.trial"
    (tmp_path / "sub").mkdir()
    os.symlink(path, tmp_path / "link.trial")
    with Trial.create(path, "ttucb", 3, None, 0.05, 0) as t1:
        os.link(path, tmp_path / "hard.trial")
        t1.record(t1.next_arm(), 1.0)
        for other in ("link.trial", "hard.trial", "sub/../t.trial"):
            with pytest.raises(RuntimeError, match="open in another process"):
                Trial.open(tmp_path / other)
        with Trial.open(tmp_path / "link.trial", read_only=True) as reader:
            assert reader.status().samples == 1
            with pytest.raises(RuntimeError, match="read-only"):
                reader.next_arm()
        t1.record(t1.next_arm(), 0.0)
    with Trial.open(tmp_path / "link.trial", read_only=True) as reader:  # kept open…
        with Trial.open(tmp_path / "link.trial") as t2:  # …it holds no writer back
            assert t2.status().samples == 2 and len(t2.publish()["actions"]) == 2
            t2.record(t2.next_arm(), 1.0)
        assert reader.status().samples == 2 and len(reader.publish()["actions"]) == 2


# ------------------------------------------------------------------------------ one file
def test_a_closed_trial_is_one_file_that_copies_alone(tmp_path, no_fsync):
    path, copy = tmp_path / "t.trial", tmp_path / "elsewhere" / "t.trial"
    with Trial.create(path, "adap_tt", 3, 1.0, 0.05, 0, noise="prng") as t:
        drive(t, 30)
        assert side_files(path) == ["t.trial-shm", "t.trial-wal"]
        published = t.publish()
    assert side_files(path) == []
    copy.parent.mkdir()
    shutil.copy(path, copy)
    with Trial.open(copy) as t:
        assert t.publish() == published


def test_a_copy_without_its_log_or_beside_another_trials_log_is_refused(tmp_path, no_fsync):
    """Files copied from an open (or killed) trial: the main file alone would have lost the
    records in the log, and another trial's log would mix two trials."""
    a, b = tmp_path / "a.trial", tmp_path / "b.trial"
    image = tmp_path / "image"
    image.mkdir()
    with Trial.create(a, "adap_tt", 3, 1.0, 0.05, 0, noise="prng") as ta:
        with Trial.create(b, "adap_tt", 3, 1.0, 0.05, 1, noise="prng") as tb:
            drive(ta, 20)
            drive(tb, 25)
            for name in ("a.trial", "a.trial-wal", "b.trial-wal"):  # as a crash leaves them
                shutil.copy(tmp_path / name, image / name)
            expected = ta.publish()
    shutil.copy(image / "a.trial", tmp_path / "alone.trial")
    for read_only in (False, True):
        with pytest.raises(ValueError, match=r"alone\.trial-wal is missing"):
            Trial.open(tmp_path / "alone.trial", read_only=read_only)
    shutil.copy(image / "a.trial", tmp_path / "chimera.trial")
    shutil.copy(image / "b.trial-wal", tmp_path / "chimera.trial-wal")
    before = (tmp_path / "chimera.trial").read_bytes()
    with pytest.raises(ValueError, match=r"another trial|does not match"):
        Trial.open(tmp_path / "chimera.trial")
    assert (tmp_path / "chimera.trial").read_bytes() == before  # nothing checkpointed into it
    with Trial.open(image / "a.trial") as t:  # the image with its own log: the crash state
        assert t.publish() == expected


def test_a_hard_linked_trial_killed_mid_run_names_the_link_its_log_is_beside(tmp_path, no_fsync):
    """A trial open under one of two hard-linked names leaves its log beside that name when it
    is killed; opened under the other name it asked for a log that never existed. It now names
    the link to open it as, and opens there with every record."""
    import os

    a, b = tmp_path / "a.trial", tmp_path / "b.trial"
    image = tmp_path / "image"
    image.mkdir()
    Trial.create(a, "adap_tt", 3, 1.0, 0.05, 0, noise="prng").close()
    os.link(a, b)
    with Trial.open(b) as t:
        drive(t, 20)
        shutil.copy(b, image / "first.trial")  # the files as a crash leaves them
        shutil.copy(tmp_path / "b.trial-wal", image / "second.trial-wal")
        expected = t.publish()
    os.link(image / "first.trial", image / "second.trial")
    with pytest.raises(ValueError, match=r"while open as second\.trial, a hard link .* log is "):
        Trial.open(image / "first.trial")
    with Trial.open(image / "second.trial") as t:
        assert t.publish() == expected


@pytest.mark.integration
def test_backup_while_open_in_another_process(tmp_path):
    """`backup` copies a trial that another process has open (mid-session, log and all) into
    one self-contained file; the CLI does the same and refuses an existing target."""
    path = tmp_path / "t.trial"
    Trial.create(path, "ttucb", 3, None, 0.05, 0).close()
    writer = subprocess.Popen(
        [sys.executable, "-c", SOAK_CHILD, str(path), "40", "40", "3"],
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])},
    )
    assert writer.stdout.readline().strip() == "open"  # holds the trial, 40 records done
    backup(path, tmp_path / "copy.trial")
    assert cli("backup", str(path), str(tmp_path / "cli.trial"))[0] == 0
    code, _, err = cli("backup", str(path), str(tmp_path / "copy.trial"))
    assert code == 2 and "exists" in err and err.count("\n") == 1
    writer.communicate(timeout=120)
    with Trial.open(path) as t:
        expected = t.publish()
    for name in ("copy.trial", "cli.trial"):
        assert side_files(tmp_path / name) == []
        with Trial.open(tmp_path / name) as t:
            assert t.status().samples == 40 and t.publish() == expected


# ------------------------------------------------------------------------------ attribution
def test_an_outcome_names_the_participant_it_was_issued_for(tmp_path, no_fsync):
    """Two operators: B asks for the next participant, which reissues A's open slot; the
    outcome needs its id, so A's late record cannot land on B's participant."""
    path = tmp_path / "t.trial"
    with Trial.create(path, "ttucb", 3, None, 0.05, 0) as a:
        p, arm = a.next_assignment()
    with Trial.open(path) as b:
        with pytest.raises(ValueError, match=f"participant={p}"):
            b.record(arm, 1.0)  # not handed out by this object: which participant?
        assert b.next_assignment() == (p, arm)
        b.record(arm, 1.0, participant=p)
        following = b.next_assignment()  # the next participant's slot is open now
    with Trial.open(path) as a:
        with pytest.raises(ValueError, match="already recorded"):
            a.record(arm, 0.0, participant=p)
        assert a.status().samples == 1
    code, out, _ = cli("next", str(path))
    assert code == 0 and out.split() == [str(following[0]), str(following[1])]
    code, _, err = cli("record", str(path), "0", "1")  # the id is required
    assert code == 2 and "--participant" in err


# ------------------------------------------------------------------------------ the participant
@pytest.mark.parametrize("epsilon", [math.inf, 1e9, math.nan, 0.0, -1.0, "1", True, None])
def test_participant_side_refuses_the_epsilons_a_trial_refuses(epsilon):
    for mechanism in (
        lambda: secure.privatize_locally(RandomisedResponse(), 0.5, epsilon),
        lambda: secure.privatize_locally(GaussianNoise(0.001), 0.5, epsilon),
        lambda: secure.privatize_locally(LaplaceNoise(), 0.5, epsilon),
        lambda: secure.secure_randomised_response(0.5, epsilon),
        lambda: secure.gaussian_sigma(epsilon, 0.001),
    ):
        with pytest.raises(ValueError, match="epsilon must be"):
            mechanism()
    with pytest.raises(ValueError, match="epsilon"):
        Trial.create("unused.trial", "ctb_tt", 3, epsilon, 0.05)


@pytest.mark.parametrize("gamma", [0.0, 1.0, -0.1, math.nan, 1.5, "0.1"])
def test_participant_side_refuses_bad_gammas(gamma):
    with pytest.raises(ValueError, match="gamma must"):
        GaussianNoise(gamma)


def test_privatize_command_line_refuses_bad_parameters():
    for argv in (
        ["--algorithm", "ctb_tt", "--epsilon", "inf"],
        ["--algorithm", "gauss_ldp_tt", "--epsilon", "inf", "--option", "gamma=0.001"],
        ["--algorithm", "gauss_ldp_tt", "--epsilon", "1", "--option", "gamma=0"],
        ["--algorithm", "ctb_tt", "--epsilon", "1", "--option", "beta=2"],
        ["--algorithm", "ctb_tt", "--epsilon", "nan"],
        ["--algorithm", "ctb_tt", "--epsilon", "-1"],
        ["--algorithm", "adap_tt", "--epsilon", "1"],  # not local-DP: no participant mechanism
    ):
        code, out, err = cli("privatize", "0.7", *argv)
        assert code == 2 and out == "" and err.startswith("error: ") and err.count("\n") == 1


# ------------------------------------------------------------------------------ integrity
def corrupt(path: Path, sql: str, args: tuple = ()) -> None:
    with contextlib.closing(sqlite3.connect(path)) as db, db:
        db.execute(sql, args)


def test_changed_state_log_or_configuration_is_refused(tmp_path, no_fsync):
    path = tmp_path / "t.trial"
    with Trial.create(path, "ttucb", 3, None, 0.05, 0) as t:
        drive(t, 20)
    pristine = path.read_bytes()
    with contextlib.closing(sqlite3.connect(path)) as db:
        data = bytearray(db.execute("SELECT data FROM snapshot").fetchone()[0])
    data[len(data) // 2] ^= 0x40  # a count, say [8 4 8] → [72 4 8]
    for sql, args in [
        ("UPDATE snapshot SET data = ?", (bytes(data),)),
        ("UPDATE assignments SET arm = (arm + 1) % 3 WHERE participant = 3", ()),
        ("UPDATE assignments SET arm = 7 WHERE participant = 5", ()),
        ("DELETE FROM assignments WHERE participant = 7", ()),
        ("UPDATE meta SET value = replace(value, 'ttucb', 'ctb_tt') WHERE name = 'config'", ()),
        ("UPDATE snapshot SET samples = samples + 1", ()),
    ]:
        for name in side_files(path):  # the empty log and index a reader leaves
            (tmp_path / name).unlink()
        path.write_bytes(pristine)
        corrupt(path, sql, args)
        assert path.read_bytes() != pristine and side_files(path) == []
        for read_only in (True, False):
            with pytest.raises(CorruptStoreError, match="damaged: restore it from a backup"):
                Trial.open(path, read_only=read_only)
        code, _, err = cli("status", str(path))
        assert code == 2 and "damaged: restore it from a backup" in err and err.count("\n") == 1


@pytest.fixture(scope="module")
def sound_store(tmp_path_factory) -> tuple[bytes, tuple]:
    path = tmp_path_factory.mktemp("sound") / "t.trial"
    with Trial.create(path, "ttucb", 3, None, 0.05, 0) as t:
        drive(t, 40)
        return path.read_bytes(), (t.status(), t.publish())


@settings(PROPERTY, max_examples=150)
@given(offset=st.integers(0, 10**6), bit=st.integers(0, 7))
def test_any_flipped_bit_is_refused_or_harmless(sound_store, tmp_path, offset, bit):
    """Flip one bit anywhere in a closed store: it opens as exactly the same trial (the bit was
    in unused space) or is refused with the project's error — never continued differently."""
    pristine, expected = sound_store
    data = bytearray(pristine)
    data[offset % len(data)] ^= 1 << bit
    path = tmp_path / f"flip-{offset}-{bit}.trial"
    path.write_bytes(bytes(data))
    try:
        with Trial.open(path) as t:
            assert (t.status(), t.publish()) == expected
            drive(t, 1)  # a damaged file refused at open, not at the first write
    except CorruptStoreError as err:
        assert "damaged: restore it from a backup" in str(err)
    except ValueError as err:  # a flipped schema version, or a flipped (empty) session mark
        assert re.search("written by a newer jaxbai|was not closed cleanly", str(err)), err


# ------------------------------------------------------------------------------ write errors
def test_a_full_disk_is_reported_as_such_and_changes_nothing(tmp_path, no_fsync):
    path = tmp_path / "t.trial"
    with Trial.create(path, "adap_tt", 3, 1.0, 0.05, 0, noise="prng") as t:
        drive(t, 5)
        db = t._store._db
        pages = db.execute("PRAGMA page_count").fetchone()[0]
        db.execute(f"PRAGMA max_page_count = {pages}")
        with pytest.raises(OSError, match="the disk is full; nothing was written"):
            for _ in range(2000):  # until the assignments need a new page
                drive(t, 1)
        status = t.status()
        db.execute("PRAGMA max_page_count = 1000000")
        drive(t, 3)
        assert t.status().samples == status.samples + 3
        published = t.publish()
    with Trial.open(path) as t:
        assert t.publish() == published


@pytest.fixture
def read_only_medium(tmp_path):
    """A directory bind-mounted read-only (needs the privilege to mount; else skipped)."""
    source, mount = tmp_path / "source", tmp_path / "medium"
    source.mkdir()
    mount.mkdir()
    yield source, mount
    subprocess.run(["umount", str(mount)], capture_output=True)


def test_a_store_on_read_only_media_can_be_read(read_only_medium, no_fsync):
    source, mount = read_only_medium
    with Trial.create(source / "t.trial", "ttucb", 3, None, 0.05, 0) as t:
        drive(t, 10)
        published = t.publish()
    done = subprocess.run(["mount", "--bind", "-o", "ro", str(source), str(mount)], check=False)
    if done.returncode != 0 or not _is_read_only(mount):
        pytest.skip("cannot mount a read-only file system here")
    path = str(mount / "t.trial")
    with Trial.open(path, read_only=True) as t:
        assert t.publish() == published
    assert cli("status", path)[0] == 0 and json.loads(cli("publish", path)[1]) == published
    code, _, err = cli("next", path)
    assert code == 2 and err.count("\n") == 1
    assert cli("backup", path, str(source / "copy.trial"))[0] == 0


def _is_read_only(directory: Path) -> bool:
    try:
        (directory / ".probe").touch()
    except OSError:
        return True
    (directory / ".probe").unlink()
    return False


# ------------------------------------------------------------------------------ bad input
def test_reported_inputs_give_one_line_errors(tmp_path, no_fsync):
    path = str(tmp_path / "t.trial")
    base = ["create", path, "--algorithm", "adap_tt", "--arms", "3", "--delta", "0.05"]
    for extra, message in [
        (["--epsilon", "1", "--seed", "1180591620717411303424"], "seed must lie in"),
        (["--epsilon", "1", "--option", "beta=[0.3]"], "beta of adap_tt must be a float"),
        (["--epsilon", "1", "--option", 'beta="0.3"'], "beta of adap_tt must be a float"),
        (["--epsilon", "1e300"], r"epsilon must be finite, in"),
        (["--epsilon", "1e-13"], r"epsilon must be finite, in [1e-12, 30]"),
        (
            ["--epsilon", "1", "--option", "beta=0.3", "--option", "beta=0.4"],
            "--option beta given twice (0.3 and 0.4): give it once",
        ),
    ]:
        code, out, err = cli(*base, *extra)
        assert code == 2 and out == "" and message in err, err
        assert err.count("\n") == 1 and len(err) < 200
    assert not Path(path).exists()
    Path(path).write_text(json.dumps({"format": "jaxbai-trial", "schema_version": 1}))
    with pytest.raises(ValueError, match=r"damaged: restore it from a backup \(a schema-1 file"):
        Trial.open(path)
    os.remove(path)
    with Trial.create(path, "ttucb", 3, None, 0.05, 0) as t:
        arm = t.next_arm()
        for reward in (10**400, -(10**400), "1", None, [1.0]):
            with pytest.raises(ValueError, match="reward must be"):
                t.record(arm, reward)
    for kwargs in ({"seed": 2**32}, {"seed": -1}, {"seed": True}, {"seed": 1.5}):
        with pytest.raises(ValueError, match="seed must"):
            Trial.create(tmp_path / "s.trial", "ttucb", 3, None, 0.05, **kwargs)
    for kwargs in ({"num_arms": 2.5}, {"num_arms": 1}, {"clip": "yes"}, {"delta": "0.1"}):
        args = {"num_arms": 3, "epsilon": None, "delta": 0.05, **kwargs}
        with pytest.raises(ValueError):
            Trial.create(tmp_path / "s.trial", "ttucb", **args)


NUMBERS = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True),
    st.integers(-(2**70), 2**70),
    st.sampled_from([0, 1, 0.5, 1e-31, 1e31, 2**32, -1, True, "0.5", None, [0.5]]),
)


@settings(PROPERTY, max_examples=60)
@given(
    algorithm=st.sampled_from(["ttucb", "adap_tt", "ctb_tt", "gauss_ldp_tt", "nope", ""]),
    num_arms=st.one_of(st.sampled_from([2, 3]), NUMBERS),
    epsilon=NUMBERS,
    delta=NUMBERS,
    seed=st.one_of(st.integers(0, 3), NUMBERS),
    options=st.dictionaries(
        st.sampled_from(["beta", "threshold", "gamma", "sigma", "x"]), NUMBERS, max_size=2
    ),
    records=st.lists(st.tuples(NUMBERS, NUMBERS, st.one_of(st.none(), NUMBERS)), max_size=4),
)
def test_trial_inputs_work_or_raise_value_errors(
    tmp_path, no_fsync, algorithm, num_arms, epsilon, delta, seed, options, records
):
    path = tmp_path / f"h{time.monotonic_ns()}.trial"
    try:
        trial = Trial.create(
            path, algorithm, num_arms, epsilon, delta, seed, noise="prng", **options
        )
    except ValueError as err:
        assert str(err) and not path.exists()
        return
    with trial:
        for arm, reward, participant in records:
            before = trial.status()
            try:
                trial.record(arm, reward, participant)
            except ValueError as err:
                assert str(err) and trial.status() == before
            if not trial.status().stopped:
                trial.next_arm()


WORDS = st.one_of(
    st.sampled_from(
        [
            "--arms",
            "--epsilon",
            "--delta",
            "--seed",
            "--option",
            "--participant",
            "--gamma",
            "--algorithm",
            "--noise",
            "--outcomes",
            "--clip",
            "--max-size",
            "ttucb",
            "adap_tt",
            "3",
            "0",
            "-1",
            "1e300",
            "nan",
            "inf",
            "0.05",
            "beta=0.3",
            "beta=[1]",
            "x=",
            "=",
            "threshold=theory",
            "TRIAL",
            "MISSING",
            "--help",
        ]
    ),
    st.text(max_size=6),
    st.integers(-(2**70), 2**70).map(str),
)


@pytest.fixture(scope="module")
def cli_trial(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("cli") / "t.trial"
    Trial.create(path, "ttucb", 3, None, 0.05, 0).close()
    return path


@settings(PROPERTY, max_examples=80)
@given(
    command=st.sampled_from(
        ["create", "next", "next-batch", "record", "status", "publish", "backup", "privatize"]
    ),
    words=st.lists(WORDS, max_size=8),
)
def test_command_lines_exit_zero_or_two_with_one_line(cli_trial, tmp_path, command, words):
    target = str(tmp_path / f"c{time.monotonic_ns()}.trial")
    argv = [
        {"TRIAL": str(cli_trial), "MISSING": str(tmp_path / "missing")}.get(w, w) for w in words
    ]
    if command in ("create", "backup"):
        argv = [str(cli_trial) if command == "backup" else target, *argv]
        if command == "backup":
            argv.insert(1, target)
    code, _, err = cli(command, *argv)
    assert code in (0, 2)
    if code == 2 and err.startswith("error: "):
        assert err.count("\n") == 1


# ------------------------------------------------------------------------------ soak
SOAK_CHILD = """
import sys, time
from jaxbai.trial import Trial
path, total, per_open, hold = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4])
mine = []
while True:
    try:
        t = Trial.open(path)
    except RuntimeError:  # the other process has it
        time.sleep(0.001)
        continue
    with t:
        for _ in range(min(per_open, total - t.status().samples)):
            p, arm = t.next_assignment()
            t.record(arm, (p % 3) / 2, participant=p)
            mine.append(p)
        if hold:
            print("open", flush=True)
            time.sleep(hold)
        if t.status().samples >= total:
            break
print(" ".join(map(str, mine)), flush=True)
"""
"""A writer: records ``per_open`` outcomes per opening until the trial has ``total``, then
prints the participants it recorded; with ``hold`` > 0, says "open" and keeps the trial open
that long after each batch."""


@pytest.mark.slow
def test_soak_two_processes_two_paths_lose_and_duplicate_nothing(tmp_path):
    """10⁴ records from two processes, one through a symlink: every record acknowledged by
    either is in the store exactly once, in participant order."""
    total, per_open = 10_000, 50
    path = tmp_path / "t.trial"
    Trial.create(path, "ttucb", 3, None, 1e-9, 0, threshold="theory").close()
    os.symlink(path, tmp_path / "link.trial")
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    start = time.perf_counter()
    children = [
        subprocess.Popen(
            [sys.executable, "-c", SOAK_CHILD, str(p), str(total), str(per_open), "0"],
            stdout=subprocess.PIPE,
            text=True,
            env=env,
        )
        for p in (path, tmp_path / "link.trial")
    ]
    recorded = [list(map(int, c.communicate(timeout=3000)[0].split())) for c in children]
    elapsed = time.perf_counter() - start
    with Trial.open(path) as t:
        assert t.status().samples == total
        assert len(t.publish()["actions"]) == total
    both = sorted(recorded[0] + recorded[1])
    assert both == list(range(total)), "a record was lost or duplicated"
    assert all(recorded), "one process never got the trial"
    print(f"soak: {total} records, {len(recorded[0])} + {len(recorded[1])}, {elapsed:.0f} s")


@pytest.mark.parametrize(
    ("algorithm", "epsilon", "reward"),
    [("ttucb", None, 1e300), ("gauss_ldp_tt", 1.0, 1e39), ("gauss_ldp_tt", 1.0, -1e39)],
)
def test_observations_beyond_float32_are_refused(tmp_path, no_fsync, algorithm, epsilon, reward):
    """Finite as float64 but not as the state's float32: refused before anything changes (they
    used to be accepted, the state became NaN, was saved, reopened and ran on)."""
    with Trial.create(tmp_path / "t.trial", algorithm, 3, epsilon, 0.05, 0, noise="prng") as t:
        arm, before = t.next_arm(), t.status()
        with pytest.raises(ValueError, match="finite in float32"):
            t.record(arm, reward)
        assert t.status() == before
        t.record(arm, 0.5)
        assert t.status().samples == 1


def test_an_observation_too_large_for_the_float32_sums_is_refused(tmp_path, no_fsync):
    """1e38 is a float32, but four of them on one arm overflow its float32 sum (they used to be
    accepted until one was not): an observation above MAX_OBSERVATION (≈ 1.6e29) is refused
    before anything changes, one at the bound is recorded."""
    path = tmp_path / "t.trial"
    with Trial.create(path, "ttucb", 2, None, 0.05, 0, noise="prng") as t:
        arm, before = t.next_arm(), t.status()
        with pytest.raises(ValueError, match="too large for the algorithm's float32 sums"):
            t.record(arm, 1e38)
        assert t.status() == before
        t.record(arm, -MAX_OBSERVATION)
        assert t.status().samples == 1


def test_held_outcomes_at_the_bound_never_overflow_the_queue(tmp_path, no_fsync):
    """Cohorts whose later participants answered first, every value at MAX_OBSERVATION: when
    the first answers, the whole queue is applied and the state stays finite (an overflow
    there could never be undone: held outcomes are already recorded)."""
    path = tmp_path / "t.trial"
    with Trial.create(path, "ttucb_dpa", 2, None, 0.05, 0, noise="prng") as t:
        sizes = []
        while sum(sizes) < 40:
            batch = t.next_batch()
            for p, arm in reversed(batch):
                t.record(arm, MAX_OBSERVATION, participant=p)
            sizes.append(len(batch))
            assert t.status().samples == sum(sizes) and t.status().held == 0
        assert max(sizes) >= 4


def test_a_non_finite_state_is_refused_naming_the_participants():
    """The guard for states that hold more than sums (a plugin's squares)."""
    state = {"sums": np.array([1.0, np.inf], np.float32), "counts": np.array([1, 2])}
    with pytest.raises(ValueError, match=r"participants \[4, 5\] would make .* non-finite"):
        check_finite_state(state, [4, 5])
    check_finite_state({"sums": np.ones(2, np.float32)}, [4])


@settings(PROPERTY, max_examples=60)
@given(exponent=st.integers(-320, 308), sign=st.sampled_from([1.0, -1.0]))
def test_observations_of_every_magnitude_are_recorded_or_refused(tmp_path, exponent, sign):
    """Any float magnitude into a non-private trial: recorded with a finite state, or refused
    with the status unchanged."""
    reward = sign * 10.0**exponent
    with Trial.create(
        tmp_path / f"m{time.monotonic_ns()}.trial", "ttucb", 2, None, 0.05, 0, noise="prng"
    ) as t:
        for _ in range(3):
            arm, before = t.next_arm(), t.status()
            try:
                t.record(arm, reward)
            except ValueError as err:
                assert str(err) and t.status() == before
                return
            means = t._snap.state.estimate.means
            assert all(math.isfinite(float(m)) for m in means)


def _in_fork(action) -> str:
    """Runs ``action()`` in a forked child; what it raised (type: message), or "returned".
    The child never runs JAX after the fork, and leaves with os._exit (no atexit, no close)."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        os.close(read)
        try:
            action()
            outcome = "returned"
        except BaseException as err:  # reported to the parent
            outcome = f"{type(err).__name__}: {err}"
        os.write(write, outcome.encode())
        os._exit(0)
    os.close(write)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        done, _ = os.waitpid(pid, os.WNOHANG)
        if done:
            break
        time.sleep(0.01)
    else:
        os.kill(pid, 9)
        os.waitpid(pid, 0)
        raise AssertionError("the forked child hung")
    with os.fdopen(read, "rb") as pipe:
        return pipe.read().decode()


def test_a_forked_child_never_writes_the_parents_trial(tmp_path, no_fsync):
    """Parent and child both held the lock and both recorded; the child's record was lost and
    the store then failed its integrity check. Now the child is refused (and does not hang),
    its close leaves the parent's lock and log alone, and the parent goes on."""
    path = tmp_path / "t.trial"
    with Trial.create(path, "adap_tt", 3, 1.0, 0.05, 0, noise="prng") as t:
        drive(t, 5)
        p, arm = t.next_assignment()
        outcome = _in_fork(lambda: t.record(arm, 0.5, participant=p))
        assert outcome.startswith("RuntimeError: trial ") and "is a fork of it" in outcome
        assert _in_fork(t.close) == "returned"  # leaves the parent's lock and log alone
        t.record(arm, 0.5, participant=p)
        drive(t, 3)
        before = t.status()
    with Trial.open(path) as t:  # verified: the digest and the log agree
        assert t.status() == before and before.samples == 9


def test_a_forked_child_holds_no_lock_once_the_parent_closes(tmp_path, no_fsync):
    """The child's copy of the lock descriptor is closed at the fork: the parent can close and
    reopen its trial while the child lives on."""
    path = tmp_path / "t.trial"
    t = Trial.create(path, "ttucb", 3, None, 0.05, 0, noise="prng")
    read, write = os.pipe()
    child = os.fork()
    if child == 0:  # pragma: no cover - the child (the fork handlers have run)
        os.write(write, b"started")
        time.sleep(30)
        os._exit(0)
    try:
        assert os.read(read, 7) == b"started"
        t.close()
        with Trial.open(path) as reopened:
            assert reopened.status().samples == 0
    finally:
        os.kill(child, 9)
        os.waitpid(child, 0)
        os.close(read)
        os.close(write)


@pytest.mark.parametrize("change", ["replaced", "moved", "removed"])
def test_a_writer_whose_path_no_longer_names_its_file_acknowledges_nothing(
    tmp_path, no_fsync, change
):
    """A file moved over the path while a writer was open: the writer kept acknowledging
    records into the unlinked file, and on reopen the path held the other trial. Now it refuses
    to acknowledge. Its log keeps its name (``t.trial-wal``), so the file now at the path is
    refused beside it as another trial's log, and the moved file opens once its log is put
    back beside it: nothing is mixed, and nothing acknowledged is lost."""
    path, other = tmp_path / "t.trial", tmp_path / "other.trial"
    Trial.create(other, "ttucb", 3, None, 0.05, 1, noise="prng").close()
    other_bytes = other.read_bytes()
    with Trial.create(path, "ttucb", 3, None, 0.05, 0, noise="prng") as t:
        drive(t, 4)
        p, arm = t.next_assignment()
        if change == "replaced":
            os.replace(other, path)
        elif change == "moved":
            os.rename(path, tmp_path / "elsewhere.trial")
        else:
            os.unlink(path)
        for _ in range(2):  # and again: the writer stays refused
            with pytest.raises(RuntimeError, match="no longer names the file this writer opened"):
                t.record(arm, 0.5, participant=p)
    log = tmp_path / "t.trial-wal"
    if change == "replaced":
        assert path.read_bytes() == other_bytes  # the other trial, untouched
        with pytest.raises(CorruptStoreError, match="another trial's log"):
            Trial.open(path, read_only=True)
        log.rename(tmp_path / "first.trial-wal")
        with Trial.open(path, read_only=True) as reopened:
            assert reopened.status().samples == 0
    if change == "moved":
        log.rename(tmp_path / "elsewhere.trial-wal")
        with Trial.open(tmp_path / "elsewhere.trial") as moved:
            assert moved.status().samples == 4  # what was acknowledged, nothing more


def test_an_unclipped_reward_names_the_command_lines_flag(tmp_path, no_fsync):
    """The message said "create the trial with clip=True", which the command line spells
    --clip."""
    with Trial.create(tmp_path / "t.trial", "adap_tt", 3, 1.0, 0.05, 0, noise="prng") as t:
        with pytest.raises(ValueError, match="clip=True: --clip on the command line"):
            t.record(t.next_arm(), 1.5)
