"""Lists of registered algorithms for parametrised tests, read from the registry
(`jaxbai.ALGORITHMS`) and its capability flags, never written by hand."""

from __future__ import annotations

import jaxbai

__all__ = ["ALL", "EPISODIC", "GLOBAL_DP", "LOCAL_DP", "PRIVATE", "WITH_THRESHOLD", "taking"]

ALL = tuple(jaxbai.ALGORITHMS)
"""Every registered algorithm."""

PRIVATE = tuple(name for name, entry in jaxbai.ALGORITHMS.items() if entry.info().takes_epsilon)
"""Every registered algorithm that takes ε (local or global DP)."""

LOCAL_DP = tuple(
    name for name, entry in jaxbai.ALGORITHMS.items() if entry.info().privacy == "local"
)
"""Every registered local-DP algorithm (participants privatise their rewards)."""

GLOBAL_DP = tuple(
    name for name, entry in jaxbai.ALGORITHMS.items() if entry.info().privacy == "global"
)
"""Every registered global-DP algorithm (the curator sees raw rewards)."""

WITH_THRESHOLD = tuple(name for name, entry in jaxbai.ALGORITHMS.items() if entry.thresholds)
"""Every registered algorithm whose factory takes a ``threshold`` family."""

EPISODIC = tuple(name for name, entry in jaxbai.ALGORITHMS.items() if entry.episodic)
"""Every registered `jaxbai.base.Episodic` algorithm (per-arm and global episodes, the
paper's and the published variants)."""


def taking(option: str) -> tuple[str, ...]:
    """Every registered algorithm whose factory takes the keyword ``option``."""
    return tuple(name for name, entry in jaxbai.ALGORITHMS.items() if option in entry.options)
