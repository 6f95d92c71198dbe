"""Experiment files: reading a TOML file or a ``sweep.json``, and locating errors in them.

`loads` and `load` parse and validate a file (`experiments.config.validation.parse`); a
`ConfigError` is located at the line of its key (`locate`: `tomllib` gives none for values,
`experiments.config.lines` finds it). `load_sidecar` reads back the configuration a sweep
recorded next to its run CSV.

Examples:
    >>> try:
    ...     loads('instances = ["mu1"]\\nalgorithms = ["ttucb"]\\nseed = -1', source="g.toml")
    ... except ConfigError as err:
    ...     print(err)
    g.toml:3: seed: must be an integer in [0, 4294967295], got -1
"""

from __future__ import annotations

import json
import os
import sys

from experiments.config import lines
from experiments.config.errors import ConfigError
from experiments.config.schema import SweepConfig
from experiments.config.validation import parse
from jaxbai import plugins as jaxbai_plugins

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

__all__ = ["load", "load_sidecar", "loads", "locate", "tomllib"]


def locate(err: ConfigError, source: str, text: str | None = None) -> ConfigError:
    """``err`` located in the TOML file ``source`` (its text read if not given)."""
    if text is None:
        text = _read(source)
    return err.located(source, lines.line_of(text, err.path))


def loads(text: str, name: str = "config", source: str = "<string>") -> SweepConfig:
    """The validated configuration of a TOML text; errors are located in ``source``.

    Raises:
        ConfigError: invalid TOML (with tomllib's line and column) or an invalid value.
    """
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as err:
        raise ConfigError((), f"invalid TOML: {err}", source) from None
    try:
        return parse(data, name)
    except ConfigError as err:
        raise locate(err, source, text) from None


def _read(path: str) -> str:
    try:
        with open(path, encoding="utf-8") as f:
            return f.read()
    except OSError as err:
        raise ConfigError((), f"cannot read the experiment file: {err.strerror}", path) from None
    except UnicodeDecodeError as err:
        line = err.object[: err.start].count(b"\n") + 1
        message = f"not UTF-8 text (byte {err.object[err.start]:#04x}): save the file as UTF-8"
        raise ConfigError((), message, path, line) from None


def load(path: str) -> SweepConfig:
    """The validated configuration of an experiment file.

    A ``.toml`` file is an experiment file; a ``.json`` file is a sweep's ``sweep.json``, whose
    ``config`` holds the resolved configuration of the run that wrote it. The name defaults to
    the file's stem.

    Raises:
        ConfigError: located in ``path``.
    """
    text = _read(path)
    stem = os.path.splitext(os.path.basename(path))[0]
    if not path.endswith(".json"):
        return loads(text, stem, path)
    try:
        data = json.loads(text)
    except json.JSONDecodeError as err:
        raise ConfigError((), f"invalid JSON: {err}", path) from None
    if not isinstance(data, dict) or not isinstance(data.get("config"), dict):
        raise ConfigError((), "a sweep.json holds the resolved configuration under 'config'", path)
    try:
        return parse(data["config"], stem)
    except ConfigError as err:
        raise ConfigError(("config", *err.path), err.message, path) from None


def load_sidecar(csv_path: str) -> SweepConfig | None:
    """The configuration recorded in the ``sweep.json`` next to a run CSV, if it has one.

        It is read without checking algorithms against the registry (a result can outlive an
        algorithm registered in another session), and it imports nothing: a results folder is data.
        Plugins it names that the command line did not load (``--plugin``) are said in one line on
        stderr; without them their algorithms get no allocation targets (and their registered
    display names and published-code styles). None if
        there is no readable one (e.g. written before experiment files existed).
    """
    path = os.path.join(os.path.dirname(os.path.abspath(csv_path)), "sweep.json")
    try:
        with open(path, encoding="utf-8") as f:
            config = parse(json.load(f)["config"], check=False)
    except (OSError, ValueError, KeyError, TypeError):
        return None
    missing = jaxbai_plugins.not_loaded(config.plugins)
    if missing:
        options = " ".join(f"--plugin {m}" for m in missing)
        print(
            f"note: {path} names plugin modules {', '.join(missing)}; a results folder runs "
            f"no code, so they were not imported (pass {options} for their names and targets)",
            file=sys.stderr,
        )
    return config
