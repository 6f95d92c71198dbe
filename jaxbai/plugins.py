"""Plugins: modules that register algorithms (or instances) for every command line.

A plugin is an importable module whose import registers what it provides (`jaxbai.register`).
Every command line loads plugins before it reads its arguments, so a plugin's algorithms are
named, listed in ``--help`` and validated like jaxbai's own:

* ``--plugin MODULE`` (repeatable) on ``python -m experiments.sweep``, ``python -m jaxbai.trial``
  and the other commands (`add_argument`);
* installed packages that declare an entry point in the group `ENTRY_POINT_GROUP`
  (``[project.entry-points."jaxbai.algorithms"]``: ``name = "module"``, a plugin module),
  loaded by `load_installed`.

A file never imports code: an experiment file's ``plugins = ["MODULE", …]`` and a results
folder's ``sweep.json`` name the modules a configuration needs, and a command reading one
refuses (or, for plot and report, notes) any that the command line did not load
(`require_loaded`): a results folder someone sends you is data.

The registry remembers the plugin that registered an entry and the SHA-256 of the source of the
module defining its factory (`jaxbai.registry.AlgorithmEntry.plugin`, `plugin_source`,
`source_digest`). A trial records both, names the plugin when it is reopened without it
(`missing_algorithm`) and refuses a changed source or a replaced built-in (`jaxbai.trial`).

Examples:
    >>> import jaxbai, pathlib, sys, tempfile
    >>> folder = pathlib.Path(tempfile.mkdtemp())
    >>> _ = (folder / "my_lab_plugin.py").write_text(
    ...     "import dataclasses, jaxbai\\n"
    ...     "def tt_b03(**options):\\n"
    ...     "    return dataclasses.replace(jaxbai.ttucb(beta=0.3, **options), name='tt_b03')\\n"
    ...     "jaxbai.register('tt_b03', tt_b03)\\n")
    >>> sys.path.insert(0, str(folder))
    >>> load(["my_lab_plugin"])
    ('my_lab_plugin',)
    >>> jaxbai.ALGORITHMS["tt_b03"].plugin
    'my_lab_plugin'
    >>> jaxbai.unregister("tt_b03"); sys.path.remove(str(folder))
"""

from __future__ import annotations

import argparse
import contextlib
import contextvars
import hashlib
import importlib
import importlib.metadata
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path

__all__ = [
    "ENTRY_POINT_GROUP",
    "add_argument",
    "load",
    "load_from_argv",
    "load_installed",
    "loading",
    "missing_algorithm",
    "not_loaded",
    "require_loaded",
    "source_digest",
]

ENTRY_POINT_GROUP = "jaxbai.algorithms"
"""The entry-point group of installed packages that register algorithms."""

_LOADING: contextvars.ContextVar[str | None] = contextvars.ContextVar("plugin", default=None)


def loading() -> str | None:
    """The plugin being loaded now (what `jaxbai.register` records), else None."""
    return _LOADING.get()


@contextlib.contextmanager
def _as(name: str) -> Iterator[None]:
    token = _LOADING.set(name)
    try:
        yield
    finally:
        _LOADING.reset(token)


_LOADED: set[str] = set()
"""The plugin modules `load` has imported in this process."""


def load(modules: Sequence[str]) -> tuple[str, ...]:
    """Import each plugin module (once: a module already imported is not run again), recording
    it as the plugin of what it registers; returns the modules.

    Raises:
        ValueError: a name that is not an absolute module name, or a module that cannot be
            imported or raises while it is imported, with the reason.
    """
    for module in modules:
        if not isinstance(module, str) or not module.strip():
            raise ValueError(f"a plugin is a module name, got {module!r}")
        if module.startswith("."):
            raise ValueError(f"plugin {module!r}: a plugin is an absolute module name")
        try:
            with _as(module):
                importlib.import_module(module)
        except ImportError as err:
            raise ValueError(f"plugin {module!r} cannot be imported: {err}") from err
        except Exception as err:  # the plugin's own code failed: say so in one line
            raise ValueError(
                f"plugin {module!r} failed while being imported: {type(err).__name__}: {err}"
            ) from err
        _LOADED.add(module)
    return tuple(modules)


def not_loaded(modules: Sequence[str]) -> tuple[str, ...]:
    """The ``modules`` that `load` has not imported in this process (``--plugin`` or an
    installed entry point)."""
    return tuple(m for m in modules if m not in _LOADED)


def require_loaded(modules: Sequence[str]) -> None:
    """Refuse a configuration that names plugin modules the command line did not load.

    Raises:
        ValueError: naming them and the ``--plugin`` options that load them.
    """
    missing = not_loaded(modules)
    if missing:
        options = " ".join(f"--plugin {m}" for m in missing)
        raise ValueError(
            f"names plugin modules {', '.join(missing)}, which are not loaded: a configuration "
            f"file never imports code; pass {options} to import them (from Python: "
            "jaxbai.plugins.load)"
        )


def load_installed() -> tuple[str, ...]:
    """Load the plugin module of every entry point of `ENTRY_POINT_GROUP` of the installed
    packages (`load`: each is imported once); returns the modules.

    Raises:
        ValueError: an entry point that names more than a module, or one that cannot be
            imported, naming it and its package.
    """
    modules = []
    for point in importlib.metadata.entry_points(group=ENTRY_POINT_GROUP):
        where = point.dist.name if point.dist else "an installed package"
        if point.attr:
            raise ValueError(
                f"entry point {point.name} = {point.value!r} of {where}: a jaxbai plugin is a "
                f"module (write {point.module!r}), whose import registers its algorithms"
            )
        try:
            modules += load([point.module])
        except ValueError as err:
            raise ValueError(f"{err} (an entry point of {where})") from err
    return tuple(modules)


class _Load(argparse.Action):
    """``--plugin MODULE``: load the module as soon as the option is parsed."""

    def __call__(self, parser, namespace, value, option_string=None) -> None:
        try:
            load([value])
        except ValueError as err:
            parser.error(str(err))
        setattr(namespace, self.dest, [*getattr(namespace, self.dest), value])


def add_argument(parser: argparse.ArgumentParser) -> None:
    """Add ``--plugin MODULE`` (repeatable, each loaded as it is parsed) to a command's parser,
    and load the installed plugins (`load_installed`) now, so that what the parser lists (its
    choices, its help) includes theirs.

    Raises:
        SystemExit: status 2, an installed plugin that cannot be loaded (one line on stderr).
    """
    try:
        load_installed()
    except ValueError as err:
        parser.exit(2, f"error: {err}\n")
    parser.add_argument(
        "--plugin",
        action=_Load,
        default=[],
        metavar="MODULE",
        help="import MODULE first: a plugin that registers algorithms (repeatable)",
    )


def load_from_argv(argv: Sequence[str]) -> tuple[str, ...]:
    """Load the plugins named by ``--plugin`` in ``argv`` before a command builds a parser whose
    choices list the registered algorithms; returns the modules.

    Raises:
        ValueError: as `load`.
    """
    modules = []
    for i, arg in enumerate(argv):
        if arg == "--plugin" and i + 1 < len(argv):
            modules.append(argv[i + 1])
        elif arg.startswith("--plugin="):
            modules.append(arg.partition("=")[2])
    return load(modules)


def missing_algorithm(name: str, plugin: str | None) -> str:
    """The message for a stored algorithm that is not registered in this process."""
    if plugin is None:
        return f"algorithm {name!r} is not registered here: register it before opening"
    return (
        f"algorithm {name!r} comes from the plugin {plugin!r}, which is not loaded: "
        f"pass --plugin {plugin} (or import {plugin} first)"
    )


def source_digest(modules: Sequence[str]) -> str | None:
    """SHA-256 (hex) of the source of ``modules`` as imported in this process: each one's file,
    or for a package every ``.py`` file under its directory (with its path relative to it);
    None if none of them is imported with a source file.

    What a trial (`jaxbai.trial`) compares to tell that an algorithm's code changed. Files
    under hidden directories are left out; code the modules import from elsewhere is not
    covered.
    """
    digest, found = hashlib.sha256(), False
    for module in modules:
        path = getattr(sys.modules.get(module), "__file__", None)
        if path is None:
            continue
        path = Path(path)
        files = sorted(path.parent.rglob("*.py")) if path.name == "__init__.py" else [path]
        files = [
            f for f in files if not any(p.startswith(".") for p in f.relative_to(path.parent).parts)
        ]
        try:
            sources = [(f.relative_to(path.parent).as_posix(), f.read_bytes()) for f in files]
        except OSError:
            continue
        digest.update(f"{module}\0".encode())
        for name, source in sources:
            digest.update(f"{name}\0".encode() + hashlib.sha256(source).digest())
        found = True
    return digest.hexdigest() if found else None
