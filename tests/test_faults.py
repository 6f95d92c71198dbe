"""Faults while a trial is open: a full disk, a fork, a file replaced under a writer.

The full-disk tests run on a real full file system: a 2 MiB tmpfs mounted for the test (it
needs the privilege to mount; elsewhere they are skipped), filled with a filler file until
``write`` fails with ENOSPC. A hostile review found that on a full disk a failed record was
followed by a ``close()`` that returned normally while SQLite moved the log into the main file
and deleted it, leaving the main file marked open without its log: every later open was
refused ("log … is missing"), although the main file held every record. The property test
injects a fault (a full disk after a random amount of free space, a fork, a replaced file) at
a random point of a trial and checks that nothing acknowledged is lost.
"""

from __future__ import annotations

import errno
import os
import sqlite3
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import jaxbai.trial._session as _session
from jaxbai.trial import Trial

PROPERTY = settings(
    deadline=None,
    derandomize=True,
    max_examples=24,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


@pytest.fixture
def small_disk(tmp_path) -> Iterator[Path]:
    """A 2 MiB tmpfs, mounted for the test (skipped where mounting is not allowed)."""
    disk = tmp_path / "disk"
    disk.mkdir()
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=2m,mode=0700", "tmpfs", str(disk)],
        capture_output=True,
        check=False,
    )
    if mounted.returncode != 0:
        pytest.skip("cannot mount a small file system here")
    yield disk
    subprocess.run(["umount", "-l", str(disk)], capture_output=True, check=False)


def fill(disk: Path, slack: int = 0) -> Path:
    """Fills ``disk`` until a write fails with ENOSPC, then frees ``slack`` bytes again."""
    filler = disk / "filler"
    fd = os.open(filler, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    try:
        while True:
            os.write(fd, bytes(4096))
    except OSError as err:
        assert err.errno == errno.ENOSPC
    finally:
        os.close(fd)
    size = filler.stat().st_size
    os.truncate(filler, max(size - slack, 0))
    return filler


def record_one(t: Trial) -> None:
    p, arm = t.next_assignment()
    t.record(arm, ((7 * p + arm) % 11) / 10, participant=p)


def names(disk: Path) -> list[str]:
    return sorted(p.name for p in disk.iterdir() if p.name != "filler")


def test_a_record_on_a_full_disk_changes_nothing_and_the_trial_reopens(small_disk):
    path = small_disk / "t.trial"
    with Trial.create(path, "adap_tt", 3, 1.0, 0.05, 0, noise="prng") as t:
        for _ in range(5):
            record_one(t)
        before, published = t.status(), t.publish()
        filler = fill(small_disk)
        with pytest.raises(OSError, match="the disk is full; nothing was written") as raised:
            record_one(t)
        assert raised.value.errno == errno.ENOSPC and t.status() == before
    # the session's mark is cleared in the space its own mark took: one file, no log
    assert names(small_disk) == ["t.trial"]
    with Trial.open(path) as t:  # still full: reading and opening need no new space
        assert (t.status(), t.publish()) == (before, published)
    filler.unlink()
    with Trial.open(path) as t:
        record_one(t)
        assert t.status().samples == before.samples + 1


def test_a_writer_that_cannot_clear_its_mark_keeps_its_log(small_disk, monkeypatch):
    """A reader holding the log keeps the checkpoint from restarting it, so on a full disk the
    mark cannot be cleared: close says so, and the log stays beside the main file."""
    monkeypatch.setattr(_session, "CHECKPOINT_WAIT_S", 0.2)
    path = small_disk / "t.trial"
    t = Trial.create(path, "adap_tt", 3, 1.0, 0.05, 0, noise="prng")
    record_one(t)
    reader = sqlite3.connect(f"file:{path}?mode=ro", uri=True, isolation_level=None)
    reader.execute("BEGIN")
    reader.execute("SELECT count(*) FROM assignments").fetchone()  # holds its snapshot
    for _ in range(3):
        record_one(t)
    before = t.status()
    filler = fill(small_disk)
    with pytest.raises(RuntimeError, match=r"stays two files, t\.trial and t\.trial-wal"):
        t.close()
    reader.close()
    assert names(small_disk) == ["t.trial", "t.trial-shm", "t.trial-wal"]
    with pytest.raises(OSError, match="the disk is full"):  # a writer needs space to mark
        Trial.open(path)
    assert "t.trial-wal" in names(small_disk)  # the refused writer kept it too
    with Trial.open(path, read_only=True) as r:
        assert r.status() == before
    filler.unlink()
    with Trial.open(path) as t:
        assert t.status() == before
    assert names(small_disk) == ["t.trial"]


@PROPERTY
@given(
    fault=st.sampled_from(["full disk", "fork", "replaced"]),
    at=st.integers(0, 12),
    slack=st.integers(0, 96 * 1024),
)
def test_no_fault_loses_an_acknowledged_record(small_disk, fault, at, slack):
    """A fault at a random record (for a full disk, after a random amount of space): every
    record acknowledged (``record`` returned) is in the trial when it is reopened, and nothing
    else."""
    for stale in small_disk.iterdir():
        stale.unlink()
    path = small_disk / "t.trial"
    t = Trial.create(path, "ttucb", 3, None, 0.05, 0, noise="prng")
    acknowledged = 0
    for _ in range(at):
        record_one(t)
        acknowledged += 1
    if fault == "full disk":
        filler = fill(small_disk, slack)
        for _ in range(40):
            try:
                record_one(t)
            except OSError as err:
                assert err.errno == errno.ENOSPC
                continue
            acknowledged += 1
        try:
            t.close()
        except RuntimeError as err:
            assert "two files" in str(err)
        filler.unlink()
    elif fault == "fork":
        read, write = os.pipe()
        child = os.fork()
        if child == 0:  # pragma: no cover - the child: every write refused, and no hang
            try:
                record_one(t)
                os.write(write, b"wrote")
            except RuntimeError:
                t.close()
                os.write(write, b"refused")
            os._exit(0)
        os.close(write)
        assert os.read(read, 7) == b"refused"
        os.waitpid(child, 0)
        os.close(read)
        record_one(t)
        t.close()
        acknowledged += 1
    else:
        os.rename(path, small_disk / "moved.trial")
        path.write_bytes(b"")
        with pytest.raises(RuntimeError, match="no longer names the file"):
            record_one(t)
        t.close()
        path.unlink()
        os.rename(small_disk / "moved.trial", path)  # back beside its log, which kept its name
    with Trial.open(path) as reopened:
        assert reopened.status().samples == acknowledged
