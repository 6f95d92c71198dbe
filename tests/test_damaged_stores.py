"""Damaged and foreign files: each refused at open, in one line that says what to do.

Each case is one a hostile review reported with the message it gave then: a damaged store said
"too many values to unpack", "Could not decode to UTF-8" or "no such column: windows"; two
damaged files opened and failed only at the first write; a store whose ``store_id`` row was
damaged was read as a schema-3 store, without its integrity check; ``status`` on a junk file
suggested migrating it; creating over an existing file named the hidden temporary file. Now a
damaged store always says "damaged: restore it from a backup", for a reader as for a writer,
on the command line as one line.
"""

from __future__ import annotations

import contextlib
import io
import sqlite3
from pathlib import Path

import pytest

from jaxbai.trial import Trial, main
from jaxbai.trial._integrity import CorruptStoreError

DAMAGED = "damaged: restore it from a backup"


def cli(*argv: str) -> tuple[int, str]:
    """``python -m jaxbai.trial`` in process: (exit status, stderr)."""
    err = io.StringIO()
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
        code = main(list(argv))
    return code, err.getvalue()


@pytest.fixture(scope="module")
def pristine(tmp_path_factory) -> bytes:
    path = tmp_path_factory.mktemp("pristine") / "t.trial"
    with Trial.create(path, "adap_tt", 3, 1.0, 0.05, 0, noise="prng") as t:
        for _ in range(12):
            p, arm = t.next_assignment()
            t.record(arm, 0.5, participant=p)
    return path.read_bytes()


def edited(tmp_path: Path, pristine: bytes, *statements: str) -> Path:
    """A copy of the pristine store with ``statements`` run on it (the schema writable)."""
    path = tmp_path / "t.trial"
    path.write_bytes(pristine)
    with contextlib.closing(sqlite3.connect(path, isolation_level=None)) as db:
        db.execute("PRAGMA writable_schema = ON")
        for sql in statements:
            db.execute(sql)
    for side in ("-wal", "-shm"):
        Path(f"{path}{side}").unlink(missing_ok=True)
    return path


def assert_damaged(path: Path) -> None:
    for read_only in (True, False):
        with pytest.raises(CorruptStoreError, match=DAMAGED):
            Trial.open(path, read_only=read_only)
    for command in ("status", "next"):
        code, err = cli(command, str(path))
        assert code == 2 and DAMAGED in err and err.count("\n") == 1, err


DAMAGE = {
    # "Could not decode to UTF-8 column 'value'"
    "invalid UTF-8 in the meta table": [
        "UPDATE meta SET value = CAST(X'5B22FF225D' AS TEXT) WHERE name = 'paths'"
    ],
    # "no such column: windows", at the first write
    "a renamed column": [
        "UPDATE sqlite_master SET sql = replace(sql, 'windows', 'windowz') WHERE name = 'snapshot'"
    ],
    # "too many values to unpack (expected 2)"
    "an extra column": ["ALTER TABLE snapshot ADD COLUMN extra TEXT"],
    # read as schema 3: no integrity check, then "duplicate column name: log_sum"
    "a damaged store_id row": ["UPDATE meta SET name = 'store_ie' WHERE name = 'store_id'"],
    "a damaged format row": ["UPDATE meta SET value = 'jaxbai-tri`l' WHERE name = 'format'"],
    "a schema version out of range": ["UPDATE meta SET value = '3' WHERE name = 'schema_version'"],
    # the index out of step with its table: reads pass, a write trips on it
    "a damaged index": [
        "UPDATE sqlite_master SET sql = NULL, type = 'table' WHERE name = 'sqlite_autoindex_meta_1'"
    ],
}


@pytest.mark.parametrize("statements", DAMAGE.values(), ids=DAMAGE.keys())
def test_a_damaged_store_is_refused_at_open_as_damaged(statements, pristine, tmp_path):
    assert_damaged(edited(tmp_path, pristine, *statements))


def test_a_store_whose_index_disagrees_with_its_table_is_refused_at_open(pristine, tmp_path):
    """An index entry changed in place (the file's bytes, as a flipped bit would): SQLite
    reads the table without the index, and the first write used to fail on it."""
    path = tmp_path / "t.trial"
    path.write_bytes(pristine)
    with contextlib.closing(sqlite3.connect(path)) as db:
        root = db.execute(
            "SELECT rootpage FROM sqlite_master WHERE name = 'sqlite_autoindex_meta_1'"
        ).fetchone()[0]
        page_size = db.execute("PRAGMA page_size").fetchone()[0]
    data = bytearray(path.read_bytes())
    page = data[(root - 1) * page_size : root * page_size]
    at = page.index(b"session")
    data[(root - 1) * page_size + at] ^= 0x01  # "session" → "ression" in the index only
    path.write_bytes(bytes(data))
    assert_damaged(path)


def test_a_store_that_lost_its_header_is_damaged_and_junk_is_not_a_trial(pristine, tmp_path):
    path = tmp_path / "t.trial"
    path.write_bytes(b"SQLite format 2\x00" + pristine[16:])
    assert_damaged(path)
    path.write_bytes(pristine[:18] + b"\x01\x01" + pristine[20:])  # not in WAL mode
    assert_damaged(path)
    path.write_bytes(b"a shopping list\n")
    for read_only in (True, False):
        with pytest.raises(ValueError, match="is not a jaxbai trial") as raised:
            Trial.open(path, read_only=read_only)
        assert "migrat" not in str(raised.value)
    code, err = cli("status", str(path))
    assert code == 2 and "is not a jaxbai trial" in err and "migrat" not in err


def test_creating_over_an_existing_file_names_the_path(tmp_path):
    path = tmp_path / "t.trial"
    path.write_bytes(b"")
    dangling = tmp_path / "dangling.trial"
    dangling.symlink_to(tmp_path / "nowhere.trial")
    for target in (path, dangling):
        code, err = cli(
            "create", str(target), "--algorithm", "ttucb", "--arms", "3", "--delta", "0.05"
        )
        assert code == 2 and f"{target} already exists" in err and ".tmp" not in err, err
