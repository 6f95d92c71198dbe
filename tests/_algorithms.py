"""Lists of registered algorithms for parametrised tests, read from the registry
(`jaxbai.ALGORITHMS`) and its capability flags, never written by hand."""

from __future__ import annotations

import jaxbai

__all__ = ["EPISODIC"]

EPISODIC = tuple(name for name, entry in jaxbai.ALGORITHMS.items() if entry.episodic)
"""Every registered `jaxbai.base.Episodic` algorithm (per-arm and global episodes, the
paper's and the published variants)."""
