"""Every CPU core as a JAX device, by default.

XLA fixes the number of CPU devices when JAX starts its backend (the first computation), and
by default it creates one: a grid then runs on one core of however many the machine has. The
engine shards jobs over devices (`jaxbai.engine`), so a library user gets every core only if
the count is set before that first computation. Hence:

* ``import jaxbai`` sets JAX's ``jax_num_cpu_devices`` to the cores this process may use
  (`available_cores`), unless the backend has already started or the user chose a count
  (``XLA_FLAGS=--xla_force_host_platform_device_count=N``, ``JAX_NUM_CPU_DEVICES=N`` or
  ``jax.config.update("jax_num_cpu_devices", N)``), which always wins.
* `use_cpu_cores` does the same on request, with any count, before the first computation.
* A grid that runs on one CPU device of a multi-core machine anyway (JAX was started before
  jaxbai was imported) says once, on stderr, how to use the rest (`warn_if_one_core`).

Example::

    import jaxbai

    jaxbai.use_cpu_cores(4)  # first thing after the import: four CPU devices
    jaxbai.simulate(jaxbai.ttucb(), jaxbai.bernoulli([0.9, 0.5]), runs=1000)  # on 4 cores

    >>> available_cores() >= 1
    True
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence

import jax

__all__ = ["available_cores", "set_default_cores", "use_cpu_cores", "warn_if_one_core"]

_FLAG = "xla_force_host_platform_device_count"
_ENV = "JAX_NUM_CPU_DEVICES"
_state = {"set_by_jaxbai": False, "warned": False}


def available_cores() -> int:
    """The CPU cores this process may run on (its affinity mask, e.g. a Slurm allocation)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # macOS, Windows
        return max(1, os.cpu_count() or 1)


def _chosen_by_user() -> bool:
    """Did the user fix the CPU device count (XLA flag, environment or JAX config)?"""
    configured = jax.config.jax_num_cpu_devices >= 0 and not _state["set_by_jaxbai"]
    return _FLAG in os.environ.get("XLA_FLAGS", "") or _ENV in os.environ or configured


def set_default_cores() -> None:
    """At import: every available core, unless the user chose a count or JAX has started."""
    if _chosen_by_user():
        return
    try:
        jax.config.update("jax_num_cpu_devices", available_cores())
    except RuntimeError:  # the backend has started: the count is fixed (see warn_if_one_core)
        return
    _state["set_by_jaxbai"] = True


def use_cpu_cores(n: int | None = None) -> int:
    """Expose ``n`` CPU cores (default: every available one) to JAX as ``n`` CPU devices.

    Call it before the first JAX computation; ``import jaxbai`` already does it with the
    default unless a count was chosen through ``XLA_FLAGS``, ``JAX_NUM_CPU_DEVICES`` or the
    JAX config. Returns the count.

    Raises:
        ValueError: ``n`` is not a positive integer.
        RuntimeError: JAX has already started with another count (restart Python and call this
            right after ``import jaxbai``).
    """
    if n is None:
        n = available_cores()
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ValueError(f"n must be a positive integer, got {n!r}")
    try:
        jax.config.update("jax_num_cpu_devices", n)
    except RuntimeError as err:
        started_with = len(jax.devices("cpu"))
        if started_with == n:
            return n
        raise RuntimeError(
            f"JAX has already started with {started_with} CPU devices; call "
            f"jaxbai.use_cpu_cores({n}) before the first JAX computation (restart Python)"
        ) from err
    _state["set_by_jaxbai"] = True
    return n


def warn_if_one_core(devices: Sequence[jax.Device]) -> None:
    """Say once, on stderr, that a grid runs on one CPU device of a multi-core machine.

    Silent when the user chose one device (XLA flag, environment, JAX config) or has one core.
    """
    cores = available_cores()
    if _state["warned"] or len(devices) != 1 or devices[0].platform != "cpu" or cores == 1:
        return
    if _chosen_by_user():
        return
    _state["warned"] = True
    print(
        f"jaxbai: this grid runs on 1 of {cores} CPU cores because JAX started before jaxbai "
        f"could set the device count. To use them all, call jaxbai.use_cpu_cores() right "
        f"after `import jaxbai` and before any JAX computation, or start Python with "
        f"JAX_NUM_CPU_DEVICES={cores}.",
        file=sys.stderr,
    )


set_default_cores()
