"""The trial store (jaxbai.trial._store): migration of schemas 1 to 3, O(1) writes, stale
temporaries.

Schema-1 files are written here from the layout the schema-1 code wrote (one JSON document:
arrays as dtype, shape and base64 bytes, floats of the configuration as hexadecimal strings,
exact sums as fractions, ``json.dumps(..., sort_keys=True, indent=1)``; a Top Two state as the
13 arrays of `LEGACY_TOP_TWO`). Schema-2 and schema-3 stores are fixtures written by that code
(``tests/fixtures``), with the publication it gave after continuing them.
"""

from __future__ import annotations

import base64
import contextlib
import json
import math
import os
import random
import sqlite3
import stat
from pathlib import Path

import jax
import numpy as np
import pytest

from jaxbai.toptwo import TopTwoState
from jaxbai.trial import PUBLICATION_VERSION, Trial

FIXTURES = Path(__file__).parent / "fixtures"

LEGACY_TOP_TWO = (
    "n", "counts", "sums", "sums_error", "means", "local_counts", "phase_start", "phases",
    "leader_counts", "leader_pulls", "priority", "stopped", "recommendation",
)  # fmt: skip
"""A Top Two state in schemas 1 and 2: one flat record (MLE estimators kept zero phases)."""


def legacy_leaves(state) -> list:
    """The state's arrays as schemas 1 and 2 laid them out."""
    if not isinstance(state, TopTwoState):
        return jax.tree_util.tree_leaves(state)
    fields = {**state.estimate._asdict(), **state._asdict()}
    zeros = np.zeros_like(np.asarray(state.counts))
    return [fields.get(name, zeros) for name in LEGACY_TOP_TWO]


def reward(n: int, arm: int) -> float:
    return ((7 * n + 3 * arm) % 11) / 10


def drive(t: Trial, samples: int) -> None:
    while t.status().samples < samples:
        arm = t.next_arm()
        t.record(arm, reward(t.status().samples, arm))


def stored(path: Path) -> tuple[tuple, list]:
    with contextlib.closing(sqlite3.connect(path)) as db:
        snapshot = db.execute("SELECT samples, data, windows FROM snapshot").fetchone()
        rows = db.execute("SELECT * FROM assignments ORDER BY participant").fetchall()
    return snapshot, rows


def schema1_bytes(t: Trial, noise: str | None = None) -> bytes:
    """Trial ``t`` (one request open or none) as a schema-1 state file."""

    def array(value) -> dict:
        a = np.asarray(value)
        data = base64.b64encode(a.tobytes()).decode("ascii")
        return {"dtype": a.dtype.str, "shape": list(a.shape), "data": data}

    c = t.config
    hexed = lambda x: None if x is None else float(x).hex()  # noqa: E731
    document = {
        "format": "jaxbai-trial",
        "schema_version": 1,
        "sensitive": True,
        "config": {
            "algorithm": c.algorithm,
            "options": c.options,
            "num_arms": c.num_arms,
            "epsilon": hexed(c.epsilon),
            "delta": hexed(c.delta),
            "clip": c.clip,
            "noise": noise or c.noise,
        },
        "key": array(jax.random.key_data(t._snap.key)),
        "state": [array(leaf) for leaf in legacy_leaves(t._snap.state)],
        "actions": array(np.asarray(t.publish()["actions"], np.int32)),
        "pending_arm": t.status().pending_arm,
        "windows": [] if noise == "prng" else [[n, str(s)] for n, s in t._snap.windows],
    }
    return (json.dumps(document, sort_keys=True, indent=1) + "\n").encode()


def test_schema1_file_is_migrated_and_continues_exactly(tmp_path, no_fsync):
    bits = random.Random(3)
    original = Trial.create(
        tmp_path / "new.trial", "adap_tt", 3, 0.5, 0.05, 9, randbits=bits.getrandbits
    )
    drive(original, 40)
    pending = original.next_arm()
    old = tmp_path / "old.trial"
    old.write_bytes(schema1_bytes(original))
    os.chmod(old, 0o600)
    copy = random.Random()
    copy.setstate(bits.getstate())
    migrated = Trial.open(old, randbits=copy.getrandbits)
    assert old.read_bytes()[:16] == b"SQLite format 3\x00"
    assert stat.S_IMODE(old.stat().st_mode) == 0o600
    assert migrated.status().pending_arm == pending
    assert "before sample 40: snapped laplace, schema 1" in migrated.publish()["noise"]
    for t in (original, migrated):
        drive(t, 300)  # crosses several phase ends: releases from the migrated exact sums
    first, second = original.publish(), migrated.publish()
    assert {**first, "noise": None} == {**second, "noise": None}
    original.close(), migrated.close()
    assert stored(tmp_path / "new.trial") == stored(old)


def test_schema1_files_that_cannot_continue_are_refused(tmp_path, no_fsync):
    with Trial.create(tmp_path / "new.trial", "adap_tt", 3, 0.5, 0.05, 9, noise="prng") as t:
        drive(t, 5)
        rehearsal = schema1_bytes(t, noise="prng")
    path = tmp_path / "old.trial"
    path.write_bytes(rehearsal)
    with pytest.raises(ValueError, match="cannot be migrated"):
        Trial.open(path)
    assert path.read_bytes() == rehearsal  # refused files are left as they were
    with Trial.create(tmp_path / "ttucb.trial", "ttucb", 3, None, 0.05, 1, noise="prng") as t:
        drive(t, 5)
        plain = schema1_bytes(t, noise="prng")  # nothing to release: migrates
    path.write_bytes(plain)
    with Trial.open(path) as t:
        assert t.status().samples == 5 and t.publish()["noise"] == "none"


REFUSED_BY_CREATE = [
    # (the schema-1 config field, its value there, the same value as create's keyword)
    pytest.param("epsilon", float(1000).hex(), {"epsilon": 1000.0}, id="epsilon-1000"),
    pytest.param("epsilon", "inf", {"epsilon": math.inf}, id="epsilon-inf"),
    pytest.param("epsilon", None, {"epsilon": None}, id="epsilon-none"),
    pytest.param("delta", (1.5).hex(), {"delta": 1.5}, id="delta-1.5"),
    pytest.param("noise", "bogus", {"noise": "bogus"}, id="noise"),
    pytest.param("clip", "yes", {"clip": "yes"}, id="clip"),
    pytest.param("num_arms", 1, {"num_arms": 1}, id="one-arm"),
    pytest.param("options", {"beta": "x"}, {"beta": "x"}, id="option"),
    pytest.param("algorithm", "no_such", {"algorithm": "no_such"}, id="algorithm"),
]


@pytest.mark.parametrize(("field", "stored", "keyword"), REFUSED_BY_CREATE)
def test_a_migrated_file_is_refused_where_create_refuses(field, stored, keyword, tmp_path):
    """Every value `Trial.create` refuses is refused in a schema-1 file too, which is then left
    as it was (a file migrated without these checks ran ε = 1000 and published it)."""
    args = {"algorithm": "adap_tt", "num_arms": 3, "epsilon": 0.5, "delta": 0.05, "seed": 9}
    with pytest.raises(ValueError):
        Trial.create(tmp_path / "new.trial", **{**args, "noise": "prng", **keyword})
    with Trial.create(tmp_path / "valid.trial", **args, noise="prng") as t:
        document = json.loads(schema1_bytes(t))
    document["config"][field] = stored
    path = tmp_path / "old.trial"
    path.write_bytes(json.dumps(document).encode())
    with pytest.raises(ValueError, match="no trial may run it"):
        Trial.open(path)
    assert json.loads(path.read_bytes()) == document


@pytest.mark.parametrize(
    ("algorithm", "sensitive"), [("adap_tt", False), ("ctb_tt", True)], ids=["global", "local"]
)
def test_a_migrated_file_must_mark_its_data_as_its_algorithm_does(algorithm, sensitive, tmp_path):
    """A store of raw rewards marked not sensitive, or an algorithm swapped for one of another
    trust model, is refused."""
    with Trial.create(tmp_path / "valid.trial", "adap_tt", 3, 0.5, 0.05, 9, noise="prng") as t:
        document = json.loads(schema1_bytes(t))
    document["sensitive"], document["config"]["algorithm"] = sensitive, algorithm
    path = tmp_path / "old.trial"
    path.write_bytes(json.dumps(document).encode())
    with pytest.raises(ValueError, match=f"sensitive={sensitive}, but a {algorithm} trial"):
        Trial.open(path)


def test_a_store_without_digest_is_held_to_the_checks_of_create(tmp_path):
    """A schema-3 store (no digest) whose configuration was edited to ε = 1000 is refused at
    open, for reading as for writing."""
    path = tmp_path / "edited.trial"
    path.write_bytes((FIXTURES / "schema3_adap_tt.trial").read_bytes())
    with contextlib.closing(sqlite3.connect(path)) as db, db:
        config = json.loads(
            db.execute("SELECT value FROM meta WHERE name = 'config'").fetchone()[0]
        )
        config["epsilon"] = float(1000).hex()
        db.execute("UPDATE meta SET value = ? WHERE name = 'config'", (json.dumps(config),))
    edited = path.read_bytes()
    for read_only in (True, False):
        with pytest.raises(ValueError, match="epsilon"):
            Trial.open(path, read_only=read_only)
    assert path.read_bytes() == edited  # refused before the writer upgraded or marked it
    log = tmp_path / "edited.trial-wal"
    assert not log.exists() or log.stat().st_size == 0  # the reader's, with nothing in it


@pytest.mark.parametrize("schema", [2, 3])
@pytest.mark.parametrize("name", ["adap_tt", "ttucb"])
def test_older_store_is_migrated_and_continues_exactly(schema, name, tmp_path):
    """A store written by the schema-2 (or 3) code after 30 outcomes, continued with the next
    120 outcomes of the same stream, publishes what that code published; it is then schema 4,
    with its digest, and reopens as such."""
    path = tmp_path / f"{name}.trial"
    path.write_bytes((FIXTURES / f"schema{schema}_{name}.trial").read_bytes())
    expected = json.loads((FIXTURES / "schema2_expected.json").read_text())[name]
    assert expected["schema_version"] == 2  # publication layout 3 added the plugin (None here)
    # Layout 4 added the privacy measure: a store of that time reads as what it was, pure.
    measure = {"adap_tt": "ε-DP (global, pure)", "ttucb": "not private"}[name]
    expected = {
        **expected, "schema_version": PUBLICATION_VERSION, "plugin": None,
        "privacy_measure": measure,
    }  # fmt: skip
    rng = np.random.default_rng(3)
    outcomes = rng.random(150)  # the fixtures' stream: one draw per outcome
    with Trial.open(path, read_only=True) as t:  # read as it is, written nothing
        assert t.status().samples == 30
    assert path.read_bytes() == (FIXTURES / f"schema{schema}_{name}.trial").read_bytes()
    with Trial.open(path) as t:
        for u in outcomes[30:]:
            arm = t.next_arm()
            t.record(arm, float(u < (0.6, 0.5, 0.4)[arm]))
        got = {**t.publish(), "samples": t.status().samples}
    assert got == expected
    with contextlib.closing(sqlite3.connect(path)) as db:
        meta = dict(db.execute("SELECT name, value FROM meta"))
    assert meta["schema_version"] == "4" and ".estimate.means" in json.loads(meta["paths"])
    assert len(meta["store_id"]) == 32 and meta["session"] == ""
    with Trial.open(path) as t:  # reopens as schema 4, its digest verified
        assert t.publish() == {k: v for k, v in expected.items() if k != "samples"}


def wal_frames_per_record(t: Trial, records: int) -> float:
    """Pages the log receives per applied outcome (one-by-one: issue, then record)."""
    db = t._store._db
    db.execute("PRAGMA wal_autocheckpoint=0")
    db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    log = Path(f"{t.path}-wal")
    assert log.stat().st_size == 0
    drive(t, t.status().samples + records)
    page = db.execute("PRAGMA page_size").fetchone()[0]
    return (log.stat().st_size - 32) / (page + 24) / records  # 32-byte header, 24 per frame


@pytest.mark.integration
def test_record_io_does_not_grow_with_the_trial(tmp_path, no_fsync):
    """Each record writes the same few pages at 300 and at 5 000 samples (the schema-1 file,
    rewritten whole twice per record, grew by 4 bytes of actions per sample)."""
    path = tmp_path / "t.trial"
    with Trial.create(path, "adap_tt_global", 3, 0.05, 0.01, 0, noise="prng") as t:
        drive(t, 300)
        early = wal_frames_per_record(t, 100)
        while t.status().samples < 5_000:  # cohorts: fast to grow the store
            for p, arm in t.next_batch(max_size=5_000 - t.status().samples):
                t.record(arm, reward(p, arm), participant=p)
        late = wal_frames_per_record(t, 100)
    # Three pages per sample (the assignment's leaf, the snapshot row with the digest when
    # the assignment is issued, again when its outcome is applied), plus rare B-tree splits.
    assert early <= 3.5 and late <= 3.5
    assert late <= early * 1.1


def test_stale_temporaries_are_removed_on_open(tmp_path):
    path = tmp_path / "t.trial"
    Trial.create(path, "ttucb", 3, None, 0.05, 0).close()
    stale = [tmp_path / f".t.trial.x1{suffix}" for suffix in (".tmp", ".tmp-wal", ".tmp-shm")]
    for name in stale:
        name.write_bytes(b"partial")
    Trial.open(path).close()
    assert not any(name.exists() for name in stale)


def test_bench_trial_reports_percentiles_per_checkpoint(tmp_path):
    """``python -m experiments.bench trial`` reaches the trial load benchmark (tiny sizes)."""
    from experiments import bench

    out = tmp_path / "trial.json"
    argv = ["trial", "--participants", "40", "--window", "5", "--out", str(out)]
    assert bench.main(argv) == 0
    report = json.loads(out.read_text())["load"]
    assert report["40"]["samples"] == 40
    for kind in ("one_by_one", "cohort_record"):
        assert report["40"][kind]["n"] == 5
        assert 0 < report["40"][kind]["p50_ms"] <= report["40"][kind]["p99_ms"]


@pytest.mark.parametrize("name", ["file:a.trial", "file:a.trial?mode=memory", ":memory:"])
def test_a_path_is_never_read_as_a_sqlite_uri(tmp_path, monkeypatch, name):
    """SQLite reads "file:…" as a URI and ":memory:" as no file: the store is opened through a
    URI built from the path, so each name is the file of that name (issue: "file:a.trial"
    used to write into a.trial)."""
    monkeypatch.chdir(tmp_path)
    with Trial.create(name, "ttucb", 3, None, 0.05, 1, noise="prng") as t:
        arm = t.next_arm()
        t.record(arm, 1.0)
    assert sorted(p.name for p in tmp_path.iterdir()) == [name]
    with Trial.open(tmp_path / name) as t:
        assert t.status().samples == 1


def test_a_trial_left_open_reopens_with_every_record(tmp_path):
    """A process that ended without close() left a session mark and no log: every later
    status, next and backup was refused. Now a trial left open is closed at exit, and one
    dropped is closed when collected (its lock released)."""
    import gc
    import subprocess
    import sys

    path = tmp_path / "left.trial"
    script = (
        "import sys\nfrom jaxbai.trial import Trial\n"
        "t = Trial.create(sys.argv[1], 'ttucb', 3, None, 0.05, 1, noise='prng')\n"
        "for _ in range(7):\n    t.record(t.next_arm(), 1.0)\n"
    )  # no close(): the process just ends
    done = subprocess.run([sys.executable, "-c", script, str(path)], capture_output=True)
    assert done.returncode == 0, done.stderr.decode()
    with Trial.open(path) as t:
        assert t.status().samples == 7
        t.record(t.next_arm(), 0.0)
    dropped = Trial.open(path)
    dropped.record(dropped.next_arm(), 1.0)
    del dropped
    gc.collect()
    with Trial.open(path) as t:  # the lock was released with the dropped trial
        assert t.status().samples == 9
