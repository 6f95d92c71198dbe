"""The error of a configuration: `ConfigError`, a problem at a key path, located in a file.

Every check of an experiment file, its instances and algorithms raises it; `format_key` writes
the key path as it is written in error messages.

Examples:
    >>> err = ConfigError(("algorithms", 1, "beta"), "must be > 0, got -1")
    >>> print(err.located("my.toml", 4))
    my.toml:4: algorithms[1].beta: must be > 0, got -1
"""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["ConfigError", "format_key"]


def format_key(path: Sequence[str | int]) -> str:
    """``("algorithms", 1, "beta")`` → ``"algorithms[1].beta"``."""
    text = ""
    for part in path:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text


class ConfigError(ValueError):
    """A configuration problem at a key path, optionally located in a file.

    ``str()`` is ``"file:line: key: message"`` (file and line when known).

    Attributes:
        path: the key path, e.g. ``("algorithms", 1, "beta")`` (``()``: the whole file).
        message: what is wrong and the valid range.
        source: the file (or ``"command line"``), if known.
        line: the line of the key in ``source``, if known.
    """

    def __init__(
        self,
        path: Sequence[str | int],
        message: str,
        source: str | None = None,
        line: int | None = None,
    ) -> None:
        self.path, self.message, self.source, self.line = tuple(path), message, source, line
        where = f"{source}:{line}: " if line else (f"{source}: " if source else "")
        key = f"{format_key(self.path)}: " if self.path else ""
        super().__init__(f"{where}{key}{message}")

    def located(self, source: str, line: int | None = None) -> ConfigError:
        """The same error, located in ``source`` (at ``line``)."""
        return ConfigError(self.path, self.message, source, line)
