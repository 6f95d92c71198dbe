"""Optional dependencies, imported where they are used, with the extra that installs them.

Nothing under `jaxbai` or `experiments` imports an optional package at the top of a module
(`tests/test_imports.py` checks it with those packages made unimportable). Code that needs one
calls `require` where it is used; a module made only of code for an optional package (the numba
loops of `experiments.bench`) calls it at the top, and its doctests are then skipped at
collection with the message of `MissingExtra`, which names the extra.

Examples:
    >>> from jaxbai.extras import MissingExtra, require
    >>> require("math", extra="bench").sqrt(4.0)
    2.0
    >>> try:
    ...     require("no_such_package_here", extra="bench")
    ... except MissingExtra as missing:
    ...     print(missing.extra, missing.package)
    bench no_such_package_here
"""

from __future__ import annotations

import importlib
import types

__all__ = ["MissingExtra", "require"]


class MissingExtra(ImportError):
    """An optional package is not installed; ``extra`` names the extra of jaxbai that installs
    it (``pip install -e ".[extra]"`` from a checkout)."""

    def __init__(self, package: str, extra: str, purpose: str) -> None:
        self.package = package
        self.extra = extra
        super().__init__(
            f"{purpose} needs {package}, which the {extra!r} extra installs: "
            f'pip install -e ".[{extra}]" in a checkout (pip install "jaxbai[{extra}]" otherwise)',
            name=package,
        )


def require(package: str, extra: str, purpose: str = "this") -> types.ModuleType:
    """Import the optional ``package`` (a dotted module name), or raise `MissingExtra` naming
    ``extra``, the extra of jaxbai that installs it, and ``purpose``, what needs it."""
    try:
        return importlib.import_module(package)
    except ImportError as err:
        raise MissingExtra(package.partition(".")[0], extra, purpose) from err
