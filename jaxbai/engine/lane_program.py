"""The on-device lane program: a fixed pool of lanes per device, refilled as jobs finish.

A figure grid mixes runs that stop after 10³ samples with runs that need 10⁸, so a plain `vmap`
of a `while_loop` (`vmap_until_all_stop`, which runs until its slowest member stops) leaves
most lanes idle. Instead each device keeps a fixed pool of lanes (`Lanes`) over its own jobs
(`Table`); every ``refill_every`` steps, each lane whose job has stopped (or hit
``max_samples``) writes its result into the job buffers (`Outcome`) and loads the next pending
job (`refill`). Step n of a job uses ``fold_in(stream_key, n)`` with the job's own stream
(`load_job`, `jaxbai.engine.job_key`), so a lane's trajectory does not depend on when, where
or next to which other jobs it runs.

`advance` runs one chunk of this loop on every device under `jax.shard_map` (jobs are split
over devices round-robin by `device_tables`; no communication between devices inside a chunk).
Between chunks the host copies finished jobs out (`collect`) and, in the tail of a grid,
compacts the busy lanes into a smaller pool (`shrink_pool`).
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental.layout import Layout, with_layout_constraint
from jax.sharding import Mesh, PartitionSpec

from jaxbai.arrays import tree_where
from jaxbai.base import Algorithm, Budgeted, Instance
from jaxbai.checks import COUNT_MAX
from jaxbai.engine._shared import SharedDeltas, in_lanes, marked_stopped, records
from jaxbai.engine.fused_kernel import fused_steps
from jaxbai.engine.jobs import Jobs, fold_in_step, job_key

__all__ = [
    "FEW_LOADS",
    "SLOT_STEP",
    "Lanes",
    "Outcome",
    "Table",
    "advance",
    "block_step",
    "collect",
    "device_tables",
    "initial_carry",
    "load_job",
    "refill",
    "shrink_pool",
    "step_lane",
    "table_slots",
    "tree_where_lanes",
    "vmap_until_all_stop",
]


class Lanes(NamedTuple):
    """The lane pool of one device; leaves have leading dim L (lanes)."""

    job: jax.Array
    stream: jax.Array
    state: Any
    params: Any
    instance: Instance


class Outcome(NamedTuple):
    """Per-job result buffers of one device; leaves have leading dim J_d (then D, one per δ,
    for trajectories shared by D risks, docs/semantics.md §31)."""

    done: jax.Array
    tau: jax.Array
    stopped: jax.Array
    recommendation: jax.Array
    rounds: jax.Array
    counts: jax.Array  # (J_d[, D], K): the final N_a


class Table(NamedTuple):
    """The jobs of one device (for shared trajectories, ``delta`` is ``(J_d, D)``): ``J_d``
    slots (`table_slots`), of which the first ``count`` hold jobs; `refill` loads no slot past
    them."""

    instance: Instance
    epsilon: jax.Array | np.ndarray
    delta: jax.Array | np.ndarray
    run: jax.Array | np.ndarray
    count: jax.Array | np.ndarray


FEW_LOADS = 16
"""`refill` loads jobs this many at a time. In W1 (τ ≈ 10⁴, 256 lanes, a refill every 16
steps) a refill finds 0.4 finished lanes on average; loading only a few jobs measured
1.03–1.18× the samples/s of loading every lane. Jobs so short that most lanes finish between
two refills (τ ≈ 10) take many rounds: 0.7× the samples/s of loading every lane at once."""


def load_job(alg: Algorithm, num_arms: int, seed: jax.Array, table: Table, j: jax.Array):
    """(stream key data, initial state, params, instance) of local job ``j`` (``table`` as
    `device_tables` returns it, NumPy arrays, or on a device)."""
    table = jax.tree_util.tree_map(jnp.asarray, table)
    j = jnp.minimum(j, table.run.shape[0] - 1)
    eps, dlt = table.epsilon[j], table.delta[j]
    shared = isinstance(alg, SharedDeltas)
    master = jax.random.key(seed, impl="threefry2x32")
    key = job_key(master, table.run[j], eps, None if shared else dlt)
    init_key, stream = jax.random.split(key)
    params = alg.params(epsilon=eps, delta=dlt)
    instance = jax.tree_util.tree_map(lambda x: x[j], table.instance)
    state = alg.init(init_key, params, num_arms)
    return jax.random.key_data(stream), state, params, instance


def _write_results(alg: Algorithm, lanes: Lanes, outcome: Outcome, finished, num_jobs) -> Outcome:
    """Scatter the results of the finished lanes into the job buffers."""
    slot = jnp.where(finished, lanes.job, num_jobs)

    def write(buffer: jax.Array, value: jax.Array) -> jax.Array:
        return buffer.at[slot].set(value, mode="drop")

    values = jax.vmap(partial(records, alg))(lanes.state)
    return Outcome(write(outcome.done, True), *map(write, outcome[1:], values))


def refill(alg: Algorithm, num_arms, max_samples, seed, table, lanes, outcome, next_job):
    """Write finished lanes' results, then load pending jobs into idle lanes.

    Results are written under `lax.cond` and jobs loaded in a loop of as many rounds as
    needed, so a refill with nothing to do costs a reduction. A round loads `FEW_LOADS` jobs
    (`load_job` of those jobs only) and moves them to their lanes: a refill in the middle
    of a grid usually takes one round, the first fill of the pool one per `FEW_LOADS` lanes.
    Each assigned lane gets exactly `load_job` of its job. (One loading program, not one for
    a few jobs and one for the whole pool: `advance` compiles in about 17 % less time.)
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
    first = next_job
    candidate = first + jnp.cumsum(idle) - 1  # the i-th idle lane gets job first + i
    assign = idle & (candidate < table.count)
    loads = jnp.sum(assign)
    lanes = lanes._replace(job=jnp.where(assign, candidate, jnp.where(idle, num_jobs, lanes.job)))
    few = min(FEW_LOADS, lanes.job.shape[0])
    rank = candidate - first

    def load_round(r: jax.Array, lanes: Lanes) -> Lanes:
        loaded = jax.vmap(lambda j: load_job(alg, num_arms, seed, table, j))(
            first + r * few + jnp.arange(few)
        )
        rows = jnp.clip(rank - r * few, 0, few - 1)  # the loaded job of each lane
        moved = jax.tree_util.tree_map(lambda x: x[rows], loaded)
        return tree_where_lanes(assign & (rank // few == r), Lanes(lanes.job, *moved), lanes)

    lanes = jax.lax.fori_loop(0, (loads + few - 1) // few, load_round, lanes)
    return lanes, outcome, next_job + loads


def tree_where_lanes(mask: jax.Array, on_true: Any, on_false: Any) -> Any:
    """Per-lane select between two pytrees whose leaves have leading dim L."""

    def select(a: jax.Array, b: jax.Array) -> jax.Array:
        return jnp.where(mask.reshape(mask.shape + (1,) * (a.ndim - 1)), a, b)

    return jax.tree_util.tree_map(select, on_true, on_false)


def step_lane(
    alg: Algorithm, max_samples: jax.Array, lane: Lanes, key: jax.Array | None = None
) -> Lanes:
    """One step of one lane's job; a no-op once it has drawn ``max_samples`` samples.

    The step's key is ``fold_in(stream, n)``: computed here by `fold_in_step` (a typed key) if
    ``key`` is None, else ``key`` holds its uint32 words (`block_step`). A budgeted algorithm
    (per-episode draws) gets the stream itself and keeps to the budget on its own.
    """
    if isinstance(alg, Budgeted):
        stream = jax.random.wrap_key_data(lane.stream, impl="threefry2x32")
        budgeted = alg.budgeted_step(stream, lane.state, lane.instance, lane.params, max_samples)
        return lane._replace(state=budgeted)
    if key is None:
        data = fold_in_step(lane.stream, lane.state.n)
        key = jax.random.wrap_key_data(data, impl="threefry2x32")
    stepped = alg.step(key, lane.state, lane.instance, lane.params)
    return lane._replace(state=tree_where(lane.state.n < max_samples, stepped, lane.state))


def block_step(alg: Algorithm, lanes: Lanes, max_samples: jax.Array) -> Lanes:
    """`step_lane` of every lane, each with its own budget ``max_samples`` ``(L,)``: the
    iteration of the fused kernel (`jaxbai.engine.fused_kernel.BlockStep`).

    The keys are uint32 words (Triton has no key types), hashed for the whole pool at once so
    that their two words stack on the last axis (a vmapped stack stacks on the first, which
    Triton cannot lower; a stack on the last measured 3-4 times slower in the XLA step)."""
    keys = fold_in_step(lanes.stream, lanes.state.n)
    return jax.vmap(partial(step_lane, alg))(max_samples, lanes, keys)


def lanes_minor(lanes: Lanes) -> Lanes:
    """The same lanes, each array laid out in memory with the lane axis innermost.

    A step works on ``(L, K)`` arrays with K small (arms): XLA on CPU vectorises the innermost
    dimension, so with the lanes innermost the per-arm arithmetic and the reductions over arms
    run as vector loops over lanes instead of scalar loops of length K. Values are unchanged.
    """

    def constrain(x: jax.Array) -> jax.Array:
        if x.ndim < 2:
            return x
        return with_layout_constraint(x, Layout(major_to_minor=(*range(1, x.ndim), 0)))

    return jax.tree_util.tree_map(constrain, lanes)


def lanes_step(alg: Algorithm, max_samples: jax.Array, layout: Callable[[Lanes], Lanes]):
    """One engine step of every lane (lanes → lanes), each result laid out by ``layout``.

    A budgeted algorithm's `samples_per_step` planned pulls run as a loop over the whole pool,
    so that every pull keeps the pool's layout (a lane waiting for its episode end idles);
    then the episodes end (`PerEpisode.settle`). (Ending the loop early once most lanes wait
    measured slower: the episode ends, a Binomial draw each, then come too often.)
    """
    if not isinstance(alg, Budgeted):
        return lambda lanes: layout(jax.vmap(partial(step_lane, alg, max_samples))(lanes))
    pull = jax.vmap(lambda s, p: alg.planned_pull(s, p, max_samples))

    def settle(lane: Lanes) -> Lanes:
        stream = jax.random.wrap_key_data(lane.stream, impl="threefry2x32")
        state = alg.settle(stream, lane.state, lane.instance, lane.params, max_samples)
        return lane._replace(state=state)

    def one_pull(_: int, ln: Lanes) -> Lanes:
        return layout(ln._replace(state=pull(ln.state, ln.params)))

    def step(lanes: Lanes) -> Lanes:
        lanes = jax.lax.fori_loop(0, alg.samples_per_step, one_pull, lanes)
        return layout(jax.vmap(settle)(lanes))

    return step


def _flush_pool(alg: SharedDeltas, lanes: Lanes) -> Lanes:
    """`SharedDeltas.flush` of every lane, if any is held (W5 of `experiments.bench`: recording
    here rather than in every step, where each step selected the whole record)."""

    def flush() -> Lanes:
        return lanes._replace(state=jax.vmap(alg.flush)(lanes.state, lanes.params))

    return jax.lax.cond(jnp.any(lanes.state.held), flush, lambda: lanes)


def _advance_device(static: tuple, max_samples, seed, iterations, table, carry):
    """Run up to ``iterations`` steps of one device's lane pool (inside `shard_map`);
    ``static`` is (alg, num_arms, refill_every, platform, kernel).

    Before each refill, the trajectories shared by several δ that are held are recorded
    (`_flush_pool`: their steps leave it to here, `SharedDeltas.deferred`). Between refills:
    ``refill_every`` iterations of the XLA lane step, which on a CPU keep the
    lanes innermost (`lanes_minor`), or with ``kernel="fused"`` one `fused_steps` call
    (interpret mode on a CPU).
    """
    alg, num_arms, refill_every, platform, kernel = static
    alg = in_lanes(alg)  # a deferred SharedDeltas is flushed below, before each refill
    table = table._replace(count=table.count[0])
    lanes, outcome, next_job = carry
    next_job = next_job[0]
    num_jobs = table.run.shape[0]

    def running(c):
        it, lanes, _, next_job = c
        return (it < iterations) & (jnp.any(lanes.job < num_jobs) | (next_job < table.count))

    def body(c):
        it, lanes, outcome, next_job = c
        if isinstance(alg, SharedDeltas) and alg.deferred:
            lanes = _flush_pool(alg, lanes)
        lanes, outcome, next_job = refill(
            alg, num_arms, max_samples, seed, table, lanes, outcome, next_job
        )
        if kernel == "fused":
            step = partial(block_step, alg)
            lanes = fused_steps(step, max_samples, refill_every, lanes, platform == "cpu")
        else:
            layout = lanes_minor if platform == "cpu" else lambda ln: ln
            step = lanes_step(alg, max_samples, layout)
            lanes = jax.lax.fori_loop(0, refill_every, lambda _, ln: step(ln), lanes)
        return it + refill_every, lanes, outcome, next_job

    it, lanes, outcome, next_job = jax.lax.while_loop(
        running, body, (jnp.int32(0), lanes, outcome, next_job)
    )
    return (lanes, outcome, next_job[None]), it[None]


@partial(jax.jit, static_argnames=("alg", "num_arms", "refill_every", "mesh", "kernel"))
def advance(
    alg: Algorithm,
    num_arms,
    refill_every,
    mesh: Mesh,
    max_samples,
    seed,
    iterations,
    table,
    carry,
    kernel: str = "xla",
):
    """One chunk: up to ``iterations`` steps of every device's lane pool.

    Returns the new carry (lanes, outcome, next job per device) and the steps each device ran.
    Only ``alg``, ``num_arms``, ``refill_every``, ``mesh`` and ``kernel`` (``"xla"`` or
    ``"fused"``, `jaxbai.engine.fused_kernel`) are static: new ε, δ, seeds or budgets reuse the
    compiled program.
    """
    spec = PartitionSpec("d")
    platform = mesh.devices.flat[0].platform
    static = (alg, num_arms, refill_every, platform, kernel)
    fn = partial(_advance_device, static, max_samples, seed, iterations)
    return jax.shard_map(
        fn, mesh=mesh, in_specs=(spec, spec), out_specs=(spec, spec), check_vma=False
    )(table, carry)


@partial(jax.jit, static_argnames=("alg", "num_arms"))
def vmap_until_all_stop(alg: Algorithm, num_arms, max_samples, seed, table):
    """Every job of ``table`` in its own lane, all run until the slowest stops (no refill).

    Returns per-job (τ, stopped, recommendation, rounds, counts); same keys and step as
    `advance`.
    """

    def one(j):
        stream, state, params, instance = load_job(alg, num_arms, seed, table, j)
        lane = Lanes(j, stream, state, params, instance)

        def running(ln: Lanes) -> jax.Array:
            return ~ln.state.stopped & (ln.state.n < max_samples)

        final = jax.lax.while_loop(running, partial(step_lane, alg, max_samples), lane).state
        return records(alg, final)

    return jax.vmap(one)(jnp.arange(table.run.shape[0]))


# ----------------------------------------------------------------------------- host helpers
SLOT_STEP = 4096
"""Tables of more slots than this per device grow in steps of it (see `table_slots`)."""


def table_slots(jobs: int) -> int:
    """Slots per device of a table holding ``jobs``: the next power of two, or above
    `SLOT_STEP` the next multiple of it.

    A table's length is a shape of the compiled chunk program, so grids whose per-device job
    counts round to the same number of slots share one program: a rerun with a few more runs,
    a resumed grid's remaining jobs, the grids of a test suite. The empty slots are never
    loaded (``count``) and cost their memory only: at most as much again below `SLOT_STEP`,
    less than `SLOT_STEP` slots above it.

    Examples:
        >>> [table_slots(n) for n in (1, 3, 4, 5, 1000, 4097, 10_000)]
        [1, 4, 4, 8, 1024, 8192, 12288]
    """
    if jobs <= SLOT_STEP:
        return 1 << max(0, jobs - 1).bit_length()
    return min(-(-jobs // SLOT_STEP) * SLOT_STEP, COUNT_MAX)  # a slot number is an int32


def device_tables(
    jobs: Jobs, pending: np.ndarray, num_devices: int, *, pad: bool = True, min_slots: int = 1
) -> tuple[Table, np.ndarray]:
    """Round-robin split of the pending jobs over devices, padded to equal length.

    ``pending`` holds job indices ``(P,)``, or ``(P, D)`` for trajectories shared by D risks
    (each row one trajectory's jobs, smallest δ first; `jaxbai.engine._shared`). Returns the
    stacked tables (leading dim ``num_devices * width``) and ``order``, shape
    ``(num_devices, width)`` (then D): the global job index of each local slot. ``width`` is
    `table_slots` of the longest device's job count or of ``min_slots``, whichever is larger,
    or with ``pad=False`` that count itself (for a program that runs every slot,
    `vmap_until_all_stop`); a slot past a device's ``count`` repeats the first pending job and
    is never run by `advance`. Its arrays are NumPy's (``jax.device_put`` compiles nothing).
    """
    # Longest jobs first (smallest ε, then δ) so the tail of the run holds short jobs; the
    # order never changes a job's result.
    lead = pending if pending.ndim == 1 else pending[:, 0]
    pending = pending[np.lexsort((jobs.delta[lead], jobs.epsilon[lead]))]
    per_device = [pending[d::num_devices] for d in range(num_devices)]
    width = max(1, max(len(p) for p in per_device))
    width = table_slots(max(width, min_slots)) if pad else width
    order = np.zeros((num_devices, width, *pending.shape[1:]), np.int64)
    order[...] = pending[0] if len(pending) else 0
    counts = np.zeros(num_devices, np.int32)
    for d, p in enumerate(per_device):
        order[d, : len(p)] = p
        counts[d] = len(p)
    flat = order.reshape(num_devices * width, -1)
    first = flat[:, 0]
    delta = jobs.delta[flat if pending.ndim > 1 else first]
    table = Table(
        instance=jax.tree_util.tree_map(lambda x: np.asarray(x)[first], jobs.instance),
        epsilon=np.asarray(jobs.epsilon[first], np.float32),
        delta=np.asarray(delta, np.float32),
        run=np.asarray(jobs.run[first], np.int32),
        count=counts,
    )
    return table, order


@partial(jax.jit, static_argnames=("alg", "num_arms"))
def _first_job(alg: Algorithm, num_arms: int, seed: jax.Array, table: Table):
    """`load_job` of the table's first slot, its state marked stopped."""
    stream, state, params, instance = load_job(alg, num_arms, seed, table, jnp.int32(0))
    return stream, marked_stopped(state), params, instance


def initial_carry(
    alg: Algorithm,
    num_arms: int,
    seed: np.uint32 | jax.Array,
    table: Table,
    lanes_per_device: int,
    num_devices: int,
) -> tuple[Lanes, Outcome, np.ndarray]:
    """Empty lanes (no job, marked stopped), empty result buffers, next job 0 per device, as
    NumPy arrays; ``table`` as `device_tables` returns it.

    Every lane holds a copy of the first job (a valid state that `refill` replaces), loaded by
    a small program that depends on the algorithm and one slot's shapes only (arms, δ per
    trajectory); the copies and buffers, whose shapes change with every table and pool, are
    made on the host, so every leaf of a state must be a numeric array (no typed PRNG key;
    `shrink_pool` copies the lanes on the host too)."""
    width = table.run.shape[0] // num_devices
    first_slot = jax.tree_util.tree_map(lambda x: np.asarray(x)[:1], table)
    one = jax.device_get(_first_job(alg, num_arms, np.uint32(seed), first_slot))
    size = lanes_per_device * num_devices
    copies = partial(jax.tree_util.tree_map, lambda x: np.repeat(np.asarray(x)[None], size, 0))
    stream, state, params, instance = map(copies, one)
    lanes = Lanes(np.full(size, width, np.int32), stream, state, params, instance)
    shapes = jax.eval_shape(partial(records, alg), one[1])
    empty = (0, False, -1, -1, 0)  # τ, stopped, â, rounds, counts of a job not yet finished
    slots = table.run.shape[0]
    buffers = (np.full((slots, *s.shape), e, s.dtype) for s, e in zip(shapes, empty, strict=True))
    outcome = Outcome(np.zeros(slots, bool), *buffers)
    return lanes, outcome, np.zeros(num_devices, np.int32)


def collect(outcome: Outcome, order: np.ndarray, results: dict[str, np.ndarray]) -> None:
    """Copy newly finished jobs (every job of a finished trajectory) from the device buffers
    into the host results; ``order`` as `device_tables` returns it."""
    host = jax.device_get(outcome)
    slots = order.reshape((*order.shape[:2], -1))  # (devices, width, jobs per slot)
    done = np.asarray(host.done).reshape(slots.shape[:2])
    fresh = done & ~results["done"][slots].all(axis=-1)
    if not fresh.any():
        return
    index = slots[fresh]
    for name in ("tau", "stopped", "recommendation", "rounds", "counts"):
        value = np.asarray(getattr(host, name))
        if name == "counts":  # the real arms (the fused kernel pads them)
            value = value[..., : results["counts"].shape[-1]]
        per_job = value.shape[1 + order.ndim - 2 :]
        results[name][index] = value.reshape(slots.shape + per_job)[fresh]
    results["done"][index] = True


def shrink_pool(
    carry: tuple, table: Table, num_devices: int, sharding: jax.sharding.Sharding
) -> tuple[tuple, int]:
    """Tail compaction: once every job is assigned, move the busy lanes into a smaller pool.

    A `vmap` costs the same per step whatever the number of busy lanes, so the last long jobs of
    a grid would run at the speed of the full pool. When at most a quarter of the lanes are
    busy and nothing is pending, the busy lanes move (unchanged: a job's result depends only on
    its own state) into a pool of the next power of two ≥ 4; each smaller program compiles once.
    Returns the (possibly) compacted carry and the lanes per device.
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
