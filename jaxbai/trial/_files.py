"""The files of a trial store: the writer's lock, the commit durability, the log, atomic creation.

What the SQLite database of `jaxbai.trial._store` needs from the file system: the
``flock(LOCK_EX)`` a writer holds on the database file (``acquire``), the ``PRAGMA synchronous``
of every connection (`SYNCHRONOUS`, set for a block by `synchronous`), the name of the log
beside the database and the checks that it is present and the store's own, how readers open the
file, and the atomic creation of a new file (``install``: a temporary, renamed or linked into
place, and fsynced). The module docstring of `jaxbai.trial._store` says why (ownership,
durability, one file at rest).
"""

from __future__ import annotations

import contextlib
import errno
import os
import sqlite3
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

__all__ = [
    "SYNCHRONOUS",
    "SYNCHRONOUS_MODES",
    "acquire",
    "check_log_owner",
    "check_log_present",
    "check_owner",
    "check_writable_medium",
    "fsync",
    "hard_links",
    "install",
    "log_path",
    "main_file_meta",
    "on_read_only_medium",
    "read_meta",
    "reader_uri",
    "release",
    "remove_stale_temporaries",
    "rollback",
    "synchronous",
    "uri",
    "writing",
]

SYNCHRONOUS = "FULL"
"""``PRAGMA synchronous`` of every connection: FULL fsyncs the log at each commit. Tests of
decisions rather than durability may set ``"OFF"``."""

SYNCHRONOUS_MODES = ("OFF", "NORMAL", "FULL", "EXTRA")
"""SQLite's levels of ``PRAGMA synchronous``, which `synchronous` accepts."""


@contextlib.contextmanager
def synchronous(mode: str) -> Iterator[None]:
    """Trials created or opened inside the block commit with ``PRAGMA synchronous=mode``.

    The default, ``"FULL"``, fsyncs the log at every record (the package docstring,
    `jaxbai.trial`, says what that guarantees). ``"OFF"`` leaves the writing to the operating
    system: a killed process still loses nothing committed, but a power failure or a crash of
    the operating system may lose records or corrupt the store, so it is for rehearsals and
    simulations whose trials can be thrown away, never for a real trial. A trial keeps the mode
    it was created or opened with until it is closed. The setting is process-wide: do not use
    it from several threads at once.

    Args:
      mode: ``"OFF"``, ``"NORMAL"``, ``"FULL"`` or ``"EXTRA"`` (SQLite's levels).

    Raises:
      ValueError: another mode.

    Examples:
      >>> import os, tempfile
      >>> from jaxbai.trial import Trial
      >>> path = os.path.join(tempfile.mkdtemp(), "rehearsal.trial")
      >>> with synchronous("OFF"), Trial.create(
      ...     path, "ttucb", num_arms=2, epsilon=None, delta=0.1, seed=0
      ... ) as trial:
      ...     trial.record(trial.next_arm(), 0.25)
      ...     trial.status().samples
      1
    """
    global SYNCHRONOUS
    if mode not in SYNCHRONOUS_MODES:
        raise ValueError(f"synchronous mode must be one of {SYNCHRONOUS_MODES}, got {mode!r}")
    saved, SYNCHRONOUS = SYNCHRONOUS, mode
    try:
        yield
    finally:
        SYNCHRONOUS = saved


def fsync(path: Path, flags: int = os.O_RDONLY) -> None:
    fd = os.open(path, flags)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _temporary_prefix(path: Path) -> str:
    return f".{path.name}."


def remove_stale_temporaries(path: Path) -> None:
    """Deletes the temporaries (and their SQLite side files) of a killed creation."""
    for stale in path.parent.glob(f"{_temporary_prefix(path)}*.tmp*"):
        stale.unlink(missing_ok=True)


_HELD: set[int] = set()
"""The lock descriptors this process holds (`acquire`, `release`)."""


def release(fd: int) -> None:
    """Releases a lock `acquire` took (closes its descriptor)."""
    _HELD.discard(fd)
    os.close(fd)


def _close_inherited_locks() -> None:
    """In a forked child: close the copies of every lock descriptor, so that the child never
    keeps a trial locked once its parent closes it (flock holds until every copy is closed);
    the child's stores refuse to write (`check_owner`)."""
    for fd in _HELD:
        with contextlib.suppress(OSError):
            os.close(fd)
    _HELD.clear()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_close_inherited_locks)


def acquire(path: Path) -> int:
    """Takes ``flock(LOCK_EX)`` on the file ``path`` names, without waiting.

    The lock belongs to the inode, so every path to the file sees it. If ``path`` is replaced
    while the lock is taken (a migration), the new file is locked instead. ``fcntl`` is
    imported here, not at module level, so that jaxbai imports where it does not exist
    (Windows); only writing a trial needs it.

    Returns:
      The descriptor; closing it releases the lock.

    Raises:
      FileNotFoundError: no such file.
      RuntimeError: another process (or another open `jaxbai.trial.Trial`) holds the lock.
    """
    import fcntl

    while True:
        fd = os.open(path, os.O_RDONLY)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            if os.path.samestat(os.fstat(fd), os.stat(path)):
                _HELD.add(fd)
                return fd
        except BlockingIOError as err:
            os.close(fd)
            raise RuntimeError(
                f"trial {path} is open in another process (or through another path to the "
                "same file); close it there first"
            ) from err
        except BaseException:
            os.close(fd)
            raise
        os.close(fd)


def install(
    path: Path, write: Callable[[Path], None], *, exclusive: bool = False, lock: bool = False
) -> int | None:
    """Builds ``path`` atomically: ``write`` fills (and fsyncs) a mode-0600 temporary file in
    the same directory, which is then renamed over ``path`` (or hard-linked to it when
    ``exclusive``: FileExistsError if it exists); finally the directory is fsynced. A crash at
    any point leaves either the old file or the new one, never a mix.

    Returns:
      With ``lock``, the descriptor of the writer's lock on the new file, taken before it
      appeared under ``path`` (no other process can open it first); else None.
    """
    check_name_length(path)
    fd, name = tempfile.mkstemp(prefix=_temporary_prefix(path), suffix=".tmp", dir=path.parent)
    os.close(fd)
    temporary, lock_fd = Path(name), None
    try:
        write(temporary)
        lock_fd = acquire(temporary) if lock else None
        if exclusive:
            _link_new(temporary, path)
        else:
            os.replace(temporary, path)
        fsync(path.parent)
    except BaseException:
        if lock_fd is not None:
            release(lock_fd)
        raise
    finally:
        temporary.unlink(missing_ok=True)
    return lock_fd


def _link_new(temporary: Path, path: Path) -> None:
    """Links ``temporary`` as ``path``; FileExistsError naming ``path`` (not the temporary)
    if something is there, a dangling symbolic link included."""
    try:
        os.link(temporary, path)
    except FileExistsError:
        raise FileExistsError(
            errno.EEXIST,
            f"{path} already exists (a file, or a link to one that does not): open it, or "
            "choose another path",
        ) from None


def log_path(path: Path) -> Path:
    return path.with_name(f"{path.name}-wal")


def uri(path: Path, query: str) -> str:
    return f"{path.absolute().as_uri()}?{query}"


def on_read_only_medium(path: Path) -> bool:
    """Whether ``path``'s directory is on a file system mounted read-only."""
    return bool(os.statvfs(path.parent).f_flag & os.ST_RDONLY)


_BESIDE = len(".") + len(".") + 8 + len(".tmp") + len("-journal")
"""The bytes the longest file made beside ``x`` adds to its name: the temporary of `install`
(``.x.<8 random>.tmp``) and SQLite's journal of that temporary."""


def check_name_length(path: Path) -> None:
    """ValueError for a name too long for the files made beside it (`install`'s temporary and
    SQLite's log and journal): the file system would refuse one of them half-way."""
    try:
        limit = os.pathconf(path.parent, "PC_NAME_MAX")
    except (OSError, ValueError):
        limit = 255
    size = len(os.fsencode(path.name))
    if size + _BESIDE > limit:
        raise ValueError(
            f"the name {path.name!r} is {size} bytes long: the files made beside it need "
            f"{_BESIDE} more, and this file system allows {limit} a name; use at most "
            f"{limit - _BESIDE} bytes"
        )


def check_writable_medium(path: Path) -> None:
    """Refuses to open ``path`` for writing on a read-only medium, where SQLite could not."""
    if on_read_only_medium(path):
        raise ValueError(
            f"trial {path} is on a read-only medium: it can be read there (status, publish, "
            "backup), but continuing it needs a copy on writable storage (backup makes one)"
        )


def reader_uri(path: Path) -> str:
    """How a reader opens ``path``: through its log (``mode=ro``), or, on a read-only medium
    without a log (no writer can be there), as immutable, as SQLite cannot build the log's
    index there."""
    log = log_path(path)
    if on_read_only_medium(path) and not (log.exists() and log.stat().st_size):
        return uri(path, "mode=ro&immutable=1")
    return uri(path, "mode=ro")


def read_meta(db: sqlite3.Connection) -> dict[str, str]:
    return dict(db.execute("SELECT name, value FROM meta"))


def main_file_meta(path: Path) -> dict[str, str]:
    """The meta table as the main file alone holds it (its log ignored)."""
    with contextlib.closing(sqlite3.connect(uri(path, "mode=ro&immutable=1"), uri=True)) as db:
        return read_meta(db)


def check_log_present(path: Path, main: dict[str, str]) -> None:
    """Refuses a main file (``main``: its meta table alone) whose mark says a session is open
    while its log is missing; run before SQLite looks for the log."""
    log = log_path(path)
    if main.get("session") and not log.exists():
        linked = [name for name in hard_links(path) if log_path(name).exists()]
        if linked:
            raise ValueError(
                f"trial {path} was not closed cleanly while open as {linked[0].name}, a hard "
                f"link to the same file: its log is {log_path(linked[0]).name}; open the trial "
                f"as {linked[0]}"
            )
        raise ValueError(
            f"trial {path} was not closed cleanly and its log {log.name} is missing: the log "
            f"holds the records since it was opened. Put {log.name} back beside {path.name} "
            "(an open or interrupted trial is both files; python -m jaxbai.trial backup "
            "copies one into a single file)"
        )


def hard_links(path: Path) -> list[Path]:
    """The other names of ``path``'s file in its directory (hard links), sorted: SQLite names a
    log after the name a store was opened under, so an interrupted trial's log may be beside
    another of them."""
    here = path.stat()
    if here.st_nlink < 2:
        return []
    others = []
    for entry in sorted(os.scandir(path.parent), key=lambda e: e.name):
        same = entry.name != path.name and entry.is_file(follow_symlinks=False)
        if same and entry.inode() == here.st_ino and entry.stat().st_dev == here.st_dev:
            others.append(Path(entry.path))
    return others


def check_log_owner(path: Path, main: dict[str, str], view: dict[str, str]) -> None:
    """Refuses a log that belongs to another store: ``view``, the meta table SQLite reads
    through the log, names another ``store_id`` than ``main``, the main file's alone."""
    if main.get("store_id") != view.get("store_id"):
        log = log_path(path)
        raise ValueError(
            f"the log {log.name} beside {path} belongs to another trial: move it away and put "
            f"back {path.name}'s own log (or restore a backup); nothing was changed"
        )


def check_owner(path: Path, lock_fd: int, pid: int) -> None:
    """RuntimeError unless this process, holding ``lock_fd`` on ``path``, may write it: it is
    process ``pid``, which opened it (a forked child shares the parent's lock and connection,
    and its records would be lost or break the integrity check), and ``path`` still names the
    file it locked (a file moved over the path, or the path removed, would take the records
    into an unlinked file)."""
    if os.getpid() != pid:
        raise RuntimeError(
            f"trial {path} was opened by process {pid}, and this process ({os.getpid()}) is a "
            "fork of it: a forked process never writes the parent's trial; open the trial in "
            "this process once the parent has closed it"
        )
    try:
        same = os.path.samestat(os.fstat(lock_fd), os.stat(path))
    except FileNotFoundError:
        same = False
    if not same:
        raise RuntimeError(
            f"trial {path} no longer names the file this writer opened (it was moved, replaced "
            "or removed): nothing was written; find the trial's file and open it"
        )


@contextlib.contextmanager
def writing(path: Path) -> Iterator[None]:
    """Turns SQLite's errors for a full or failing disk into an `OSError` (``ENOSPC``,
    ``EIO``) whose message names ``path`` and says what to do; the transaction was rolled
    back, so nothing was written."""
    try:
        yield
    except sqlite3.OperationalError as err:
        name = getattr(err, "sqlite_errorname", "")  # Python ≥ 3.11; else the message
        if name == "SQLITE_FULL" or str(err) == "database or disk is full":
            raise OSError(
                errno.ENOSPC,
                f"trial {path}: the disk is full; nothing was written (every acknowledged "
                "record is kept): free space and retry",
            ) from err
        if name.startswith("SQLITE_IOERR") or str(err).startswith("disk I/O error"):
            raise OSError(
                errno.EIO,
                f"trial {path}: the disk failed a write ({err}: is it full, or was it "
                "removed?); nothing was written: fix the disk and retry",
            ) from err
        raise


def rollback(db: sqlite3.Connection) -> None:
    """Rolls back an open transaction, keeping the error that caused it (SQLite may already
    have rolled back after an I/O error or a full disk)."""
    if db.in_transaction:
        with contextlib.suppress(sqlite3.Error):
            db.execute("ROLLBACK")
