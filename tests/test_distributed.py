"""Grids over several processes (`jax.distributed`): split, shards, gather, failure, resume.

The processes are local (``localhost``), one CPU device each; the end-to-end test goes through
the sweep CLI, whose ``runs.csv`` holds every per-job result (τ, recommendation, censoring,
rounds, final counts), so equal files mean bitwise-equal grids.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import re
import socket
import subprocess
import sys
import threading
import time

import numpy as np
import pytest
from _flags import xla_flags

import jaxbai
from experiments.sweep import cli, distributed
from jaxbai import engine
from jaxbai.engine import _distributed
from jaxbai.engine._checkpoint import empty_results

NAMES = ("ttucb", "adap_tt_star", "dp_se")


def test_assign_is_balanced_by_cost_and_capacity():
    """Greedy longest-first: every process's load per device is within one job of the mean
    (the LPT guarantee), a process with twice the devices gets about twice the work, and a
    process without devices gets nothing."""
    rng = np.random.default_rng(0)
    cost = rng.lognormal(3.0, 2.0, size=500)
    for capacity in (np.array([1, 1, 1]), np.array([2, 1, 0])):
        owner = _distributed.assign(cost, capacity)
        load = np.bincount(owner, weights=cost, minlength=len(capacity))
        active = capacity > 0
        per_device = load[active] / capacity[active]
        assert np.all(per_device <= cost.sum() / capacity.sum() + cost.max())
        assert np.all(load[~active] == 0)
        np.testing.assert_array_equal(owner, _distributed.assign(cost, capacity))


def test_predicted_cost_by_trust_model():
    """Hand-computed: two arms, Δ = 0.4 (both gaps), δ = 0.1: 2 · w · log 10 with w = 1/Δ² =
    6.25 (none), 1/Δ² + 1/(εΔ) = 8.75 at ε = 1 (global), (1 + 2/(e^ε − 1))²/Δ² = 4 · 6.25 at
    ε = log 3 (local)."""
    eps = np.log(3.0)
    jobs = engine.grid_jobs(jaxbai.bernoulli([0.875, 0.475]), [1.0, eps], 0.1, 1)
    scale = 2 * np.log(10.0)
    np.testing.assert_allclose(engine.predicted_cost("none", jobs), [6.25 * scale] * 2, 1e-5)
    np.testing.assert_allclose(engine.predicted_cost("global", jobs)[0], 8.75 * scale, 1e-5)
    np.testing.assert_allclose(engine.predicted_cost("local", jobs)[1], 25.0 * scale, 1e-5)


def test_checkpoint_shards_are_pooled(tmp_path):
    """`read_checkpoint` pools a checkpoint and its per-process shards; temporary files and
    shards of another grid's name are ignored, a shard of another grid is refused."""
    path = str(tmp_path / "grid.npz")
    results = [engine.read_checkpoint(path, "f", 4, 3) for _ in range(2)]
    for process, job in ((0, 1), (1, 3)):
        r = results[process]
        r["done"][job], r["tau"][job], r["stopped"][job] = True, 100 + job, True
        engine.write_checkpoint(engine.shard_path(path, process), "f", r)
    with open(str(tmp_path / "grid.process2.npz.tmp"), "wb") as f:
        f.write(b"truncated")
    pooled = engine.read_checkpoint(path, "f", 4, 3)
    np.testing.assert_array_equal(pooled["done"], [False, True, False, True])
    np.testing.assert_array_equal(pooled["tau"], [0, 101, 0, 103])
    engine.write_checkpoint(engine.shard_path(path, 5), "seed=1", results[0])
    with pytest.raises(ValueError, match="different grid"):
        engine.read_checkpoint(path, "f", 4, 3)


def test_finished_jobs_skips_a_shard_of_another_size(tmp_path):
    """What a resume would restore: a shard of another number of jobs (which `read_checkpoint`
    refuses) neither joins the pool nor replaces it, whichever file comes first."""
    path = str(tmp_path / "grid.npz")
    four, six = empty_results(4, 3), empty_results(6, 3)
    four["done"][1] = six["done"][[0, 5]] = True
    engine.write_checkpoint(engine.shard_path(path, 0), "f", four)
    engine.write_checkpoint(engine.shard_path(path, 1), "f", six)
    assert engine.finished_jobs(path, 4).tolist() == [False, True, False, False]
    assert engine.finished_jobs(path, 6).tolist() == [True, False, False, False, False, True]
    assert engine.finished_jobs(path, 5) is None
    assert engine.finished_jobs(path).tolist() == [False, True, False, False]  # the first file
    with pytest.raises(ValueError, match=r"different grid \(6 jobs of 3 arms, not 4 of 3"):
        engine.read_checkpoint(path, "f", 4, 3)


GRID = (
    *("--preset", "quick", "--algorithms", *NAMES, "--instances", "mu1", "--epsilons", "0.2", "2"),
    *("--deltas", "0.1", "0.01", "--share-deltas", "--no-figures"),
)
"""Two δ on shared trajectories: TTUCB and AdaP-TT* split their trajectories over the processes,
DP-SE (whose sampling reads δ) its jobs. No figures: the grids are compared by their runs.csv,
and drawing was a third of each of the nine sweeps' time."""


class Sweep:
    """``python -m experiments.sweep`` in a subprocess, its stderr collected by a thread."""

    def __init__(self, out, env: dict, *options: str) -> None:
        args = (*GRID, "--runs", "6", "--seed", "3", "--chunk-steps", "4096", "--out", str(out))
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "experiments.sweep", *args, *options],
            cwd=os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        self.err = b""
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self) -> None:
        for chunk in iter(lambda: self.proc.stderr.read1(4096), b""):
            self.err += chunk

    def wait(self, timeout: float) -> int:
        try:
            return self.proc.wait(timeout)
        finally:
            self.proc.kill()
            self.reader.join(5)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("localhost", 0))
        return s.getsockname()[1]


def pair(out, env, *options: str) -> list[Sweep]:
    """The two processes of a local ``jax.distributed`` sweep (5 s heartbeat timeout)."""
    port = free_port()
    explicit = ("--coordinator", f"localhost:{port}", "--num-processes", "2")
    return [
        Sweep(out, env, *explicit, "--process-id", str(pid), "--heartbeat-timeout", "5", *options)
        for pid in (0, 1)
    ]


@pytest.fixture
def env() -> dict:
    """One CPU device per process; the suite's compilation cache (``JAXBAI_CACHE_DIR``,
    tests/conftest.py), which the sweep command line turns on, shared by the launches."""
    one_device = {"XLA_FLAGS": xla_flags(), "JAX_PLATFORMS": "cpu", "JAX_NUM_CPU_DEVICES": "1"}
    return os.environ | one_device


LOST = "process 1 (stopped sending heartbeats|closed its connection inside a collective)"
"""How process 0 names its killed peer. Which of JAX's two reports comes first is a race: the
coordination service's missed heartbeats, or a collective process 0 was in failing as the
peer's socket closes."""


@pytest.mark.integration
def test_two_processes_equal_one_and_resume_after_a_death(tmp_path, env):
    """A sweep of three grids (TTUCB, AdaP-TT*, DP-SE) on two processes: killing process 1
    in the middle of the second grid makes process 0 exit with one line naming it (`LOST`:
    JAX's coordination service misses its heartbeats for 5 s, or a collective process 0 is in
    fails as its socket closes) instead of hanging; rerunning both with
    ``--resume`` skips the grid finished before the kill (read from the checkpoint shards: no
    samples) and writes a ``runs.csv`` identical to a single-process sweep's. Both δ of a
    TTUCB or AdaP-TT* trajectory come from one process (shared trajectories, `GRID`).

    The single-process sweep runs first, alone, rather than beside the pair: three processes
    compiling at once on a machine's few cores took longer than one after the other. (It
    caches the theory's programs and values for the pair; their chunk programs are their own,
    each process's job table being about half the grid's.)"""
    single = Sweep(tmp_path / "one", env)
    assert single.wait(300) == 0, single.err.decode()[-3000:]
    processes = pair(tmp_path / "two", env)
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        err = processes[1].err
        if b"process 1/2: adap_tt_star: compiling" in err:  # the second grid has begun
            break
        assert processes[1].proc.poll() is None, err.decode()[-3000:]
        time.sleep(0.05)
    processes[1].proc.kill()
    killed = time.monotonic()
    code = processes[0].wait(120)
    assert code == cli.EXIT_USAGE, processes[0].err.decode()[-3000:]
    assert re.search(LOST, processes[0].err.splitlines()[-1].decode()), processes[0].err[-3000:]
    assert time.monotonic() - killed < 60, "the surviving process did not stop in time"
    processes[1].wait(10)
    assert not (tmp_path / "two" / "runs.csv").exists()
    checkpoints = tmp_path / "two" / "checkpoints"
    assert (checkpoints / "ttucb.process0.npz").exists()
    assert (checkpoints / "ttucb.process1.npz").exists()

    resumed = pair(tmp_path / "two", env, "--resume")
    for proc in resumed:
        assert proc.wait(300) == 0, proc.err.decode()[-3000:]
    one, two = (tmp_path / name / "runs.csv" for name in ("one", "two"))
    assert one.read_text() == two.read_text()
    sidecar = json.loads((tmp_path / "two" / "sweep.json").read_text())
    assert sidecar["processes"]["process_count"] == 2
    assert sorted(sidecar["processes"]["devices_by_process"]) == ["0", "1"]
    assert sidecar["engine"]["ttucb"]["samples"] == 0
    assert sidecar["engine"]["dp_se"]["samples"] > 0
    shared = {name: sidecar["engine"][name]["shared_deltas"] for name in NAMES}
    assert shared == {"ttucb": True, "adap_tt_star": True, "dp_se": False}

    refused = pair(tmp_path / "two", env)  # a used --out: both refuse, neither hangs
    for proc in refused:
        assert proc.wait(120) == cli.EXIT_USAGE
    assert b"holds an earlier sweep's results" in refused[0].err
    assert b"process 0 refused the output directory" in refused[1].err
    overwritten = pair(tmp_path / "two", env, "--overwrite")  # process 0 clears checkpoints
    for proc in overwritten:  # while process 1 waits for it, then both write shards
        assert proc.wait(300) == 0, proc.err.decode()[-3000:]
    assert one.read_text() == two.read_text()


# ----------------------------------------------------------------------------- failures
@pytest.mark.parametrize("flag", ["--heartbeat-timeout", "--startup-timeout"])
@pytest.mark.parametrize("value", ["0", "-5", "inf", "nan", "1.5", "86401"])
def test_timeouts_are_whole_positive_seconds(flag, value, capsys):
    """Checked on every command line, distributed or not, before anything runs."""
    with pytest.raises(SystemExit) as exit_:
        cli.main(["--algorithms", "ttucb", flag, value])
    assert exit_.value.code == cli.EXIT_USAGE
    err = capsys.readouterr().err.strip()
    assert err.endswith(f"{flag}: must be a whole number of seconds in [1, 86400], got {value!r}")
    assert "\n" not in err


def _args(process_id: int | None = 0, num_processes: int | None = 2) -> argparse.Namespace:
    return argparse.Namespace(
        process_id=process_id, num_processes=num_processes, startup_timeout=30, heartbeat_timeout=9
    )


HEARTBEATS = "UNAVAILABLE: The following tasks are unhealthy (stopped sending heartbeats):\n"


@pytest.mark.parametrize(
    ("text", "args", "expected"),
    [
        (HEARTBEATS + "1\nThe tasks have crashed.", _args(), "process 1 stopped sending"),
        (HEARTBEATS + "/job:jax_worker/replica:0/task:2\n/job:jax_worker/replica:0/task:3\n"
         "The tasks have crashed.", _args(0, 4), "processes 2, 3 stopped sending heartbeats"),
        ("UNAVAILABLE: Failed to send RPC to coordination service. Either the leader task",
         _args(1), "process 0 (the coordinator) died"),
        ("DEADLINE_EXCEEDED: Deadline Exceeded\n\nRPC: /xla.coordination.Coord"
         "inationService/RegisterTask", _args(1), "process 0 did not join within 30 s"),
        ("DEADLINE_EXCEEDED: Deadline Exceeded RPC: .../RegisterTask", _args(0, 3),
         "one or more of processes 1, 2 did not join"),
        ("DEADLINE_EXCEEDED: RegisterTask", _args(None, None), "some process did not join"),
        ("UNKNOWN: Gloo AllGather failed: [external/gloo/gloo/transport/tcp/pair.cc:547] "
         "Connection closed by peer [127.0.0.1]:58281", _args(0, 3),
         "another process closed its connection inside a collective"),
        ("UNKNOWN: Gloo AllReduce failed: [pair.cc:589] Read error [127.0.0.1]:40513: "
         "Connection reset by peer", _args(1), "process 0 closed its connection"),
        ("UNKNOWN: Gloo all-reduce failed: [external/gloo/gloo/transport/tcp/pair.cc:547] "
         "Connection closed by peer [127.0.0.1]:17577", _args(), "process 1 closed its connection"),
    ],
)  # fmt: skip
def test_the_end_of_a_lost_process_is_named(text, args, expected):
    what, resume = distributed.diagnose(text, args)
    assert what.startswith(expected), what
    assert resume == ("did not join" not in expected)


@pytest.mark.parametrize(
    "text",
    [
        "Traceback (most recent call last):\nKeyError: 'x'",
        "UNKNOWN: Gloo AllReduce failed: [pair.cc:500] Read timeout [127.0.0.1]:40513",
        "OSError: Connection reset by peer",
    ],
)
def test_other_failures_are_not_diagnosed(text):
    """A Python error, a collective that fails for another reason, a socket error outside a
    collective: their text is passed on as it is."""
    assert distributed.diagnose(text, _args()) is None


def test_stderr_passes_through_until_a_fatal_trace():
    """Progress segments (ended by a carriage return) and lines pass through, split anywhere
    by the pipe; from JAX's first C++ warning or error on, the text is held."""
    fatal = b"F1202 00:22:33.421896   22598 client.h:80] Terminating process\n    @ 0x7f6c\n"
    text = b"\r1/4 jobs\r2/4 jobs\n[ttucb] 4 runs\nE1202 00:22:33.1 22598 agent.cc:289] Polled\n"
    stream = io.BufferedReader(io.BytesIO(text + fatal), buffer_size=7)
    out = io.BytesIO()
    held = distributed._forward(stream, out)
    assert out.getvalue() == b"\r1/4 jobs\r2/4 jobs\n[ttucb] 4 runs\n"
    assert held.startswith(b"E1202") and held.endswith(fatal)


def test_a_failed_collective_is_held():
    """A peer that dies inside a collective ends this process with its own error line before
    the coordination service's diagnosis: held too, so the diagnosis stays the one line."""
    text = b"\rrunning 6/60 runs\rpython -m experiments.sweep: error: UNKNOWN: Gloo AllGather "
    text += b"failed: Connection closed by peer\nE1202 00:22:33.1 22598 agent.cc:289] x\n"
    out = io.BytesIO()
    held = distributed._forward(io.BufferedReader(io.BytesIO(text), buffer_size=5), out)
    assert out.getvalue() == b"\rrunning 6/60 runs\r"
    assert held.startswith(b"python -m experiments.sweep: error: UNKNOWN: Gloo")


def _lines(proc: Sweep) -> list[str]:
    return [line for line in re.split(r"[\r\n]", proc.err.decode()) if line.strip()]


@pytest.mark.integration
def test_a_process_that_never_joins_is_one_line(tmp_path, env):
    """Process 0 of 2 alone: after --startup-timeout, one line naming process 1."""
    explicit = ("--coordinator", f"localhost:{free_port()}", "--num-processes", "2")
    alone = Sweep(
        tmp_path, env, *explicit, "--process-id", "0", "--startup-timeout", "2", "--quiet"
    )
    assert alone.wait(120) == cli.EXIT_USAGE
    (line,) = _lines(alone)
    assert "error: process 0: process 1 did not join within 2 s (--startup-timeout)" in line


@pytest.mark.integration
def test_a_dead_process_is_one_line_with_the_resume_command(tmp_path, env):
    """Process 1 killed once it runs: process 0 ends with one line naming it and the command
    that resumes, exit status 2, instead of JAX's fatal trace."""
    processes = pair(tmp_path, env, "--heartbeat-timeout", "2")
    deadline = time.monotonic() + 120
    while b"ttucb: running" not in processes[1].err and time.monotonic() < deadline:
        assert processes[1].proc.poll() is None, processes[1].err.decode()[-3000:]
        time.sleep(0.05)
    processes[1].proc.kill()
    assert processes[0].wait(120) == cli.EXIT_USAGE, processes[0].err.decode()[-3000:]
    processes[1].wait(10)
    errors = [line for line in _lines(processes[0]) if "error" in line.lower()]
    assert len(errors) == 1, processes[0].err.decode()[-3000:]
    assert "Traceback" not in processes[0].err.decode()
    assert re.search(f"process 0: {LOST}", errors[0]), errors[0]
    assert "heartbeats for 2 s" in errors[0] or "collective" in errors[0]
    assert errors[0].endswith("--process-id 0 --heartbeat-timeout 5 --heartbeat-timeout 2 --resume")
