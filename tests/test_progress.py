"""Progress: the ETA's pure pieces, the bar, ``simulate(progress=)``, a resumed sweep's line,
and Ctrl-C in the sweep's command line."""

from __future__ import annotations

import math
import os
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

import jaxbai
from experiments.sweep import SweepGrids, distributed, engine_runs, resolve
from jaxbai.engine.progress import Measured, Progress, eta_seconds, expected_samples, grid_eta

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_eta_is_the_samples_left_at_the_measured_rate():
    # 4000 samples in 2 s is 2000 samples/s: 10 000 samples left take 5 s
    assert eta_seconds(4000, 2.0, 10_000) == pytest.approx(5.0)
    assert eta_seconds(4000, 2.0, -5.0) == 0.0  # more done than estimated: nothing left


@pytest.mark.parametrize(
    ("done", "elapsed", "left"),
    [(0, 2.0, 100.0), (100, 0.0, 100.0), (100, 2.0, None), (float("nan"), 2.0, 1.0)],
)
def test_no_eta_without_a_measured_rate_or_an_estimate(done, elapsed, left):
    assert eta_seconds(done, elapsed, left) is None


def test_expected_samples_scale_the_cost_by_the_finished_runs():
    cost = np.array([2.0, 1.0, 3.0, 10.0])
    tau = np.array([40, 20, 0, 0])
    done = np.array([True, True, False, False])
    # 60 samples for 3 units of cost: 20 per unit; the last run is capped by the budget
    assert expected_samples(cost, tau, done, np.array([2, 3]), 150).tolist() == [60.0, 150.0]
    assert expected_samples(cost, tau, np.zeros(4, bool), np.arange(4), 150) is None


def test_grid_eta_waits_for_the_longest_run_in_the_tail():
    measured = Measured(seconds=2.0, pool=2000, lane=100)  # 1000/s for the pool, 50/s a lane
    # two runs left, 100 and 1000 samples, none started: the pool would need 1.1 s, but the
    # long run is drawn by one lane at 50 samples/s: 20 s
    assert grid_eta(np.array([100.0, 1000.0]), (0.0, 0.0), measured) == pytest.approx(20.0)
    # the long run has drawn 900 of its samples: 2 s on its lane, the pool's 0.2 s is shorter
    assert grid_eta(np.array([100.0, 1000.0]), (200.0, 900.0), measured) == pytest.approx(2.0)
    # the runs left have drawn 1250 samples, past the 1100 expected of them: the tail is
    # unknown, not 0 s (the issue: 16 runs far beyond the others showed ETA 00:00 for minutes)
    assert grid_eta(np.array([100.0, 1000.0]), (1250.0, 1200.0), measured) == math.inf
    assert grid_eta(np.array([100.0, 1000.0]), (1100.0, 900.0), measured) == math.inf
    # a lane past the longest expected run while runs are queued (its steps count every job
    # it ran) is not a sign: the pool's estimate stands
    assert grid_eta(np.array([100.0] * 3), (50.0, 150.0), measured) == pytest.approx(0.25)
    assert grid_eta(None, (0.0, 0.0), measured) is None
    assert grid_eta(np.array([]), (0.0, 0.0), measured) is None
    assert Measured().rate() is None and measured.rate() == pytest.approx(1000.0)


class Recorder(Progress):
    """A bar that shows nothing and records what each update would show."""

    def __init__(self) -> None:
        super().__init__(0, enabled=False)
        self.updates: list[tuple[int, int, float | None]] = []

    @property
    def shown(self) -> bool:  # the engine computes what a bar shows only for a shown bar
        return True

    def update(self, done: int, samples: int = 0, rate: float | None = None, eta=None) -> None:
        self.updates.append((done, samples, rate))


def test_the_bar_counts_the_samples_of_running_jobs_not_idle_lanes():
    # 2 runs in a pool of 32 lanes per device, at most 16 steps a chunk: the running jobs draw
    # at most 32 samples a chunk, where the pool runs 512 lane-steps or more
    bar, runs, steps = Recorder(), 2, 16
    jobs = jaxbai.engine.grid_jobs(jaxbai.bernoulli([0.7, 0.3]), float("inf"), 0.01, runs)
    result = jaxbai.engine.run_grid(
        jaxbai.ttucb(), jobs, lanes_per_device=32, chunk_steps=steps, refill_every=steps,
        progress=bar,
    )  # fmt: skip
    drawn = [samples for _, samples, _ in bar.updates]
    assert len(drawn) > 2 and drawn[-1] == int(result.tau.sum())
    assert all(0 <= b - a <= runs * steps for a, b in zip([0, *drawn], drawn, strict=False))
    assert result.lane_steps > 2 * drawn[-1]  # idle lanes stepped: not counted as samples
    assert all(rate is None or rate > 0 for _, _, rate in bar.updates)


def test_the_bar_shows_the_stage_and_an_eta_only_when_known(capsys):
    with Progress(10, label="p: ") as bar:
        bar.name = "ttucb"
        bar.start_grid(10, 3)
        bar.update(4, 1000, None, None)
        err = capsys.readouterr().err
        assert "p: ttucb: compiling" in err and "ETA" not in err and "nan" not in err
        bar.stage("running")
        bar.update(10, 5000, 2500.0, 65.0)
    err = capsys.readouterr().err
    assert "ttucb: running" in err and "10/10 runs" in err and "ETA ~01:05" in err
    with Progress(10) as bar:
        bar.start_grid(10, 0)
        bar.update(8, 5000, 2500.0, math.inf)
    err = capsys.readouterr().err
    assert "ETA unknown (tail past its estimate)" in err and "00:00 (estimate)" not in err
    with Progress(10, enabled=False) as quiet:
        quiet.start_grid(10, 0)
        quiet.note("nothing")
    assert capsys.readouterr().err == ""


def test_simulate_is_silent_by_default_and_shows_a_bar_on_request(capsys):
    alg, inst = jaxbai.ttucb(), jaxbai.bernoulli([0.7, 0.3])
    jaxbai.simulate(alg, inst, runs=4)
    assert capsys.readouterr() == ("", "")
    jaxbai.simulate(alg, inst, runs=4, progress=True)
    out, err = capsys.readouterr()
    assert out == ""
    for text in ("compiling", "running", "done", "4/4 runs"):
        assert text in err
    assert "nan" not in err


def test_a_resumed_sweep_says_how_many_cells_its_checkpoints_restore(tmp_path):
    config = resolve(
        {"name": "t", "instances": ["mu1"], "algorithms": ["ttucb"], "runs": 5,
         "deltas": [0.1, 0.01], "out": str(tmp_path)}
    )  # fmt: skip
    (tmp_path / "checkpoints").mkdir()
    done = np.array([True] * 5 + [True, False, False, True, False])  # cell 1 whole, cell 2 not
    np.savez(tmp_path / "checkpoints" / "ttucb.npz", done=done)
    grids = SweepGrids.of(config).with_checkpoints()
    note = engine_runs.restored_note(grids)
    assert note.startswith("resume: restored 1 of 2 cells (7 of 10 runs) from ")
    (tmp_path / "checkpoints" / "ttucb.npz").unlink()
    assert "restored 0 of 2 cells (0 of 10 runs)" in engine_runs.restored_note(grids)


def test_the_resume_command_repeats_the_arguments_without_overwrite():
    argv = ["--runs", "5", "--overwrite", "--out", "my results"]
    command = distributed.resume_command("experiments.sweep", argv)
    assert command == "python -m experiments.sweep --runs 5 --out 'my results' --resume"
    again = distributed.resume_command("experiments.sweep", ["--resume", "--runs", "5"])
    assert again.count("--resume") == 1


@pytest.mark.integration
@pytest.mark.parametrize(
    ("signum", "status", "stage"),
    [
        (signal.SIGINT, 130, b"compiling"),
        (signal.SIGINT, 130, b"running"),
        (signal.SIGTERM, 143, b"compiling"),
        (signal.SIGTERM, 143, b"running"),
    ],
)
def test_a_signal_ends_a_sweep_with_one_line_and_the_resume_command(
    tmp_path, signum, status, stage
):
    """Ctrl-C, and SIGTERM alike (it used to end the sweep with 143 and no word), while the
    grid compiles or runs. The child starts with SIGINT's default action whatever this process
    inherited (a shell ignores it in a background job, and an ignored signal stays ignored
    across exec): a handler set here is reset to the default in the child."""
    args = [
        "--instances", "mu1", "--algorithms", "adap_tt", "--epsilons", "0.001",
        "--runs", "8", "--chunk-steps", "256", "--out", str(tmp_path / "out"),
    ]  # fmt: skip
    env = os.environ | {"JAX_PLATFORMS": "cpu", "PYTHONPATH": ROOT}
    inherited = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        child = subprocess.Popen(
            [sys.executable, "-m", "experiments.sweep", *args],
            cwd=ROOT,
            env=env,
            stderr=subprocess.PIPE,
            stdout=subprocess.PIPE,
        )
    finally:
        signal.signal(signal.SIGINT, inherited)
    seen, deadline = b"", time.monotonic() + 120
    while stage not in seen and time.monotonic() < deadline:
        chunk = os.read(child.stderr.fileno(), 4096)
        if not chunk:
            break
        seen += chunk
    assert stage in seen, seen.decode(errors="replace")
    child.send_signal(signum)
    rest = child.stderr.read()
    assert child.wait(timeout=60) == status
    lines = (seen + rest).decode().replace("\r", "\n").splitlines()
    messages = [line for line in lines if line.strip() and " runs [" not in line]
    expected = distributed.resume_command("experiments.sweep", args)
    assert messages == [f"interrupted: rerun with {expected}"]
