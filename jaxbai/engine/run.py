"""The host side: the chunk loop with progress and checkpoints.

`run_grid` validates the grid, splits the pending jobs over the devices, then advances the
compiled lane program (`jaxbai.engine.lane_program`) in chunks of ``chunk_steps`` steps; between
chunks it copies finished jobs to the host, prints progress, writes an atomic checkpoint of the
finished jobs every ``checkpoint_every`` seconds and, in the tail of the grid, compacts the lane
pool. Over several processes (`jax.distributed`), `run_grid` first pools every process's
checkpoint shards, runs this process's share of the pending jobs on its own devices, then
gathers every process's results (``jaxbai.engine._distributed``). `run_vmap` is the baseline
without lane refill, with the same keys and step. The devices, the lane pool size, the checks
and the algorithm as the engine runs it are decided before, in `jaxbai.engine.prepare`.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from functools import partial
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import Mesh, PartitionSpec

import jaxbai.engine._distributed as _distributed
from jaxbai import _devices, checks
from jaxbai.base import Algorithm, Budgeted
from jaxbai.engine._checkpoint import (
    empty_results,
    grid_fingerprint,
    read_checkpoint,
    shard_path,
    write_checkpoint,
)
from jaxbai.engine._distributed import predicted_cost
from jaxbai.engine._shared import SharedDeltas
from jaxbai.engine.fused_kernel import resolve_kernel
from jaxbai.engine.jobs import Jobs
from jaxbai.engine.lane_program import (
    Lanes,
    advance,
    collect,
    device_tables,
    initial_carry,
    shrink_pool,
    vmap_until_all_stop,
)
from jaxbai.engine.prepare import (
    _check_grid,
    _fused_grid,
    _units,
    default_lanes,
    select_devices,
    with_draws,
    with_shared_deltas,
)
from jaxbai.engine.progress import Measured, Progress, expected_samples, grid_eta

__all__ = ["SHRINK_AFTER_S", "GridResult", "run_grid", "run_vmap"]

SHRINK_AFTER_S = 5.0
"""`run_grid`'s default ``shrink_after``: seconds of compiled chunks before tail compaction."""


OUTCOMES = ("tau", "recommendation", "correct", "censored", "rounds", "counts")
"""The per-job outcome fields, the first of `GridResult` and of `jaxbai.SimulationResult`
(which is built from a `GridResult`: `jaxbai.simulation.SimulationResult.of`)."""


class GridResult(NamedTuple):
    """Per-job outcomes (numpy, shape ``(J,)``; the fields of `OUTCOMES`) and run statistics.

    Attributes:
        tau: samples drawn at stopping (K initial samples included); for censored jobs, the
            samples drawn when the job was cut.
        recommendation: recommended arm (−1 if censored).
        correct: recommendation is the instance's best arm.
        censored: did not stop within ``max_samples``.
        rounds: rounds of adaptivity (DAF: Σ_a k_a; DP-SE: epochs; −1 otherwise).
        counts: final counts N_a, shape ``(J, K)`` (int64): each row sums to ``tau``; for a
            censored job, the counts when it was cut (0 for a job that never finished).
        jobs: the job list.
        lane_steps: lane-steps executed in this call (idle lanes included).
        samples: samples drawn by the jobs finished in this call (by their trajectories,
            once each, when several δ share one).
        wall_time: seconds spent in this call.
        shared_deltas: whether the δ of each (instance, ε, run) shared one trajectory
            (only where the algorithm allows it, `with_shared_deltas`).
        kernel: the lane program that ran, ``"xla"`` or ``"fused"`` (`run_grid`'s ``kernel``).
        resumed: jobs restored from the checkpoint (``resume=True``), not run in this call.
    """

    tau: np.ndarray
    recommendation: np.ndarray
    correct: np.ndarray
    censored: np.ndarray
    rounds: np.ndarray
    counts: np.ndarray
    jobs: Jobs
    lane_steps: int
    samples: int
    wall_time: float
    shared_deltas: bool = False
    kernel: str = "xla"
    resumed: int = 0

    @property
    def efficiency(self) -> float:
        """Useful samples / executed lane-steps of this call."""
        return self.samples / max(self.lane_steps, 1)


def _samples(units: np.ndarray, results: dict[str, np.ndarray]) -> int:
    """Samples drawn by the finished units (a shared trajectory's: its largest τ)."""
    done = results["done"][units]
    tau = results["tau"][units]
    if units.ndim == 1:
        return int(tau[done].sum())
    return int(tau.max(axis=1)[done.all(axis=1)].sum())


def _in_flight(lanes: Lanes, width: int) -> int:
    """Samples drawn so far by the runs now in the lanes (their n; an idle lane, whose job index
    is ``width``, holds none)."""
    job, n = jax.device_get((lanes.job, lanes.state.n))
    return int(np.asarray(n, np.int64)[np.asarray(job) < width].sum())


def _samples_per_step(alg: Algorithm) -> int:
    """Samples one engine step may draw: 1, or a budgeted step's `samples_per_step`."""
    return alg.samples_per_step if isinstance(alg, Budgeted) else 1


def run_grid(
    alg: Algorithm,
    jobs: Jobs,
    *,
    seed: int = 0,
    max_samples: int = 10**9,
    draws: str = "auto",
    lanes_per_device: int | None = None,
    refill_every: int = 16,
    chunk_steps: int = 1 << 15,
    device: str | None = None,
    share_deltas: bool = False,
    kernel: str = "auto",
    checkpoint: str | None = None,
    resume: bool = False,
    checkpoint_every: float = 30.0,
    progress: bool | Progress = False,
    max_chunks: int | None = None,
    shrink_after: float = SHRINK_AFTER_S,
    min_slots: int = 1,
) -> GridResult:
    """Run every job of a grid to completion with lane refill; see `jaxbai.engine`.

    Args:
        alg: an algorithm (static: selects the compiled program).
        jobs: the job list (`jaxbai.engine.grid_jobs`).
        seed: master seed, in [0, 2³²) (`jaxbai.checks.check_seed`).
        max_samples: per-job sample budget; jobs that reach it are censored.
        draws: one of `DRAWS`: per-sample rewards, or one sum per arm and episode for episodic
            algorithms (the default where the instance allows it; same law of (τ, â, C),
            different numbers, docs/semantics.md §25).
        lanes_per_device: lane pool size per device; default `default_lanes`.
        refill_every: steps between refills (a finished lane idles at most this long).
        chunk_steps: steps per compiled call between host updates. With per-episode draws
            both count samples: a step then draws up to `PerEpisode.pulls` of them.
        device: ``"cpu"``, ``"gpu"`` or None (JAX's default devices).
        share_deltas: one trajectory per (instance, ε, run), tested against each of its δ,
            where the algorithm allows it (`with_shared_deltas`; the same law of each δ's
            (τ, â, C) as a trajectory per job, other numbers, docs/semantics.md §31).
        kernel: the lane program, one of `jaxbai.engine.KERNELS`: ``"xla"``, ``"fused"`` (a
            Pallas kernel that runs ``refill_every`` steps of a block of lanes per launch,
            interpreted on a CPU; the same numbers, docs/semantics.md §32) or ``"auto"``
            (``"xla"``). ValueError, before the lane program compiles, for what the fused
            kernel does not cover (`jaxbai.engine.fused_unsupported`).
        checkpoint: path of the checkpoint file (None: no checkpoint).
        resume: continue from ``checkpoint`` (finished jobs are kept, others rerun exactly).
        checkpoint_every: seconds between checkpoint writes (one is always written at the end).
        progress: show a progress bar on stderr (`jaxbai.engine.progress.Progress`: the stage,
            ``compiling`` then ``running``, the runs done, samples/s and an estimated ETA), or
            follow this grid on a caller's `Progress` bar (named by its ``name``), which stays
            open.
        max_chunks: stop after this many chunks (for tests of interruption); unfinished jobs
            then have ``done`` False and are reported censored with τ = 0.
        shrink_after: compact the lane pool in the tail of the grid (see
            `jaxbai.engine.lane_program.shrink_pool`) once the grid has run this many seconds, so
            that the recompilations pay for themselves (0: always; ``inf``: never). Chunks
            that compiled a program do not count.
        min_slots: job-table slots per device, at least. The table's length is a shape of the
            compiled program (`jaxbai.engine.lane_program.table_slots`): a small grid run
            before a larger one (the sweep's ``--plan`` pilot) passes the larger grid's
            ``table_slots(jobs per device)`` to compile the program that grid will load. The
            results do not depend on it.

    Under `jax.distributed` every process must call `run_grid` with the same arguments: each
    runs its share of the jobs on its own devices (``device`` names their platform), writes
    the checkpoint shard ``shard_path(checkpoint, jax.process_index())`` and returns the whole
    grid. ``lane_steps`` and ``samples`` then count every process's work, ``wall_time`` this
    process's.

    Returns:
        A `GridResult`.

    Examples:
        >>> import jaxbai
        >>> from jaxbai.engine import grid_jobs
        >>> jobs = grid_jobs(jaxbai.bernoulli([0.9, 0.5]), [1.0], runs=4)
        >>> res = run_grid(jaxbai.adap_tt(), jobs)
        >>> res.tau.shape
        (4,)
    """
    best = _check_grid(alg, jobs, max_samples)
    alg = with_shared_deltas(with_draws(alg, jobs.instance, draws), jobs, share_deltas)
    kernel = resolve_kernel(kernel)
    seed = checks.check_seed(seed)
    for name, value in (
        ("lanes_per_device", 1 if lanes_per_device is None else lanes_per_device),
        ("refill_every", refill_every),
        ("chunk_steps", chunk_steps),
        ("min_slots", min_slots),
    ):
        if not isinstance(value, int) or not 1 <= value <= checks.COUNT_MAX:
            raise ValueError(f"{name} must be an integer in [1, {checks.COUNT_MAX}], got {value!r}")
    start = time.perf_counter()
    with _bar(progress, len(jobs)) as bar:
        team = _distributed.team_of(select_devices(device))
        _devices.warn_if_one_core(team.devices)
        fingerprint = grid_fingerprint(alg, jobs, seed, max_samples)
        num_arms = int(np.asarray(jobs.instance.means).shape[-1])
        if team.size > 1:
            _distributed.check_same_grid(fingerprint)
        if checkpoint and resume:
            results = read_checkpoint(checkpoint, fingerprint, len(jobs), num_arms)
        else:
            results = empty_results(len(jobs), num_arms)
        if team.size > 1:
            results, _ = _distributed.union(results, 0)
            if checkpoint:
                checkpoint = shard_path(checkpoint, team.index)
        already = results["done"].copy()
        bar.label = f"process {team.index}/{team.size}: " if team.size > 1 else ""
        bar.start_grid(len(jobs), int(already.sum()))
        units = _units(alg, jobs, np.flatnonzero(~already))
        mine = _my_units(team, alg, jobs, units)
        lane_steps = 0
        if len(mine):
            if lanes_per_device is None:
                platform = team.devices[0].platform
                lanes_per_device = default_lanes(platform, -(-len(mine) // len(team.devices)))
            settings = _Settings(
                seed,
                max_samples,
                lanes_per_device,
                refill_every,
                chunk_steps,
                checkpoint,
                fingerprint,
                checkpoint_every,
                bar,
                max_chunks,
                shrink_after,
                kernel,
                min_slots,
            )
            lane_steps = _run_pending(alg, jobs, mine, results, team, settings)
        if team.size > 1:
            results, lane_steps = _distributed.union(results, lane_steps)
            bar.update(int(results["done"].sum()))
        if checkpoint:
            write_checkpoint(checkpoint, fingerprint, results)
        samples = _samples(units, results)
        result = _grid_result(results, best, jobs, max_samples, lane_steps, samples, start, alg)
        return result._replace(kernel=kernel, resumed=int(already.sum()))


def _my_units(team: _distributed.Team, alg: Algorithm, jobs: Jobs, units: np.ndarray):
    """This process's share of the units (`jaxbai.engine._distributed.my_jobs`; a shared
    trajectory goes by its smallest δ's job)."""
    if units.ndim == 1:
        return _distributed.my_jobs(team, alg.info.privacy, jobs, units)
    mine = _distributed.my_jobs(team, alg.info.privacy, jobs, units[:, 0])
    return units[np.isin(units[:, 0], mine)]


def _grid_result(
    results: dict[str, np.ndarray],
    best: np.ndarray,
    jobs: Jobs,
    max_samples: int,
    lane_steps: int,
    samples: int,
    start: float,
    alg: Algorithm,
) -> GridResult:
    """Host results → `GridResult`: censoring (not stopped, or over budget) voids the answer."""
    censored = ~results["stopped"] | (results["tau"] > max_samples)
    recommendation = np.where(censored, -1, results["recommendation"])
    return GridResult(
        tau=results["tau"],
        recommendation=recommendation,
        correct=recommendation == best,
        censored=censored,
        rounds=results["rounds"],
        counts=results["counts"],
        jobs=jobs,
        lane_steps=lane_steps,
        samples=samples,
        wall_time=time.perf_counter() - start,
        shared_deltas=isinstance(alg, SharedDeltas),
    )


class _Settings(NamedTuple):
    """The host loop's configuration (see `run_grid`)."""

    seed: int
    max_samples: int
    lanes_per_device: int
    refill_every: int
    chunk_steps: int
    checkpoint: str | None
    fingerprint: str
    checkpoint_every: float
    progress: Progress
    max_chunks: int | None
    shrink_after: float
    kernel: str
    min_slots: int


def _run_pending(
    alg: Algorithm,
    jobs: Jobs,
    pending: np.ndarray,
    results: dict[str, np.ndarray],
    team: _distributed.Team,
    settings: _Settings,
) -> int:
    """The host loop over compiled chunks on this process's devices, over the ``pending``
    units (`_units`); returns lane-steps run."""
    lanes_per_device = settings.lanes_per_device
    num_devices = len(team.devices)
    mesh = Mesh(np.array(team.devices), ("d",))
    num_arms = int(np.asarray(jobs.instance.means).shape[-1])
    if settings.kernel == "fused":
        platform = team.devices[0].platform
        fused = _fused_grid(alg, jobs, pending, platform, lanes_per_device)
        if isinstance(fused, str):
            raise ValueError(f"kernel='fused' cannot run {fused}; use kernel='xla'")
        alg, jobs, num_arms = fused
    table, order = device_tables(jobs, pending, num_devices, min_slots=settings.min_slots)
    seed = np.uint32(settings.seed)
    carry = initial_carry(alg, num_arms, seed, table, lanes_per_device, num_devices)
    sharding = jax.sharding.NamedSharding(mesh, PartitionSpec("d"))
    table, carry = jax.device_put((table, carry), sharding)
    shown = settings.progress.shown
    if shown:
        eta = partial(_eta, predicted_cost(alg.info.privacy, jobs), pending, settings.max_samples)
    lane_steps, lane_length, chunks, drawn, in_flight, chunk_samples = 0, 0, 0, 0, 0, 0
    width = table.run.shape[0] // num_devices
    measured, compiling = Measured(), True
    per_step = _samples_per_step(alg)
    refill_every = max(1, settings.refill_every // per_step)
    chunk_steps = max(1, settings.chunk_steps // per_step)
    last_write = time.perf_counter()
    try:
        while True:
            began = time.perf_counter()
            carry, iterations = advance(
                alg,
                num_arms,
                refill_every,
                mesh,
                np.int32(settings.max_samples),
                seed,
                np.int32(chunk_steps),
                table,
                carry,
                settings.kernel,
            )
            steps = np.asarray(jax.device_get(iterations)) * per_step
            lane_steps += int(steps.sum()) * lanes_per_device
            lane_length, chunks = lane_length + int(steps.max()), chunks + 1
            collect(carry[1], order, results)
            if shown:  # the samples of the runs in the lanes: one more transfer, for the bar
                samples, in_flight = _samples(pending, results), _in_flight(carry[0], width)
                drawn, chunk_samples = samples + in_flight, samples + in_flight - drawn
            if compiling:  # the rate is measured on the chunks that did not compile
                settings.progress.stage("running")
            else:
                measured = measured.add(
                    time.perf_counter() - began, chunk_samples, int(steps.max())
                )
            compiling = False
            if measured.seconds >= settings.shrink_after:
                carry, lanes = shrink_pool(carry, table, num_devices, sharding)
                if lanes != lanes_per_device:  # a smaller program: compiled once
                    settings.progress.stage("compiling a smaller lane pool")
                compiling, lanes_per_device = lanes != lanes_per_device, lanes
            if shown:
                rate, left = eta(results, (in_flight, lane_length), measured)
                settings.progress.update(int(results["done"].sum()), drawn, rate, left)
            if settings.checkpoint and time.perf_counter() - last_write > settings.checkpoint_every:
                write_checkpoint(settings.checkpoint, settings.fingerprint, results)
                last_write = time.perf_counter()
            if bool(results["done"][pending].all()) or (
                settings.max_chunks is not None and chunks >= settings.max_chunks
            ):
                return lane_steps
    except KeyboardInterrupt:  # keep what has finished: a resumed grid restores it
        if settings.checkpoint:
            write_checkpoint(settings.checkpoint, settings.fingerprint, results)
        raise


def _eta(
    cost: np.ndarray,
    pending: np.ndarray,
    max_samples: int,
    results: dict[str, np.ndarray],
    worked: tuple[int, int],
    measured: Measured,
) -> tuple[float | None, float | None]:
    """(samples/s drawn by the running jobs, ETA in seconds) of the ``pending`` units
    (`grid_eta`).

    ``cost``: every job's `predicted_cost`; ``worked``: (samples drawn so far by the runs in the
    lanes, steps of one lane in this call); ``measured``: the chunks that ran without compiling.
    None where not measured or not known yet.
    """
    first = pending if pending.ndim == 1 else pending[:, 0]  # a trajectory's longest job
    unfinished = first[~results["done"][first]]
    expected = expected_samples(cost, results["tau"], results["done"], unfinished, max_samples)
    return measured.rate(), grid_eta(expected, worked, measured)


@contextlib.contextmanager
def _bar(progress: bool | Progress, runs: int) -> Iterator[Progress]:
    """A caller's `Progress` bar (left open), or a bar of ``runs`` runs (closed at the end; one
    that shows nothing for ``progress=False``)."""
    if isinstance(progress, Progress):
        yield progress
        return
    with Progress(runs, enabled=bool(progress)) as bar:
        yield bar
        bar.stage("done")


def run_vmap(
    alg: Algorithm,
    jobs: Jobs,
    *,
    seed: int = 0,
    max_samples: int = 10**9,
    draws: str = "auto",
    share_deltas: bool = False,
) -> GridResult:
    """Baseline without lane refill: one `vmap` of a `while_loop` over all jobs, on one device.

    Every lane runs until the slowest job stops. Same keys and step as `run_grid` (and the same
    ``draws`` and ``share_deltas``), so per-job results are identical; used by the benchmarks and
    tests as the reference.
    """
    best = _check_grid(alg, jobs, max_samples)
    seed = checks.check_seed(seed)
    alg = with_shared_deltas(with_draws(alg, jobs.instance, draws), jobs, share_deltas)
    num_arms = int(np.asarray(jobs.instance.means).shape[-1])
    units = _units(alg, jobs, np.arange(len(jobs)))
    table, order = device_tables(jobs, units, 1, pad=False)
    start = time.perf_counter()
    outputs = jax.device_get(
        vmap_until_all_stop(alg, num_arms, jnp.int32(max_samples), jnp.uint32(seed), table)
    )
    results = empty_results(len(jobs), num_arms)
    names = ("tau", "stopped", "recommendation", "rounds", "counts")
    for name, value in zip(names, outputs, strict=True):
        per_job = value.shape[order.ndim - 1 :]
        results[name][order.reshape(-1)] = value.reshape((order.size, *per_job))
    results["done"][:] = True
    longest = int(results["tau"].clip(max=max_samples).max())
    per_step = _samples_per_step(alg)
    lane_steps = -(-longest // per_step) * per_step * len(units)
    samples = _samples(units, results)
    return _grid_result(results, best, jobs, max_samples, lane_steps, samples, start, alg)
