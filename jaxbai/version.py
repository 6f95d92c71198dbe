"""The installed distribution's version (`jaxbai.__version__`), read from its metadata.

A checkout imported without being installed (``PYTHONPATH=.``) has no metadata: its version is
``"0+unknown"`` rather than a number it is not.

Examples:
    >>> import importlib.metadata
    >>> version() == importlib.metadata.version("jaxbai")
    True
"""

from __future__ import annotations

import importlib.metadata

__all__ = ["__version__", "version"]


def version() -> str:
    """The version of the installed ``jaxbai`` distribution (``pyproject.toml``)."""
    try:
        return importlib.metadata.version("jaxbai")
    except importlib.metadata.PackageNotFoundError:
        return "0+unknown"


__version__ = version()
"""The installed version, `jaxbai.__version__`."""
