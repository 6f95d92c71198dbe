"""High-throughput grid runner: lane refill, per-job randomness, sharding, progress, checkpoints.

A figure grid mixes runs that stop after 10³ samples with runs that need 10⁸, so a plain `vmap`
of a `while_loop` (which runs until its slowest member stops) leaves most lanes idle. The engine
keeps a fixed pool of lanes per device; every ``refill_every`` steps, each lane whose job has
stopped (or hit ``max_samples``) writes its result and loads the next pending job.

Determinism: job j's randomness depends only on (seed, run, ε, δ) — see `job_key` — and step n
of a job uses ``fold_in(stream_key, n)``. So a job's result does not depend on the number of
lanes, devices, chunk sizes, on which other jobs share the grid, or on interruption and resume.
(The instance is not part of the key: the same run index on two instances shares its random
stream, i.e. common random numbers across instances.)

The host advances the compiled loop in chunks of ``chunk_steps`` steps; between chunks it prints
progress and writes an atomic checkpoint of the finished jobs. On resume, finished jobs are
kept and every other job is run from its start — which gives bitwise the same result as an
uninterrupted run, since a job's trajectory depends only on its key.

Jobs are split over devices round-robin and each device runs its own lane pool under
`jax.shard_map` (no communication between devices inside a chunk).
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
import sys
import time
from collections.abc import Sequence
from functools import partial
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import Mesh, PartitionSpec

from jaxbai import _validate
from jaxbai._arrays import tree_where
from jaxbai.instances import rewards_in_unit_interval

CHECKPOINT_VERSION = 1


class Jobs(NamedTuple):
    """A list of J jobs. ``instance`` is an instance pytree whose leaves have leading dim J."""

    instance: Any
    epsilon: np.ndarray
    delta: np.ndarray
    run: np.ndarray

    def __len__(self) -> int:
        return int(self.run.shape[0])


class GridResult(NamedTuple):
    """Per-job outcomes (numpy, shape ``(J,)``) and run statistics.

    Attributes:
        tau: samples drawn at stopping (K initial samples included); for censored jobs, the
            samples drawn when the job was cut.
        recommendation: recommended arm (−1 if censored).
        correct: recommendation is the instance's best arm.
        censored: did not stop within ``max_samples``.
        rounds: rounds of adaptivity (DAF: Σ_a k_a; DP-SE: epochs; −1 otherwise).
        jobs: the job list.
        lane_steps: lane-steps executed in this call (idle lanes included).
        samples: samples drawn by the jobs finished in this call.
        wall_time: seconds spent in this call.
    """

    tau: np.ndarray
    recommendation: np.ndarray
    correct: np.ndarray
    censored: np.ndarray
    rounds: np.ndarray
    jobs: Jobs
    lane_steps: int
    samples: int
    wall_time: float

    @property
    def efficiency(self) -> float:
        """Useful samples / executed lane-steps of this call."""
        return self.samples / max(self.lane_steps, 1)


def float_bits(x: Any) -> jax.Array:
    """The float32 bit pattern of ``x`` as uint32 (a key coordinate)."""
    return jax.lax.bitcast_convert_type(jnp.asarray(x, jnp.float32), jnp.uint32)


def job_key(master: jax.Array, run: Any, epsilon: Any, delta: Any) -> jax.Array:
    """The key of one job, from (master key, run index, ε, δ) only."""
    key = jax.random.fold_in(master, jnp.asarray(run, jnp.uint32))
    key = jax.random.fold_in(key, float_bits(epsilon))
    return jax.random.fold_in(key, float_bits(delta))


def grid_jobs(
    instances: Any | Sequence[Any], epsilon: Any, delta: Any = 0.01, runs: int = 1
) -> Jobs:
    """The Cartesian product instances × ε × δ × runs (runs vary fastest).

    Args:
        instances: one instance or a sequence of instances of the same type and K.
        epsilon: scalar or sequence of ε (``inf`` for non-private algorithms).
        delta: scalar or sequence of δ.
        runs: runs per (instance, ε, δ) cell.

    Example:
        >>> import jaxbai
        >>> jobs = grid_jobs([jaxbai.bernoulli([0.9, 0.5])], [0.1, 1.0], 0.01, runs=3)
        >>> len(jobs)
        6
    """
    insts = [instances] if hasattr(instances, "means") else list(instances)
    if not insts:
        raise ValueError("instances must not be empty")
    structure = jax.tree_util.tree_structure(insts[0])
    if any(jax.tree_util.tree_structure(i) != structure for i in insts):
        raise ValueError("all instances of a grid must have the same type")
    if len({np.asarray(i.means).shape for i in insts}) != 1:
        raise ValueError("all instances of a grid must have the same number of arms")
    eps = np.atleast_1d(np.asarray(epsilon, np.float64))
    dlt = np.atleast_1d(np.asarray(delta, np.float64))
    if isinstance(runs, bool) or not isinstance(runs, (int, np.integer)) or runs < 1:
        raise ValueError(f"runs must be a positive integer, got {runs!r}")
    i_idx, e_idx, d_idx, r_idx = (
        g.ravel()
        for g in np.meshgrid(
            np.arange(len(insts)),
            np.arange(eps.size),
            np.arange(dlt.size),
            np.arange(runs),
            indexing="ij",
        )
    )
    stacked = jax.tree_util.tree_map(lambda *xs: np.stack([np.asarray(x) for x in xs]), *insts)
    instance = jax.tree_util.tree_map(lambda x: x[i_idx], stacked)
    return Jobs(instance, eps[e_idx], dlt[d_idx], r_idx.astype(np.int64))


# ----------------------------------------------------------------------------- device side
class Lanes(NamedTuple):
    """The lane pool of one device; leaves have leading dim L (lanes)."""

    job: jax.Array
    stream: jax.Array
    state: Any
    params: Any
    instance: Any


class Outcome(NamedTuple):
    """Per-job result buffers of one device; leaves have leading dim J_d."""

    done: jax.Array
    tau: jax.Array
    stopped: jax.Array
    recommendation: jax.Array
    rounds: jax.Array


class Table(NamedTuple):
    """The jobs of one device."""

    instance: Any
    epsilon: jax.Array
    delta: jax.Array
    run: jax.Array
    count: jax.Array


def _load_job(alg: Any, num_arms: int, seed: jax.Array, table: Table, j: jax.Array):
    """(stream key data, initial state, params, instance) of local job ``j``."""
    j = jnp.minimum(j, table.run.shape[0] - 1)
    eps, dlt = table.epsilon[j], table.delta[j]
    key = job_key(jax.random.key(seed), table.run[j], eps, dlt)
    init_key, stream = jax.random.split(key)
    params = alg.params(epsilon=eps, delta=dlt)
    instance = jax.tree_util.tree_map(lambda x: x[j], table.instance)
    state = alg.init(init_key, params, num_arms)
    return jax.random.key_data(stream), state, params, instance


def _write_results(alg, lanes, outcome, finished, num_jobs) -> Outcome:
    """Scatter the results of the finished lanes into the job buffers."""
    slot = jnp.where(finished, lanes.job, num_jobs)

    def write(buffer: jax.Array, value: jax.Array) -> jax.Array:
        return buffer.at[slot].set(value, mode="drop")

    return Outcome(
        done=write(outcome.done, True),
        tau=write(outcome.tau, lanes.state.n),
        stopped=write(outcome.stopped, lanes.state.stopped),
        recommendation=write(outcome.recommendation, lanes.state.recommendation),
        rounds=write(outcome.rounds, jax.vmap(alg.rounds)(lanes.state)),
    )


def _refill(alg, num_arms, max_samples, seed, table, lanes, outcome, next_job):
    """Write finished lanes' results, then load pending jobs into idle lanes.

    Both halves sit under `lax.cond`, so a refill with nothing to do costs a reduction.
    """
    num_jobs = table.run.shape[0]
    has_job = lanes.job < num_jobs
    finished = has_job & (lanes.state.stopped | (lanes.state.n >= max_samples))
    outcome = jax.lax.cond(
        jnp.any(finished),
        lambda: _write_results(alg, lanes, outcome, finished, num_jobs),
        lambda: outcome,
    )
    idle = finished | ~has_job
    candidate = next_job + jnp.cumsum(idle) - 1
    assign = idle & (candidate < table.count)
    next_job = next_job + jnp.sum(assign)
    lanes = lanes._replace(job=jnp.where(assign, candidate, jnp.where(idle, num_jobs, lanes.job)))

    def load() -> Lanes:
        stream, state, params, instance = jax.vmap(
            lambda j: _load_job(alg, num_arms, seed, table, j)
        )(candidate)
        loaded = Lanes(lanes.job, stream, state, params, instance)
        return tree_where_lanes(assign, loaded, lanes)

    lanes = jax.lax.cond(jnp.any(assign), load, lambda: lanes)
    return lanes, outcome, next_job


def tree_where_lanes(mask: jax.Array, on_true: Any, on_false: Any) -> Any:
    """Per-lane select between two pytrees whose leaves have leading dim L."""

    def select(a: jax.Array, b: jax.Array) -> jax.Array:
        return jnp.where(mask.reshape(mask.shape + (1,) * (a.ndim - 1)), a, b)

    return jax.tree_util.tree_map(select, on_true, on_false)


def _step_lane(alg: Any, max_samples: jax.Array, lane: Lanes) -> Lanes:
    """One step of one lane's job; a no-op once it has drawn ``max_samples`` samples."""
    key = jax.random.fold_in(jax.random.wrap_key_data(lane.stream), lane.state.n)
    stepped = alg.step(key, lane.state, lane.instance, lane.params)
    return lane._replace(state=tree_where(lane.state.n < max_samples, stepped, lane.state))


def _advance_device(alg, num_arms, refill_every, max_samples, seed, iterations, table, carry):
    """Run up to ``iterations`` steps of one device's lane pool (inside `shard_map`)."""
    table = table._replace(count=table.count[0])
    lanes, outcome, next_job = carry
    next_job = next_job[0]
    num_jobs = table.run.shape[0]

    def running(c):
        it, lanes, _, next_job = c
        return (it < iterations) & (jnp.any(lanes.job < num_jobs) | (next_job < table.count))

    def body(c):
        it, lanes, outcome, next_job = c
        lanes, outcome, next_job = _refill(
            alg, num_arms, max_samples, seed, table, lanes, outcome, next_job
        )
        step = jax.vmap(partial(_step_lane, alg, max_samples))
        lanes = jax.lax.fori_loop(0, refill_every, lambda _, ln: step(ln), lanes)
        return it + refill_every, lanes, outcome, next_job

    it, lanes, outcome, next_job = jax.lax.while_loop(
        running, body, (jnp.int32(0), lanes, outcome, next_job)
    )
    return (lanes, outcome, next_job[None]), it[None]


@partial(jax.jit, static_argnames=("alg", "num_arms", "refill_every", "mesh"))
def _advance(alg, num_arms, refill_every, mesh, max_samples, seed, iterations, table, carry):
    spec = PartitionSpec("d")
    fn = partial(_advance_device, alg, num_arms, refill_every, max_samples, seed, iterations)
    return jax.shard_map(
        fn, mesh=mesh, in_specs=(spec, spec), out_specs=(spec, spec), check_vma=False
    )(table, carry)


# ----------------------------------------------------------------------------- host side
def select_devices(device: str | None) -> list[jax.Device]:
    """The devices of a platform (``"cpu"``, ``"gpu"``) or JAX's default ones.

    Raises:
        ValueError: the platform is not available to JAX (never a silent CPU fallback).
    """
    if device is None:
        return jax.devices()
    if device not in ("cpu", "gpu"):
        raise ValueError(f"device must be 'cpu' or 'gpu', got {device!r}")
    try:
        return jax.devices(device)
    except RuntimeError as err:
        raise ValueError(
            f"device={device!r} was requested but JAX sees no {device.upper()} "
            f"(available: {[d.platform for d in jax.devices()]}); install the matching jaxlib"
        ) from err


def default_lanes(platform: str, jobs_per_device: int) -> int:
    """Lane pool size: about a quarter of a device's jobs, as a power of two, clipped.

    Enough jobs per lane keep refill busy (few idle lanes while long jobs finish), and on CPU
    the pool stays small enough for the cache (32–256 lanes; a step is fastest at 128–512);
    GPUs want wide pools (1024–32768 lanes).
    """
    low, high = (32, 256) if platform == "cpu" else (1024, 32768)
    quarter = max(1, -(-jobs_per_device // 4))
    return int(min(high, max(low, 1 << (quarter - 1).bit_length())))


def describe(alg: Any) -> str:
    """A stable text description of a (dataclass) algorithm configuration."""
    fields = []
    for field in dataclasses.fields(alg):
        value = getattr(alg, field.name)
        if callable(value) and hasattr(value, "__qualname__"):
            value = f"{value.__module__}.{value.__qualname__}"
        fields.append(f"{field.name}={value!r}")
    return f"{type(alg).__name__}({', '.join(fields)})"


def _fingerprint(alg: Any, jobs: Jobs, seed: int, max_samples: int) -> str:
    digest = hashlib.sha256()
    digest.update(describe(alg).encode())
    digest.update(f"{seed}|{max_samples}|{CHECKPOINT_VERSION}".encode())
    for leaf in jax.tree_util.tree_leaves(jobs):
        digest.update(np.ascontiguousarray(leaf).tobytes())
    return digest.hexdigest()


def _empty_results(num_jobs: int) -> dict[str, np.ndarray]:
    return {
        "done": np.zeros(num_jobs, bool),
        "tau": np.zeros(num_jobs, np.int64),
        "stopped": np.zeros(num_jobs, bool),
        "recommendation": np.full(num_jobs, -1, np.int32),
        "rounds": np.full(num_jobs, -1, np.int32),
    }


def write_checkpoint(path: str, fingerprint: str, results: dict[str, np.ndarray]) -> None:
    """Atomically write finished results: temporary file, fsync, rename, fsync the directory."""
    directory = os.path.dirname(os.path.abspath(path))
    tmp = f"{path}.tmp"
    with open(tmp, "wb") as f:
        np.savez(f, fingerprint=np.array(fingerprint), **results)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def read_checkpoint(path: str, fingerprint: str, num_jobs: int) -> dict[str, np.ndarray]:
    """Finished results from a checkpoint (a leftover temporary file is ignored).

    Raises:
        ValueError: the checkpoint belongs to another grid (algorithm, jobs, seed, budget).
    """
    if not os.path.exists(path):
        return _empty_results(num_jobs)
    with np.load(path) as data:
        if str(data["fingerprint"]) != fingerprint:
            raise ValueError(f"checkpoint {path} was written for a different grid; remove it")
        return {name: data[name].copy() for name in _empty_results(0)}


def _device_tables(jobs: Jobs, pending: np.ndarray, num_devices: int) -> tuple[Table, np.ndarray]:
    """Round-robin split of the pending jobs over devices, padded to equal length."""
    # Longest jobs first (smallest ε, then δ) so the tail of the run holds short jobs; the
    # order never changes a job's result.
    pending = pending[np.lexsort((jobs.delta[pending], jobs.epsilon[pending]))]
    per_device = [pending[d::num_devices] for d in range(num_devices)]
    width = max(1, max(len(p) for p in per_device))
    order = np.full((num_devices, width), pending[0] if len(pending) else 0, np.int64)
    counts = np.zeros(num_devices, np.int32)
    for d, p in enumerate(per_device):
        order[d, : len(p)] = p
        counts[d] = len(p)
    flat = order.ravel()
    table = Table(
        instance=jax.tree_util.tree_map(lambda x: jnp.asarray(np.asarray(x)[flat]), jobs.instance),
        epsilon=jnp.asarray(jobs.epsilon[flat], jnp.float32),
        delta=jnp.asarray(jobs.delta[flat], jnp.float32),
        run=jnp.asarray(jobs.run[flat], jnp.int32),
        count=jnp.asarray(counts),
    )
    return table, order


def _initial_carry(alg, num_arms, seed, table, lanes_per_device, num_devices):
    width = table.run.shape[0] // num_devices
    first_device = jax.tree_util.tree_map(lambda x: x[:width], table)
    stream, state, params, instance = jax.vmap(
        lambda j: _load_job(alg, num_arms, jnp.int32(seed), first_device._replace(count=0), j)
    )(jnp.zeros(lanes_per_device * num_devices, jnp.int32))
    lanes = Lanes(
        job=jnp.full(lanes_per_device * num_devices, width, jnp.int32),
        stream=stream,
        state=state._replace(stopped=jnp.ones_like(state.stopped)),
        params=params,
        instance=instance,
    )
    size = num_devices * width
    outcome = Outcome(
        done=jnp.zeros(size, bool),
        tau=jnp.zeros(size, jnp.int32),
        stopped=jnp.zeros(size, bool),
        recommendation=jnp.full(size, -1, jnp.int32),
        rounds=jnp.full(size, -1, jnp.int32),
    )
    return lanes, outcome, jnp.zeros(num_devices, jnp.int32)


class _Progress:
    """One-line progress on stderr: jobs, samples, rate, ETA."""

    def __init__(self, total_jobs: int, enabled: bool) -> None:
        self.total, self.enabled, self.start = total_jobs, enabled, time.perf_counter()

    def update(self, done: int, samples: int, final: bool = False) -> None:
        if not self.enabled:
            return
        elapsed = time.perf_counter() - self.start
        rate = samples / max(elapsed, 1e-9)
        eta = elapsed / done * (self.total - done) if done else float("nan")
        end = "\n" if final else ""
        print(
            f"\r{done}/{self.total} jobs | {samples:.3g} samples | {rate:.3g} samples/s | "
            f"elapsed {elapsed:.0f}s | ETA {eta:.0f}s   ",
            end=end,
            file=sys.stderr,
            flush=True,
        )


def _collect(outcome: Outcome, order: np.ndarray, results: dict[str, np.ndarray]) -> None:
    """Copy newly finished jobs from the device buffers into the host results."""
    host = jax.device_get(outcome)
    done = np.asarray(host.done).reshape(order.shape)
    fresh = done & ~results["done"][order]
    if not fresh.any():
        return
    index = order[fresh]
    for name in ("tau", "stopped", "recommendation", "rounds"):
        results[name][index] = np.asarray(getattr(host, name)).reshape(order.shape)[fresh]
    results["done"][index] = True


def check_grid(alg: Any, jobs: Jobs, max_samples: int) -> np.ndarray:
    """Validate a grid before compiling; returns each job's best arm."""
    max_samples = _validate.check_max_samples(max_samples)
    if alg.unit_interval and not rewards_in_unit_interval(jobs.instance):
        raise ValueError(f"{alg.name} needs rewards in [0, 1]; got {type(jobs.instance).__name__}")
    means = np.asarray(jobs.instance.means, np.float64)
    _validate.check_num_arms(means.shape[-1])
    best = _validate.check_unique_best(means)
    alg.params(epsilon=jobs.epsilon, delta=jobs.delta)  # validates ε and δ
    return best


def run_grid(
    alg: Any,
    jobs: Jobs,
    *,
    seed: int = 0,
    max_samples: int = 10**9,
    lanes_per_device: int | None = None,
    refill_every: int = 16,
    chunk_steps: int = 1 << 15,
    device: str | None = None,
    checkpoint: str | None = None,
    resume: bool = False,
    checkpoint_every: float = 30.0,
    progress: bool = False,
    max_chunks: int | None = None,
    shrink_after: float = 5.0,
) -> GridResult:
    """Run every job of a grid to completion with lane refill; see the module docstring.

    Args:
        alg: an algorithm (static: selects the compiled program).
        jobs: the job list (`grid_jobs`).
        seed: master seed.
        max_samples: per-job sample budget; jobs that reach it are censored.
        lanes_per_device: lane pool size per device; default `default_lanes`.
        refill_every: steps between refills (a finished lane idles at most this long).
        chunk_steps: steps per compiled call between host updates.
        device: ``"cpu"``, ``"gpu"`` or None (JAX's default devices).
        checkpoint: path of the checkpoint file (None: no checkpoint).
        resume: continue from ``checkpoint`` (finished jobs are kept, others rerun exactly).
        checkpoint_every: seconds between checkpoint writes (one is always written at the end).
        progress: print a progress line on stderr.
        max_chunks: stop after this many chunks (for tests of interruption); unfinished jobs
            then have ``done`` False and are reported censored with τ = 0.
        shrink_after: compact the lane pool in the tail of the grid (see `_shrink_pool`) once
            the grid has run this many seconds, so that the recompilations pay for themselves
            (0: always; ``inf``: never).

    Returns:
        A `GridResult`.

    Example:
        >>> import jaxbai
        >>> jobs = grid_jobs(jaxbai.bernoulli([0.9, 0.5]), [1.0], runs=4)
        >>> res = run_grid(jaxbai.adap_tt(), jobs)
        >>> res.tau.shape
        (4,)
    """
    best = check_grid(alg, jobs, max_samples)
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)):
        raise ValueError(f"seed must be an integer, got {seed!r}")
    devices = select_devices(device)
    if lanes_per_device is None:
        lanes_per_device = default_lanes(devices[0].platform, -(-len(jobs) // len(devices)))
    for name, value in (
        ("lanes_per_device", lanes_per_device),
        ("refill_every", refill_every),
        ("chunk_steps", chunk_steps),
    ):
        if not isinstance(value, int) or value < 1:
            raise ValueError(f"{name} must be a positive integer, got {value!r}")
    start = time.perf_counter()
    fingerprint = _fingerprint(alg, jobs, seed, max_samples)
    if checkpoint and resume:
        results = read_checkpoint(checkpoint, fingerprint, len(jobs))
    else:
        results = _empty_results(len(jobs))
    pending = np.flatnonzero(~results["done"])
    lane_steps = samples = 0
    if len(pending):
        settings = _Settings(
            seed,
            max_samples,
            lanes_per_device,
            refill_every,
            chunk_steps,
            checkpoint,
            fingerprint,
            checkpoint_every,
            progress,
            max_chunks,
            shrink_after,
        )
        lane_steps, samples = _run_pending(alg, jobs, pending, results, devices, settings)
    if checkpoint:
        write_checkpoint(checkpoint, fingerprint, results)
    return _grid_result(results, best, jobs, max_samples, lane_steps, samples, start)


def _grid_result(
    results: dict[str, np.ndarray],
    best: np.ndarray,
    jobs: Jobs,
    max_samples: int,
    lane_steps: int,
    samples: int,
    start: float,
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
        jobs=jobs,
        lane_steps=lane_steps,
        samples=samples,
        wall_time=time.perf_counter() - start,
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
    progress: bool
    max_chunks: int | None
    shrink_after: float


def _shrink_pool(carry: tuple, table: Table, num_devices: int, sharding: Any) -> tuple[tuple, int]:
    """Tail compaction: once every job is assigned, move the busy lanes into a smaller pool.

    A `vmap` costs the same per step whatever the number of busy lanes, so the last long jobs of
    a grid would run at the speed of the full pool. When at most a quarter of the lanes are
    busy and nothing is pending, the busy lanes move (unchanged: a job's result depends only on
    its own state) into a pool of the next power of two ≥ 4; each smaller program compiles once.
    """
    lanes, outcome, next_job = carry
    lanes_per_device = lanes.job.shape[0] // num_devices
    width = table.run.shape[0] // num_devices
    host_job = np.asarray(jax.device_get(lanes.job)).reshape(num_devices, lanes_per_device)
    pending = np.asarray(jax.device_get(next_job)) < np.asarray(jax.device_get(table.count))
    busy = host_job < width
    needed = max(4, 1 << int(busy.sum(axis=1).max() - 1).bit_length())
    if pending.any() or needed > lanes_per_device // 4:
        return carry, lanes_per_device
    keep = np.argsort(~busy, axis=1, kind="stable")[:, :needed]
    index = (keep + lanes_per_device * np.arange(num_devices)[:, None]).ravel()
    host = jax.device_get(lanes)
    smaller = jax.tree_util.tree_map(lambda x: np.asarray(x)[index], host)
    return (jax.device_put(smaller, sharding), outcome, next_job), needed


def _run_pending(
    alg: Any,
    jobs: Jobs,
    pending: np.ndarray,
    results: dict[str, np.ndarray],
    devices: list[jax.Device],
    settings: _Settings,
) -> tuple[int, int]:
    """The host loop over compiled chunks; returns (lane-steps executed, samples finished)."""
    lanes_per_device = settings.lanes_per_device
    num_devices = len(devices)
    mesh = Mesh(np.array(devices), ("d",))
    num_arms = int(np.asarray(jobs.instance.means).shape[-1])
    table, order = _device_tables(jobs, pending, num_devices)
    sharding = jax.sharding.NamedSharding(mesh, PartitionSpec("d"))
    table = jax.device_put(table, sharding)
    carry = jax.device_put(
        _initial_carry(alg, num_arms, settings.seed, table, lanes_per_device, num_devices), sharding
    )
    bar = _Progress(len(jobs), settings.progress)
    already = results["done"].copy()
    lane_steps, chunks = 0, 0
    loop_start = last_write = time.perf_counter()
    while True:
        carry, iterations = _advance(
            alg,
            num_arms,
            settings.refill_every,
            mesh,
            jnp.int32(settings.max_samples),
            jnp.int32(settings.seed),
            jnp.int32(settings.chunk_steps),
            table,
            carry,
        )
        lane_steps += int(np.sum(jax.device_get(iterations))) * lanes_per_device
        chunks += 1
        if time.perf_counter() - loop_start >= settings.shrink_after:
            carry, lanes_per_device = _shrink_pool(carry, table, num_devices, sharding)
        _collect(carry[1], order, results)
        samples = int(results["tau"][results["done"] & ~already].sum())
        finished = bool(results["done"].all())
        bar.update(int(results["done"].sum()), samples, final=finished)
        if settings.checkpoint and time.perf_counter() - last_write > settings.checkpoint_every:
            write_checkpoint(settings.checkpoint, settings.fingerprint, results)
            last_write = time.perf_counter()
        if finished or (settings.max_chunks is not None and chunks >= settings.max_chunks):
            return lane_steps, samples


@partial(jax.jit, static_argnames=("alg", "num_arms"))
def _vmap_until_all_stop(alg, num_arms, max_samples, seed, table):
    def one(j):
        stream, state, params, instance = _load_job(alg, num_arms, seed, table, j)
        lane = Lanes(j, stream, state, params, instance)

        def running(ln: Lanes) -> jax.Array:
            return ~ln.state.stopped & (ln.state.n < max_samples)

        final = jax.lax.while_loop(running, partial(_step_lane, alg, max_samples), lane).state
        return final.n, final.stopped, final.recommendation, alg.rounds(final)

    return jax.vmap(one)(jnp.arange(table.run.shape[0]))


def run_vmap(alg: Any, jobs: Jobs, *, seed: int = 0, max_samples: int = 10**9) -> GridResult:
    """Baseline without lane refill: one `vmap` of a `while_loop` over all jobs, on one device.

    Every lane runs until the slowest job stops. Same keys and step as `run_grid`, so per-job
    results are identical; used by the benchmarks and tests as the reference.
    """
    best = check_grid(alg, jobs, max_samples)
    num_arms = int(np.asarray(jobs.instance.means).shape[-1])
    table, order = _device_tables(jobs, np.arange(len(jobs)), 1)
    start = time.perf_counter()
    outputs = jax.device_get(
        _vmap_until_all_stop(alg, num_arms, jnp.int32(max_samples), jnp.int32(seed), table)
    )
    results = _empty_results(len(jobs))
    for name, value in zip(("tau", "stopped", "recommendation", "rounds"), outputs, strict=True):
        results[name][order.ravel()] = value
    lane_steps = int(results["tau"].clip(max=max_samples).max()) * len(jobs)
    return _grid_result(
        results, best, jobs, max_samples, lane_steps, int(results["tau"].sum()), start
    )
