"""Command-line options that run a sweep over several processes with `jax.distributed`.

Every process runs the same command. ``--distributed`` alone initialises JAX's multi-controller
runtime from the environment where ``jax.distributed.initialize()`` can (Slurm, Open MPI,
Cloud TPU); ``--coordinator HOST:PORT --num-processes N --process-id I`` set it explicitly.
`jaxbai.engine.run_grid` then splits each grid over the processes by predicted cost, every
process runs its share on its own devices and writes its own checkpoint shard, and every
process ends with the whole grid; only process 0 writes the outputs (`is_writer`).

The processes must all join within ``--startup-timeout`` seconds. If a process dies, JAX's
coordination service notices its missing heartbeats within ``--heartbeat-timeout`` seconds and
ends the others; rerun every process with ``--resume`` to finish from the shards, with
identical results. JAX ends a process in both cases with a fatal C++ error (a long trace), so
the command line runs its work in a child process (`supervise`) and reports such an end in one
line naming the dead or missing process and the command to rerun, with exit status 2. Each
process uses the CPU cores of its affinity mask (`jaxbai.use_cpu_cores`): several processes on
one machine need disjoint ones (Slurm's ``--cpus-per-task``, ``taskset``) or
``JAX_NUM_CPU_DEVICES``.

Examples:
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
import os
import re
import shlex
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Sequence
from typing import IO, Any

import numpy as np

__all__ = [
    "MAX_TIMEOUT",
    "WORKER",
    "add_arguments",
    "diagnose",
    "environment",
    "initialize",
    "initialize_options",
    "is_writer",
    "needs_supervisor",
    "resume_command",
    "supervise",
]

MAX_TIMEOUT = 86_400
"""Largest ``--heartbeat-timeout`` and ``--startup-timeout``, in seconds (a day)."""

WORKER = "JAXBAI_SUPERVISOR_PID"
"""Environment variable that marks a `supervise` child: the supervising process's id."""


def _seconds(text: str) -> int:
    """A timeout flag's value: whole seconds in [1, `MAX_TIMEOUT`]."""
    try:
        value = int(text)
    except ValueError:
        value = None
    if value is None or not 1 <= value <= MAX_TIMEOUT:
        raise argparse.ArgumentTypeError(
            f"must be a whole number of seconds in [1, {MAX_TIMEOUT}], got {text!r}"
        )
    return value


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Add ``--distributed``, ``--coordinator``, ``--num-processes``, ``--process-id``,
    ``--startup-timeout`` and ``--heartbeat-timeout`` to a command line."""
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
        "--startup-timeout",
        type=_seconds,
        default=120,
        metavar="S",
        help="seconds to wait for every process to join (default 120)",
    )
    add(
        "--heartbeat-timeout",
        type=_seconds,
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
    options["initialization_timeout"] = args.startup_timeout
    options["heartbeat_timeout_seconds"] = args.heartbeat_timeout
    return options


def initialize(args: argparse.Namespace) -> None:
    """Start `jax.distributed` if the options ask for it (before any JAX computation).

    Says on stderr how long it waits for the other processes (unless ``args.quiet``). In a
    `supervise` child, a thread ends the process when its supervisor is gone, so that the
    other processes see it die.

    Raises:
        ValueError: invalid options (see `initialize_options`).
    """
    options = initialize_options(args)
    if options is None:
        return
    import jax

    if WORKER in os.environ:
        threading.Thread(target=_exit_with, args=(int(os.environ[WORKER]),), daemon=True).start()
    if not getattr(args, "quiet", False):
        print(f"waiting up to {args.startup_timeout} s for every process to join", file=sys.stderr)
    jax.distributed.initialize(**options)


def _exit_with(parent: int) -> None:
    """End this process as soon as ``parent`` is no longer its parent."""
    while os.getppid() == parent:
        time.sleep(0.2)
    os._exit(1)


def is_writer() -> bool:
    """Whether this process writes the sweep's outputs (process 0, or the only one)."""
    import jax

    return jax.process_index() == 0


def claim(claim_out: Callable[[], None]) -> None:
    """Runs ``claim_out`` (`experiments.sweep.outputs.claim_out`) on the writer, and holds
    every other process until it is done: with ``--overwrite`` it clears the checkpoints, which
    the others would otherwise be writing their shards into. If it refuses, the others fail
    too.

    Raises:
        ValueError: the writer's refusal (on the writer), or that the writer refused (others).
    """
    import jax

    if jax.process_count() == 1:
        claim_out()
        return
    from jax.experimental import multihost_utils

    refusal = None
    if is_writer():
        try:
            claim_out()
        except ValueError as err:
            refusal = err
    refused = multihost_utils.broadcast_one_to_all(np.int32(refusal is not None))
    if refusal is not None:
        raise refusal
    if int(refused):
        raise ValueError("process 0 refused the output directory; its message says why")


def environment() -> dict[str, Any]:
    """Process count and every process's devices (for ``sweep.json``)."""
    import jax

    devices: dict[str, list[str]] = {}
    for d in jax.devices():
        devices.setdefault(str(d.process_index), []).append(str(d))
    return {"process_count": jax.process_count(), "devices_by_process": devices}


# ----------------------------------------------------------------------------- supervision
_HOLD = re.compile(
    rb"[WEF]\d{4} \d\d:\d\d:\d\d\.\d+ +\d+ [\w.]+:\d+\] "  # JAX's C++ log: warning, error
    rb"|Traceback \(most recent call last\):|terminate called after"
    rb"|(?<![^\r\n])[^\r\n]*error: (?:UNKNOWN|UNAVAILABLE|INTERNAL|ABORTED|DEADLINE_EXCEEDED): "
)
"""Where the child's stderr stops passing through: what follows may be a fatal trace (a lost
process is preceded by warnings and errors of JAX's C++ log, or ends a collective it was in:
"error: UNKNOWN: Gloo AllGather failed")."""


def _forward(stream: IO[bytes], out: IO[bytes]) -> bytes:
    """Copy ``stream`` to ``out`` until `_HOLD` matches; returns what was held from there on.

    Text passes in whole segments (ended by a newline or a carriage return, as progress lines
    are), so that a marker is never split.
    """
    pending, held = b"", None
    for chunk in iter(lambda: stream.read1(65536), b""):
        if held is not None:
            held += chunk
            continue
        pending += chunk
        end = max(pending.rfind(b"\n"), pending.rfind(b"\r")) + 1
        match = _HOLD.search(pending, 0, end)
        if match:
            out.write(pending[: match.start()])
            held = pending[match.start() :]
        else:
            out.write(pending[:end])
            pending = pending[end:]
        out.flush()
    if held is None:
        match = _HOLD.search(pending)
        out.write(pending[: match.start()] if match else pending)
        held = pending[match.start() :] if match else b""
    out.flush()
    return held


def _processes(numbers: Sequence[int]) -> str:
    """``[1]`` → ``"process 1"``, ``[1, 3]`` → ``"processes 1, 3"``."""
    return ("process " if len(numbers) == 1 else "processes ") + ", ".join(map(str, numbers))


_PEER_GONE = r"Connection (?:closed|reset) by peer|Socket closed"
"""How a Gloo collective reports that the process at the other end of a socket is gone."""


def diagnose(text: str, args: argparse.Namespace) -> tuple[str, bool] | None:
    """(what happened, whether to resume) from the stderr that ended a jax.distributed
    process, or None if it is not the end of a process that lost or never found its peers.

    Examples:
        >>> args = argparse.Namespace(process_id=0, num_processes=2, startup_timeout=30,
        ...                           heartbeat_timeout=60)
        >>> diagnose("UNAVAILABLE: The following tasks are unhealthy (stopped sending "
        ...          "heartbeats):\\n1\\nThe tasks have crashed.", args)
        ('process 1 stopped sending heartbeats for 60 s (it died or is unreachable)', True)
        >>> diagnose("DEADLINE_EXCEEDED: Deadline Exceeded RPC: .../RegisterTask", args)
        ('process 1 did not join within 30 s (--startup-timeout)', False)
        >>> diagnose("UNKNOWN: Gloo AllGather failed: [pair.cc:547] Connection closed by peer "
        ...          "[127.0.0.1]:58281", args)[0]
        'process 1 closed its connection inside a collective (it died or is unreachable)'
    """
    if "stopped sending heartbeats" in text:
        listed = text.split("stopped sending heartbeats", 1)[1].split("The tasks", 1)[0]
        numbers = re.findall(r"task:(\d+)", listed) or re.findall(r"^\s*(\d+)\s*$", listed, re.M)
        dead = _processes(sorted({int(n) for n in numbers})) if numbers else "a process"
        return (
            f"{dead} stopped sending heartbeats for {args.heartbeat_timeout} s (it died or is "
            "unreachable)",
            True,
        )
    if "Failed to send RPC to coordination service" in text:
        return "process 0 (the coordinator) died or is unreachable", True
    others = [p for p in range(args.num_processes or 0) if p != args.process_id]
    if re.search(r"Gloo [\w-]+ failed", text) and re.search(_PEER_GONE, text):
        peer = _processes(others) if len(others) == 1 else "another process"
        return f"{peer} closed its connection inside a collective (it died or is unreachable)", True
    if "RegisterTask" in text and "DEADLINE_EXCEEDED" in text:
        missing = _processes(others) if others else "some process"
        some = "" if len(others) < 2 else "one or more of "
        return (
            f"{some}{missing} did not join within {args.startup_timeout} s (--startup-timeout)",
            False,
        )
    return None


def needs_supervisor(args: argparse.Namespace) -> bool:
    """Whether the options ask for several processes and this is not a `supervise` child.

    Raises:
        ValueError: invalid options (see `initialize_options`).
    """
    return initialize_options(args) is not None and WORKER not in os.environ


def resume_command(module: str, argv: Sequence[str]) -> str:
    """The command that resumes ``python -m module *argv``: the same arguments, without
    ``--overwrite`` (resuming replaces nothing), with ``--resume``; quoted for a shell.

    Examples:
        >>> resume_command("experiments.sweep", ["--runs", "5", "--overwrite", "--out", "a b"])
        "python -m experiments.sweep --runs 5 --out 'a b' --resume"
    """
    kept = [word for word in argv if word != "--overwrite"]
    rerun = kept if "--resume" in kept else [*kept, "--resume"]
    return shlex.join(["python", "-m", module, *rerun])


def supervise(module: str, argv: Sequence[str], args: argparse.Namespace) -> int:
    """Run ``python -m module *argv`` in a child process and report how it ended.

    The child's stdout and stderr pass through, except from the first warning or error of
    JAX's C++ log or Python traceback on, which is held: if the child ends because a process died
    or never joined (`diagnose`), one line on stderr names it and the command to rerun, and
    the exit status is 2; otherwise the held text follows unchanged, with the child's status.
    SIGTERM is passed on to the child and SIGINT left to it (a terminal sends it to both); the
    child ends when this process does.
    """
    env = os.environ | {WORKER: str(os.getpid())}
    child = subprocess.Popen([sys.executable, "-m", module, *argv], env=env, stderr=subprocess.PIPE)
    handlers = {
        signal.SIGTERM: signal.signal(signal.SIGTERM, lambda *_: child.terminate()),
        signal.SIGINT: signal.signal(signal.SIGINT, signal.SIG_IGN),
    }
    try:
        held = _forward(child.stderr, sys.stderr.buffer)
        code = child.wait()
    finally:
        for number, handler in handlers.items():
            signal.signal(number, handler)
    found = diagnose(held.decode(errors="replace"), args) if code != 0 else None
    if found is None:
        sys.stderr.buffer.write(held)
        return code if code >= 0 else 128 - code
    what, resume = found
    where = "this process" if args.process_id is None else f"process {args.process_id}"
    todo = "start every process with the same --coordinator and --num-processes"
    if resume:
        todo = f"rerun every process with --resume, here: {resume_command(module, argv)}"
    print(f"python -m {module}: error: {where}: {what}; {todo}", file=sys.stderr)
    return 2
