"""``XLA_FLAGS`` for the interpreters the tests start."""

from __future__ import annotations

import os

__all__ = ["xla_flags"]


def xla_flags(device_count: int | None = None) -> str:
    """This run's ``XLA_FLAGS`` (the suite's compiler options, `conftest.py`) without any CPU
    device count, plus ``device_count`` forced host devices when given."""
    kept = [f for f in os.environ.get("XLA_FLAGS", "").split() if "device_count" not in f]
    if device_count is not None:
        kept.append(f"--xla_force_host_platform_device_count={device_count}")
    return " ".join(kept)
