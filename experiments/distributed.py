"""Command-line options that run a sweep over several processes with `jax.distributed`.

Every process runs the same command. ``--distributed`` alone initialises JAX's multi-controller
runtime from the environment where ``jax.distributed.initialize()`` can (Slurm, Open MPI,
Cloud TPU); ``--coordinator HOST:PORT --num-processes N --process-id I`` set it explicitly.
`jaxbai.engine.run_grid` then splits each grid over the processes by predicted cost, every
process runs its share on its own devices and writes its own checkpoint shard, and every
process ends with the whole grid; only process 0 writes the outputs (`is_writer`).

If a process dies, JAX's coordination service notices its missing heartbeats within
``--heartbeat-timeout`` seconds and terminates the others with an error that names it; rerun
every process with ``--resume`` to finish from the shards, with identical results. Each
process uses the CPU cores of its affinity mask (`jaxbai.use_cpu_cores`): several processes on
one machine need disjoint ones (Slurm's ``--cpus-per-task``, ``taskset``) or
``JAX_NUM_CPU_DEVICES``.

Example:
    >>> import argparse
    >>> parser = argparse.ArgumentParser()
    >>> add_arguments(parser)
    >>> args = parser.parse_args(["--coordinator", "node1:8476", "--num-processes", "2",
    ...                           "--process-id", "1"])
    >>> options = initialize_options(args)
    >>> options["coordinator_address"], options["num_processes"], options["process_id"]
    ('node1:8476', 2, 1)
"""

from __future__ import annotations

import argparse
from typing import Any

__all__ = ["add_arguments", "environment", "initialize", "initialize_options", "is_writer"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Add ``--distributed``, ``--coordinator``, ``--num-processes``, ``--process-id`` and
    ``--heartbeat-timeout`` to a command line."""
    group = parser.add_argument_group("several processes (jax.distributed)")
    add = group.add_argument
    add(
        "--distributed",
        action="store_true",
        help="run over the processes of a jax.distributed job (settings from the environment "
        "on Slurm, Open MPI, TPU, or from the three options below)",
    )
    add("--coordinator", metavar="HOST:PORT", help="address of process 0 (implies --distributed)")
    add("--num-processes", type=int, metavar="N", help="number of processes")
    add("--process-id", type=int, metavar="I", help="this process, 0 … N − 1")
    add(
        "--heartbeat-timeout",
        type=int,
        default=60,
        metavar="S",
        help="seconds without heartbeat after which a process counts as dead (default 60)",
    )


def initialize_options(args: argparse.Namespace) -> dict[str, Any] | None:
    """The keyword arguments of ``jax.distributed.initialize`` (None: a single process).

    Raises:
        ValueError: an incomplete or inconsistent set of options.
    """
    explicit = (args.coordinator, args.num_processes, args.process_id)
    if not args.distributed and all(v is None for v in explicit):
        return None
    if any(v is None for v in explicit) and any(v is not None for v in explicit):
        raise ValueError(
            "--coordinator, --num-processes and --process-id go together (or give none of "
            "them with --distributed to read them from the environment)"
        )
    if args.heartbeat_timeout < 1:
        raise ValueError(f"--heartbeat-timeout must be ≥ 1, got {args.heartbeat_timeout}")
    options: dict[str, Any] = {}
    if args.coordinator is not None:
        host, _, port = args.coordinator.rpartition(":")
        if not host or not port.isdigit():
            raise ValueError(f"--coordinator must be HOST:PORT, got {args.coordinator!r}")
        if args.num_processes < 1 or not 0 <= args.process_id < args.num_processes:
            raise ValueError(
                f"need --num-processes ≥ 1 and 0 ≤ --process-id < --num-processes, got "
                f"{args.num_processes} and {args.process_id}"
            )
        options.update(
            coordinator_address=args.coordinator,
            num_processes=args.num_processes,
            process_id=args.process_id,
        )
    options["heartbeat_timeout_seconds"] = args.heartbeat_timeout
    return options


def initialize(args: argparse.Namespace) -> None:
    """Start `jax.distributed` if the options ask for it (before any JAX computation).

    Raises:
        ValueError: invalid options (see `initialize_options`).
    """
    options = initialize_options(args)
    if options is None:
        return
    import jax

    jax.distributed.initialize(**options)


def is_writer() -> bool:
    """Whether this process writes the sweep's outputs (process 0, or the only one)."""
    import jax

    return jax.process_index() == 0


def environment() -> dict[str, Any]:
    """Process count and every process's devices (for ``sweep.json``)."""
    import jax

    devices: dict[str, list[str]] = {}
    for d in jax.devices():
        devices.setdefault(str(d.process_index), []).append(str(d))
    return {"process_count": jax.process_count(), "devices_by_process": devices}
