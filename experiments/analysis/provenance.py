"""Where a sweep's results came from: the commit, the package versions and the JAX devices
(recorded in ``sweep.json`` by `experiments.sweep.outputs`)."""

from __future__ import annotations

import os
import platform
import subprocess
from collections.abc import Sequence
from importlib import metadata
from typing import Any

__all__ = ["git_commit", "jax_environment", "package_versions"]


def git_commit(directory: str = ".") -> str:
    """HEAD commit of the repository holding ``directory`` (``+dirty`` if modified)."""
    try:
        run = subprocess.run
        head = run(["git", "rev-parse", "HEAD"], cwd=directory, capture_output=True, text=True)
        dirty = run(["git", "status", "--porcelain"], cwd=directory, capture_output=True, text=True)
    except OSError:
        return "unknown"
    if head.returncode:
        return "unknown"
    return head.stdout.strip() + ("+dirty" if dirty.stdout.strip() else "")


def package_versions(names: Sequence[str] = ("jaxbai", "jax", "jaxlib", "numpy", "matplotlib")):
    """Installed versions of ``names`` (``None`` if absent), plus Python's."""
    versions: dict[str, str | None] = {"python": platform.python_version()}
    for name in names:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = None
    return versions


def jax_environment() -> dict[str, Any]:
    """JAX backend and devices, and the host it runs on."""
    import jax

    return {
        "backend": jax.default_backend(),
        "devices": [str(d) for d in jax.devices()],
        "device_kinds": sorted({d.device_kind for d in jax.devices()}),
        "host": {"machine": platform.machine(), "cpus": os.cpu_count()},
        "xla_flags": os.environ.get("XLA_FLAGS", ""),
    }
