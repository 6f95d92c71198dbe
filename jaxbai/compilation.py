"""JAX's persistent compilation cache, keyed for jaxbai: compile a program once per machine.

A grid's program takes seconds to compile, and every new process compiles it again. JAX can
write compiled programs to a directory that later processes read (its persistent compilation
cache); `compilation_cache` turns that on for this process in a directory of jaxbai's:

* **Per user, private.** ``$XDG_CACHE_HOME/jaxbai/compiled`` (``~/.cache/jaxbai/compiled``),
  created 0700. A compiled program is machine code this process runs, so a directory that others
  can write to would let them run code here: such a directory is refused.
* **Split by machine and by jaxbai.** Programs go to ``<base>/<machine>/<jaxbai>``: ``<machine>``
  hashes the CPU (model and feature flags; a program compiled for one CPU is rejected on another,
  and recompiled on every run if the two shared a directory), ``<jaxbai>`` is jaxbai's version
  and a hash of its source, so a changed jaxbai never reads a program of another. Inside, JAX's
  own key covers the program, the compile options, JAX's version and the device kind.
* **Safe to share between processes.** Reads and writes take a file lock (the ``filelock``
  package, through JAX's size-bounded cache, `MAX_BYTES`): two sweeps, pytest-xdist workers or
  the processes of a ``jax.distributed`` run (only the first writes) can use one directory.
* **Theory values too.** `remembered` keeps the values of jaxbai's theory (the characteristic
  times a figure overlays, which take seconds to trace in every process even when their
  programs are cached) beside the programs, keyed by the function and the exact inputs.
* **Never in the way.** A corrupt entry or one that cannot be written is compiled instead, with
  JAX's one warning; a directory that cannot be created or is not private turns the cache off
  with one line on stderr.

Where it is on: every command line of jaxbai and its experiments (sweep and its ``--plan``,
studies, bench, audit, plot, report, trial; ``--no-cache`` turns it off)
and the test suite. A library user or notebook turns it on with one call; ``import jaxbai``
never does, since it is a setting of the whole process::

    import jaxbai

    jaxbai.compilation_cache()  # -> the directory in use, or None when off

Environment: ``JAXBAI_NO_CACHE=1`` turns it off wherever jaxbai would turn it on;
``JAXBAI_CACHE_DIR=path`` moves its base (as does JAX's own ``JAX_COMPILATION_CACHE_DIR``).
On a GPU the cache has not been checked yet (no GPU was available when it was written).

    >>> machine_key() == machine_key() and len(machine_key()) == 12
    True
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import hashlib
import marshal
import os
import platform
import stat
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

import jax
import numpy as np

from jaxbai.version import __version__

__all__ = [
    "ENV_DIRECTORY",
    "ENV_OFF",
    "MAX_BYTES",
    "add_argument",
    "compilation_cache",
    "from_arguments",
    "jaxbai_key",
    "machine_key",
    "remembered",
    "source_key",
]

ENV_DIRECTORY = "JAXBAI_CACHE_DIR"
"""Environment variable: the cache's base directory (default ``~/.cache/jaxbai/compiled``)."""
ENV_OFF = "JAXBAI_NO_CACHE"
"""Environment variable: any value but ``""`` or ``"0"`` turns the cache off."""
MAX_BYTES = 4 * 2**30
"""Size bound of the compiled programs of one ``<machine>/<jaxbai>`` directory; JAX evicts the
least recently used beyond it (and, bounded, takes a file lock for every read and write). The
theory values (``values/``, kilobytes) are not counted, and the directories of earlier jaxbai
versions or sources are not removed: delete the base directory to reclaim them all."""

_state: dict[str, Path | None] = {"directory": None, "base": None}


@functools.cache
def machine_key() -> str:
    """12 hex digits naming this machine's CPU: its architecture, model and feature flags (the
    first processor of ``/proc/cpuinfo`` on Linux, `platform` elsewhere)."""
    parts = [platform.system(), platform.machine(), platform.processor()]
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
            first = f.read().split("\n\n", 1)[0]
    except OSError:
        first = ""
    for line in first.splitlines():
        name, _, value = line.partition(":")
        if name.strip() in ("model name", "flags", "Features", "CPU implementer", "CPU part"):
            parts.append(f"{name.strip()}={value.strip()}")
    return hashlib.sha256("|".join(parts).encode()).hexdigest()[:12]


def source_key(root: Path, version: str) -> str:
    """``<version>-<12 hex digits>``: a version and a hash of every Python source file under
    ``root`` (relative path and contents).

        >>> import tempfile
        >>> with tempfile.TemporaryDirectory() as d:
        ...     _ = (Path(d) / "a.py").write_text("x = 1")
        ...     before = source_key(Path(d), "1.0")
        ...     _ = (Path(d) / "a.py").write_text("x = 2")
        ...     before != source_key(Path(d), "1.0") and before[:4] == "1.0-"
        True
    """
    digest = hashlib.sha256()
    for path in sorted(root.rglob("*.py")):
        digest.update(str(path.relative_to(root)).encode() + b"\0" + path.read_bytes())
    return f"{version}-{digest.hexdigest()[:12]}"


@functools.cache
def jaxbai_key() -> str:
    """`source_key` of this jaxbai: its version and source, so that an edited checkout or
    another release gets a directory of its own."""
    return source_key(Path(__file__).resolve().parent, __version__)


def _base(directory: str | os.PathLike[str] | None) -> Path:
    """The base directory: the argument, else ``JAXBAI_CACHE_DIR``, else a directory JAX was
    already given, else the per-user default."""
    given = jax.config.jax_compilation_cache_dir
    if _state["directory"] is not None and given == str(_state["directory"]):
        given = None  # set by an earlier call: its base was chosen then
    for chosen in (directory, os.environ.get(ENV_DIRECTORY), _state["base"], given):
        if chosen:
            return Path(chosen).expanduser()
    home = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(home) / "jaxbai" / "compiled"


def _private(levels: list[Path]) -> None:
    """Create the directories ``levels`` (a base and the levels under it), each 0700, checking
    each before anything is made inside it: a real directory (not a link) nobody else may write
    to. Raises OSError otherwise."""
    levels[0].parent.mkdir(parents=True, exist_ok=True)
    for level in levels:
        level.mkdir(mode=0o700, exist_ok=True)  # exist_ok: two processes may start at once
        info = level.lstat()
        if not stat.S_ISDIR(info.st_mode):
            raise PermissionError(f"{level} is not a directory")
        mine = not hasattr(os, "getuid") or info.st_uid == os.getuid()
        if info.st_mode & (stat.S_IWGRP | stat.S_IWOTH) or not mine:
            raise PermissionError(f"{level} is writable by others or not owned by this user")
    if not os.access(levels[-1], os.W_OK | os.X_OK):
        raise PermissionError(f"{levels[-1]} is not writable")


def _off() -> None:
    """No persistent cache in this process, whoever set it (jaxbai or JAX_COMPILATION_CACHE_DIR)."""
    if _state["directory"] is not None or jax.config.jax_compilation_cache_dir:
        jax.config.update("jax_compilation_cache_dir", None)
        _reset()
    _state["directory"] = None


def _reset() -> None:
    """Make JAX read its cache settings again (they are read once, at the first compilation)."""
    from jax.experimental.compilation_cache import compilation_cache as jax_cache

    jax_cache.reset_cache()


def compilation_cache(
    directory: str | os.PathLike[str] | None = None, *, enabled: bool = True
) -> Path | None:
    """Turn on JAX's persistent compilation cache for this process (see the module's text).

    Args:
      directory: the base directory; default ``JAXBAI_CACHE_DIR``, else the directory JAX was
        given (``JAX_COMPILATION_CACHE_DIR``), else ``~/.cache/jaxbai/compiled``. Programs go
        to ``<directory>/<machine_key()>/<jaxbai_key()>``.
      enabled: ``False`` turns it off (as does ``JAXBAI_NO_CACHE=1``, which wins over ``True``).

    Returns:
      The directory programs are written to and read from, or ``None`` when the cache is off
      (turned off, or a directory that cannot be made private: one line on stderr says why).
    """
    if not enabled or os.environ.get(ENV_OFF, "") not in ("", "0"):
        _off()
        return None
    try:
        base = _base(directory)
        levels = [base, base / machine_key(), base / machine_key() / jaxbai_key()]
        if _state["directory"] == levels[-1]:
            return levels[-1]
        _private(levels)
    except (OSError, RuntimeError) as err:  # RuntimeError: no home directory to default to
        print(f"jaxbai: compilation cache off ({err})", file=sys.stderr)
        _off()
        return None
    path = levels[-1]
    jax.config.update("jax_compilation_cache_dir", str(path))
    if jax.config.jax_compilation_cache_max_size == -1:  # JAX's default: unbounded, unlocked
        jax.config.update("jax_compilation_cache_max_size", MAX_BYTES)
    if "JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS" not in os.environ:
        # JAX's default (1 s) leaves out the many small programs of a run: a second process
        # then still spends about half its compile time on them (measured on `simulate`)
        jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.0)
    _reset()
    _state["directory"], _state["base"] = path, base
    return path


def add_argument(parser: argparse.ArgumentParser) -> None:
    """Add ``--no-cache`` to a command line (read back by `from_arguments`)."""
    parser.add_argument(
        "--no-cache",
        action="store_true",
        help=f"compile every program afresh, without jaxbai's compilation cache (as does "
        f"{ENV_OFF}=1; {ENV_DIRECTORY}=DIR moves the cache)",
    )


def from_arguments(args: argparse.Namespace) -> Path | None:
    """`compilation_cache` as a command line asked for it (on unless ``--no-cache``)."""
    return compilation_cache(enabled=not args.no_cache)


def remembered(name: str, function: Callable[..., object], *args: object) -> np.ndarray:
    """``np.asarray(function(*args))``, read from the cache directory when the cache is on and
    it holds the value, else computed (and written there). For pure functions of jaxbai and its
    experiments: the key is ``name``, the function's compiled code (its body, not what it
    calls: jaxbai's source is in the directory's key), the exact arguments (strings, numbers and
    None by value, anything else as a NumPy array: dtype, shape and bytes), JAX's version,
    backend and x64 mode. A file that cannot be read is computed again; one that cannot be
    written is left out.

    Examples:
        >>> remembered("double", lambda x: 2 * x, np.arange(3)).tolist()
        [0, 2, 4]
    """
    directory = _state["directory"]
    if directory is None:
        return np.asarray(function(*args))
    digest = hashlib.sha256(name.encode())
    code = getattr(function, "__code__", None)
    digest.update(marshal.dumps(code) if code is not None else repr(function).encode())
    settings = (jax.__version__, jax.default_backend(), jax.config.jax_enable_x64)
    digest.update(repr(settings).encode())
    for arg in args:
        if arg is None or isinstance(arg, (str, bool, int, float)):
            digest.update(f"|{type(arg).__name__}:{arg!r}".encode())
        else:
            array = np.ascontiguousarray(arg)
            digest.update(f"|{array.dtype.str}{array.shape}|".encode() + array.tobytes())
    path = directory / "values" / f"{name}-{digest.hexdigest()[:32]}.npy"
    try:
        return np.load(path, allow_pickle=False)
    except Exception:  # missing, damaged or truncated: computed again
        pass
    value = np.asarray(function(*args))
    temp = None
    try:
        path.parent.mkdir(mode=0o700, exist_ok=True)
        handle, temp = tempfile.mkstemp(dir=path.parent, suffix=".tmp")
        with os.fdopen(handle, "wb") as f:
            np.save(f, value, allow_pickle=False)
        os.replace(temp, path)  # whole or not at all, for a concurrent reader
    except OSError:
        if temp is not None:
            with contextlib.suppress(OSError):
                os.unlink(temp)
    return value
